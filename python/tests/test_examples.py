"""Every example and every case runs from Python on the simulated chip and matches its numpy
reference, on both runtime variants (the Python side of tests/scene/examples_scene_test.cpp).
Large cases run on one variant only to keep the suite quick.

Run with Debian's interpreter against a build tree, e.g.
    PYTHONPATH=build/py/python CHIPRT_CHIP_OBJECT_DIR=build/py/chip_objects \\
        /usr/bin/python3 -m pytest -q python/tests/test_examples.py
"""

import json
import os

import numpy as np
import pytest

import chiprt
from chiprt import examples

RUNTIMES = ("host_build_graph", "tensormap_ringbuffer")

# The C++ registry (examples/*/host/*.cpp): names, cases in order, parameters and large flags.
EXPECTED_REGISTRY = {
    "vector_example": [
        ("default", "elements=16384 chunk=4096", False),
        ("small", "elements=1024 chunk=1024", False),
    ],
    "bgemm": [
        ("small", "tiles_m=4 tiles_n=4 tiles_k=4 tile=16", False),
        ("medium", "tiles_m=8 tiles_n=8 tiles_k=8 tile=16", False),
        ("large", "tiles_m=16 tiles_n=16 tiles_k=8 tile=8", True),
        ("bench", "tiles_m=8 tiles_n=8 tiles_k=4 tile=64", True),
    ],
    "wavefront": [
        ("default", "tiles_r=32 tiles_c=32 tile=8", False),
        ("small", "tiles_r=8 tiles_c=8 tile=8", False),
        ("large", "tiles_r=64 tiles_c=64 tile=8", True),
    ],
    "paged_attention": [
        ("small", "batch=2 heads=2 q_rows=2 head_dim=16 block_size=8 max_seq_len=37 manual=0 "
                  "ring_window=0 ring_heap=0 ring_dep_pool=0", False),
        ("medium", "batch=4 heads=4 q_rows=4 head_dim=32 block_size=16 max_seq_len=100 manual=0 "
                   "ring_window=0 ring_heap=0 ring_dep_pool=0", False),
        ("large", "batch=8 heads=8 q_rows=4 head_dim=64 block_size=16 max_seq_len=300 manual=0 "
                  "ring_window=0 ring_heap=0 ring_dep_pool=0", True),
        ("bench", "batch=4 heads=4 q_rows=32 head_dim=128 block_size=128 max_seq_len=1024 "
                  "manual=0 ring_window=0 ring_heap=0 ring_dep_pool=0", True),
        ("tiny_rings", "batch=3 heads=2 q_rows=4 head_dim=32 block_size=16 max_seq_len=150 "
                       "manual=0 ring_window=64 ring_heap=8192 ring_dep_pool=64", False),
        ("manual", "batch=3 heads=2 q_rows=4 head_dim=32 block_size=16 max_seq_len=70 manual=1 "
                   "ring_window=0 ring_heap=0 ring_dep_pool=0", False),
        ("manual_tiny_rings", "batch=3 heads=2 q_rows=4 head_dim=32 block_size=16 "
                              "max_seq_len=150 manual=1 ring_window=64 ring_heap=8192 "
                              "ring_dep_pool=64", False),
    ],
}


def scene_params():
    params = []
    for runtime in RUNTIMES:
        for example in examples.all_examples():
            for case in example.cases:
                params.append(pytest.param(example, case, runtime,
                                           id=f"{runtime}-{example.name}-{case.name}"))
    return params


@pytest.fixture
def worker():
    with chiprt.Worker() as w:
        yield w


@pytest.mark.parametrize("example,case,runtime", scene_params())
def test_example_matches_reference(worker, example, case, runtime):
    outcome = example.run(worker, case, runtime=runtime)

    assert outcome.passed, outcome.message
    assert outcome.max_abs_error <= outcome.tolerance
    assert outcome.kernel_tasks > 0
    assert outcome.task_count >= outcome.kernel_tasks
    assert outcome.task_count == outcome.report.task_count
    # The example unregistered its callable and freed its buffers.
    assert not worker.has_callable(0)


def test_registry_matches_the_cpp_registry():
    assert examples.example_names() == "vector_example, bgemm, wavefront, paged_attention"
    for example in examples.all_examples():
        assert examples.find_example(example.name) is example
        assert example.description
        got = [(c.name, c.params_text(), c.large) for c in example.cases]
        assert got == EXPECTED_REGISTRY[example.name], example.name
        for case in example.cases:
            assert example.find_case(case.name) is case
        assert example.find_case("no_such_case") is None
    assert examples.find_example("no_such_example") is None


def test_missing_parameter_names_case_and_key():
    case = examples.find_example("bgemm").cases[0]
    with pytest.raises(KeyError) as caught:
        case.param("no_such_param")
    assert "no_such_param" in str(caught.value) and case.name in str(caught.value)


