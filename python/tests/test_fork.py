"""os.fork() with a live Worker: in the child the inherited Worker is inert (every call raises
StateError InheritedWorker, its RunHandles too) and the child's interpreter exits without waiting
for the parent's runs or touching the parent's device; a Worker created in the child works; the
parent's Worker works on. Each case runs in a subprocess (a real interpreter exit, atexit
included) that forks and waits for its child with a bound, killing it rather than hanging."""

import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import os, sys, time
sys.path.insert(0, sys.argv[4])
import chiprt
from conftest import VectorRun, vector_callable

mode, isolation, child = sys.argv[1:4]
w = chiprt.Worker(clusters=2, aicpu_threads=2, isolation=isolation)
w.register_callable(0, vector_callable())
run = VectorRun(w)
handle = w.submit(0, run.args) if mode == "submit" else None
if handle is None:
    w.run(0, run.args)

pid = os.fork()
if pid == 0:
    if child == "touch":
        failures = []
        calls = [("run", lambda: w.run(0, run.args)), ("submit", lambda: w.submit(0, run.args)),
                 ("malloc", lambda: w.malloc(64)), ("download", lambda: w.download(run.tf)),
                 ("upload", lambda: w.upload(run.a)), ("runs_in_flight", lambda: w.runs_in_flight),
                 ("has_callable", lambda: w.has_callable(0)), ("reset", w.reset), ("close", w.close)]
        if handle is not None:
            calls += [("RunHandle.wait", handle.wait), ("RunHandle.ready", handle.ready)]
        for name, call in calls:
            try:
                call()
                failures.append(name + " did not raise")
            except chiprt.StateError as e:
                if e.name != "InheritedWorker":
                    failures.append(name + ": " + str(e))
        with chiprt.Worker(clusters=2, aicpu_threads=2, isolation=isolation) as fresh:
            fresh.register_callable(0, vector_callable())
            mine = VectorRun(fresh)
            fresh.run(0, mine.args)
            mine.check(fresh)
        if failures:
            print("child:", failures, file=sys.stderr)
            sys.exit(1)
    sys.exit(0)  # an ordinary exit: atexit closes every live Worker, the inherited one included

deadline = time.monotonic() + 60
while True:
    got, status = os.waitpid(pid, os.WNOHANG)
    if got == pid:
        break
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("the child did not exit within 60 s", file=sys.stderr)
        sys.exit(3)
    time.sleep(0.01)
if handle is not None:
    handle.wait()
run.check(w)
w.run(0, run.args)  # the parent's Worker (and device) still work
run.check(w)
w.close()
code = os.waitstatus_to_exitcode(status)
if code != 0:
    print("the child exited with", code, file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize(
    "mode, isolation, child",
    [
        ("submit", "none", "exit"),  # hung at interpreter exit
        ("submit", "none", "touch"),  # hung in the first call
        ("sync", "process", "exit"),  # closing the inherited Worker shut the parent's device down
        ("submit", "process", "touch"),
    ],
)
def test_forked_child_with_an_inherited_worker(mode, isolation, child):
    if mode == "submit" and "libasan" in os.environ.get("LD_PRELOAD", ""):
        # GCC 12's AddressSanitizer does not make its allocator fork-safe: a fork while another
        # thread allocates (the parent's run in flight) leaves its lock held in the child, whose
        # first allocation then hangs inside libasan (seen: operator new in the child). The plain
        # build runs these cases; the sync case (no run in flight) runs here too.
        pytest.skip("ASan's allocator is not fork-safe with a run in flight in the parent")
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode, isolation, child, tests_dir],
        capture_output=True, text=True, timeout=180,
    )
    assert result.returncode == 0, result.stderr[-4000:]
