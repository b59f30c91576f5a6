"""The guide's Python tour runs as written: the block after "A tour:" in docs/guide/python.md is
executed in a scratch directory, with a scratch build cache. (README.md's own program, in C++,
is examples/standalone: the package test builds and runs it, scripts/check-docs.sh keeps the
README's copy equal to it.)"""

import os
import re
import subprocess
import sys

import chiprt

GUIDE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "guide", "python.md")


def tour_source() -> str:
    with open(GUIDE, encoding="utf-8") as guide:
        text = guide.read()
    match = re.search(r"A tour:.*?```python\n(.*?)```", text, re.S)
    assert match, "docs/guide/python.md has no ```python tour block after 'A tour:'"
    return match.group(1)


def test_guide_tour_runs(tmp_path):
    script = tmp_path / "tour.py"
    script.write_text(tour_source())
    # The chiprt under test, wherever the caller's PYTHONPATH (maybe relative) found it.
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(chiprt.__file__)))
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=package_parent)
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 tasks" in result.stdout
    report = re.search(r"open (\S+/report\.html)", result.stdout)
    assert report and (tmp_path / report.group(1)).is_file(), result.stdout
