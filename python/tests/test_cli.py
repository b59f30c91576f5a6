"""python3 -m chiprt mirrors the chiprt CLI: list, run EX [--case ...], its PASS line and its exit
codes (0 pass, 1 fail, 2 usage error). Runs the module in a subprocess of this interpreter."""

import json
import os
import subprocess
import sys

import pytest

import chiprt
from chiprt import examples


def chiprt_cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "chiprt", *args], capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ))


def test_list_prints_every_example_and_case():
    result = chiprt_cli("list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for example in examples.all_examples():
        assert example.name in lines
        assert f"    {example.description}" in lines
        for case in example.cases:
            assert any(line.startswith(f"    case {case.name}") and
                       line.rstrip().split("  (default)")[0].endswith(case.params_text())
                       for line in lines), f"{example.name}/{case.name}"
    assert "    case default  elements=16384 chunk=4096  (default)" in lines


@pytest.mark.parametrize("runtime", ["host_build_graph", "tensormap_ringbuffer"])
def test_run_vector_example_passes(runtime):
    result = chiprt_cli("run", "vector_example", "--runtime", runtime)
    assert result.returncode == 0, result.stdout + result.stderr
    pass_lines = [line for line in result.stdout.splitlines() if line.startswith("PASS")]
    assert len(pass_lines) == 1, result.stdout
    assert pass_lines[0].startswith("PASS vector_example/default: max abs error ")
    assert "(tolerance 1e-05), 20 kernel tasks" in pass_lines[0]
    assert f"runtime {runtime}," in result.stdout
    assert "host total" in result.stdout


def test_run_with_case_and_rounds_prints_the_rounds_table():
    result = chiprt_cli("run", "bgemm", "--case", "small", "--rounds", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS bgemm/small:")
    assert "timing (us) over 2 rounds" in result.stdout


def test_unknown_example_is_a_usage_error_naming_the_valid_ones():
    result = chiprt_cli("run", "no_such_example")
    assert result.returncode == 2
    assert "unknown example 'no_such_example'" in result.stderr
    assert examples.example_names() in result.stderr
    assert "PASS" not in result.stdout


def test_unknown_case_is_a_usage_error_naming_the_valid_ones():
    result = chiprt_cli("run", "bgemm", "--case", "no_such_case")
    assert result.returncode == 2
    assert "unknown case 'no_such_case' for example 'bgemm'" in result.stderr
    assert "small, medium, large, bench" in result.stderr


@pytest.mark.parametrize("args", [
    ["run", "vector_example", "--runtime", "no_such_runtime"],
    ["run", "vector_example", "--rounds", "0"],
    ["run", "vector_example", "--clusters", "0"],  # as the C++ CLI: at least 1
    ["run", "vector_example", "--clusters", "99999999999999999999"],
    ["run", "vector_example", "--diag", "all"],  # --diag needs --diag-dir
    ["no_such_command"],
    [],
])
def test_bad_options_are_usage_errors(args):
    result = chiprt_cli(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr


def test_diagnostics_go_to_the_given_directory(tmp_path):
    result = chiprt_cli("run", "vector_example", "--case", "small", "--diag", "tasks",
                        "--diag-dir", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS vector_example/small:")
    assert any(tmp_path.iterdir()), "no diagnostics run directory written"


def test_option_values_the_runtime_rejects_are_usage_errors(tmp_path):
    result = chiprt_cli("run", "vector_example", "--diag", "no_such_switch", "--diag-dir",
                        str(tmp_path))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no_such_switch" in result.stderr
    assert not any(tmp_path.iterdir())


def test_ring_options_reach_the_ring_runtime(tmp_path):
    result = chiprt_cli("run", "paged_attention", "--runtime", "tensormap_ringbuffer",
                        "--ring-window", "64", "--ring-heap", "8192", "--ring-dep-pool", "64",
                        "--diag", "scopes", "--diag-dir", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS paged_attention/small")
    [run_dir] = [entry for entry in tmp_path.iterdir() if entry.name.startswith("run-")]
    scopes = [json.loads(line) for line in (run_dir / "scope_stats.jsonl").read_text().splitlines()
              if line.strip()]
    assert scopes and all((scope["task_window_capacity"], scope["heap_capacity"],
                           scope["dep_pool_capacity"]) == (64, 8192, 64) for scope in scopes)
    bad = chiprt_cli("run", "vector_example", "--runtime", "tensormap_ringbuffer",
                     "--ring-window", "20")
    assert bad.returncode == 2 and "power of two" in bad.stderr, bad.stdout + bad.stderr


@pytest.mark.parametrize("cores_on", ["aicpu", "executors"])
def test_isolated_device_and_core_placement_run_the_example(cores_on):
    result = chiprt_cli("run", "vector_example", "--isolated", "--cores-on", cores_on)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS vector_example/default")


def test_an_invalid_configuration_is_a_usage_error():
    # Refused by the runtime's validation (InvalidConfig), like a bad option: exit 2.
    result = subprocess.run([sys.executable, "-m", "chiprt", "run", "vector_example", "--runtime",
                             "tensormap_ringbuffer"], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, CHIPRT_RING_DEP_POOL="10"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "[InvalidConfig]" in result.stderr and "CHIPRT_RING_DEP_POOL" in result.stderr


def test_run_states_dependency_only_tasks_as_the_cpp_cli_does():
    result = chiprt_cli("run", "paged_attention")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("PASS paged_attention/small:")
    assert "76 kernel tasks + 4 dependency-only" in result.stdout.splitlines()[0]


def test_format_task_count_is_the_phrase_of_every_surface():
    assert chiprt.format_task_count(1024, 64) == "1,024 kernel tasks + 64 dependency-only"
    assert chiprt.format_task_count(20) == "20 kernel tasks"