def test_unknown_case_names_the_valid_ones(worker):
    example = examples.find_example("wavefront")
    with pytest.raises(KeyError) as caught:
        example.run(worker, "no_such_case")
    assert "default, small, large" in str(caught.value)


def test_small_cases_twice_on_one_worker_on_both_variants():
    """Callable ids are reused and every example frees its buffers: the second pass ends with the
    device memory where the first left it (the runtime's arenas are made on the first run of each
    variant and kept)."""
    with chiprt.Worker(clusters=2) as worker:
        bytes_after_first_pass = None
        for pass_index in range(2):
            for runtime in RUNTIMES:
                for example in examples.all_examples():
                    outcome = example.run(worker, "small", runtime=runtime)
                    assert outcome.passed, f"{example.name}/small on {runtime}: {outcome.message}"
            if pass_index == 0:
                bytes_after_first_pass = worker.device_bytes_in_use
        assert worker.device_bytes_in_use == bytes_after_first_pass
        assert not any(worker.has_callable(i)
                       for i in range(getattr(chiprt, "MAX_CALLABLE_IDS", 64)))


def test_every_example_runs_its_call_through_the_given_executor(worker):
    for example in examples.all_examples():
        calls = []

        def forwarding(w, callable_id, args, config):
            assert w is worker
            assert w.has_callable(callable_id)
            calls.append(callable_id)
            return w.run(callable_id, args, **config)

        outcome = example.run(worker, "small", executor=forwarding)
        assert len(calls) == 1, example.name
        assert outcome.passed, f"{example.name}: {outcome.message}"

        # A run that executes nothing leaves the outputs unwritten (poisoned, zero or the input)
        # and reports no tasks: it must fail.
        class NothingRan:
            task_count = 0

        outcome = example.run(worker, "small", executor=lambda *_: NothingRan())
        assert not outcome.passed, example.name
    assert not worker.has_callable(0)


def test_failed_run_releases_buffers_and_callable(worker):
    """An error inside the run (here the executor's) leaves the worker as the example found it."""
    bgemm = examples.find_example("bgemm")
    assert bgemm.run(worker, "small").passed  # the runtime's arenas exist from here on
    bytes_before = worker.device_bytes_in_use

    def failing(w, callable_id, args, config):
        raise RuntimeError("executor failed")

    with pytest.raises(RuntimeError, match="executor failed"):
        bgemm.run(worker, "small", executor=failing)
    assert worker.device_bytes_in_use == bytes_before
    assert not worker.has_callable(0)

    # A config the runtime rejects fails inside Worker.run: same clean-up.
    with pytest.raises(chiprt.ArgumentError):
        bgemm.run(worker, "small", aicpu_thread_num=1)
    assert worker.device_bytes_in_use == bytes_before
    assert not worker.has_callable(0)


def test_bgemm_restore_makes_a_second_run_check_exactly(worker):
    """bgemm accumulates into C: a second run on the same arguments holds 2 A B (and fails the
    check) unless the prepared run restores C first."""
    bgemm = examples.find_example("bgemm")
    with bgemm.prepare(worker, "small") as prepared:
        assert prepared.check(prepared.run()).passed
        accumulated = prepared.check(prepared.run())
        assert not accumulated.passed
        prepared.restore()
        assert prepared.check(prepared.run()).passed


def test_compare_results_reports_nan_and_first_mismatch():
    got = np.array([1.0, np.nan, 3.5, 4.0], dtype=np.float32)
    want = np.array([1.0, 2.0, 3.0, 4.0])
    comparison = examples.compare_results(got, want, 1e-3, row_width=2)
    assert comparison.mismatches == 2
    assert comparison.max_abs_error == float("inf")
    assert comparison.first_mismatch.startswith("element 1 (row 0, col 1): got nan")


@pytest.mark.parametrize("case_name", ["tiny_rings", "manual_tiny_rings"])
def test_tiny_ring_cases_run_on_the_tiny_rings(worker, tmp_path, case_name):
    """The case's ring sizes reach the ring runtime through rings= (the scope statistics report
    the rings' capacities). Whether a scope had to wait for space depends on timing, so it is
    not asserted."""
    example = examples.find_example("paged_attention")
    outcome = example.run(worker, case_name, runtime="tensormap_ringbuffer",
                          diagnostics="scopes", diagnostics_dir=str(tmp_path))
    worker.flush_diagnostics()
    assert outcome.passed, outcome.message
    with open(os.path.join(outcome.report.diagnostics_dir, "scope_stats.jsonl")) as stats:
        scopes = [json.loads(line) for line in stats if line.strip()]
    assert scopes
    for scope in scopes:
        assert (scope["task_window_capacity"], scope["heap_capacity"],
                scope["dep_pool_capacity"]) == (64, 8192, 64), scope
