"""Orchestration functions written in Python (host_build_graph), with vector_example's kernels."""

import gc
import os

import numpy as np
import pytest

import chiprt
from conftest import ADD, ADD_INTO, ADD_SCALAR, BINARY_INTO, MUL, VectorRun, vector_kernels


def vector_orchestration(orch, args):
    """vector_example's orchestration, in Python: f = (a+b+1)(a+b+2) + (a+b) chunk by chunk."""
    a, b, f = args.tensor(0), args.tensor(1), args.tensor(2)
    chunk = args.scalar_bits(0)
    for offset in range(0, a.numel, chunk):
        with orch.scope():
            s = chiprt.TaskArgs().input(a.view([chunk], [offset])).input(b.view([chunk], [offset]))
            orch.submit(ADD, "aiv", s.out([chunk], "f32").scalar(chunk))
            p1 = chiprt.TaskArgs().input(s.output(0)).out([chunk], "f32").scalar(chunk).scalar(1.0, "f32")
            orch.submit(ADD_SCALAR, chiprt.CoreType.AIV, p1)
            p2 = chiprt.TaskArgs().input(s.output(0)).out([chunk], "f32").scalar(chunk).scalar(2.0, "f32")
            orch.submit(ADD_SCALAR, "aiv", p2)
            with orch.scope():
                prod = chiprt.TaskArgs().input(p1.output(0)).input(p2.output(0)).out([chunk], "f32").scalar(chunk)
                orch.submit(MUL, "aiv", prod)
                result = chiprt.TaskArgs().input(prod.output(0)).input(s.output(0))
                orch.submit(ADD_INTO, "aiv", result.output_existing(f.view([chunk], [offset])).scalar(chunk))


def build(fn):
    return vector_kernels(chiprt.CallableBuilder().orchestration_function(fn, BINARY_INTO)).build()


def test_python_orchestration_matches_the_reference(worker):
    callable_ = build(vector_orchestration)
    assert callable_.python_orchestration and callable_.orchestration_function is vector_orchestration
    worker.register_callable(0, callable_)
    run = VectorRun(worker)
    report = worker.run(0, run.args)
    assert report.task_count == run.tasks
    run.check(worker)
    # Submitted runs execute the function on the Worker's pipeline thread.
    handles = [worker.submit(0, run.args) for _ in range(3)]
    assert [h.wait().task_count for h in handles] == [run.tasks] * 3
    graph = worker.export_graph(0, run.args)
    assert graph.shape["kernel_tasks"] == run.tasks


def test_orchestration_object_is_invalid_after_the_call(worker):
    kept = {}

    def orchestration(orch, args):
        kept["orch"] = orch
        kept["user_data"] = orch.user_data
        kept["failed"] = orch.failed
        vector_orchestration(orch, args)

    worker.register_callable(0, build(orchestration))
    run = VectorRun(worker, length=512, chunk=512)
    worker.run(0, run.args, user_data=b"hello")
    assert kept["user_data"] == b"hello" and kept["failed"] is False
    with pytest.raises(chiprt.StateError, match="only during"):
        kept["orch"].submit(ADD, "aiv", chiprt.TaskArgs())


def test_tensor_data_from_python_orchestration(worker):
    seen = {}

    def orchestration(orch, args):
        a = args.tensor(0)
        seen["a"] = orch.get_tensor_data(a)
        orch.set_tensor_data(args.tensor(2), np.arange(a.numel, dtype=np.float32))

    worker.register_callable(0, vector_kernels(chiprt.CallableBuilder().orchestration_function(orchestration, BINARY_INTO)).build())
    run = VectorRun(worker, length=512, chunk=512)
    worker.run(0, run.args)
    np.testing.assert_array_equal(seen["a"], run.a)
    np.testing.assert_array_equal(worker.download(run.tf), np.arange(512, dtype=np.float32))


def test_exception_in_python_orchestration_fails_the_run(worker):
    def raises_value_error(orch, args):
        raise ValueError("no chunks today")

    def raises_chiprt_error(orch, args):
        raise chiprt.ArgumentError(chiprt.StatusCode.InvalidArgument, "chunk must be even")

    worker.register_callable(0, build(raises_value_error))
    worker.register_callable(1, build(raises_chiprt_error))
    run = VectorRun(worker, length=512, chunk=512)
    with pytest.raises(chiprt.Error) as info:
        worker.run(0, run.args)
    assert info.value.code is chiprt.StatusCode.OrchestrationFailed
    assert "ValueError: no chunks today" in info.value.message
    with pytest.raises(chiprt.ArgumentError) as info:
        worker.run(1, run.args)
    assert info.value.code is chiprt.StatusCode.InvalidArgument
    assert info.value.message == "chunk must be even"
    failed = worker.submit(0, run.args)
    with pytest.raises(chiprt.Error, match="ValueError"):
        failed.wait()
    # The Worker is fine afterwards. The failed submitted run poisoned its output: a run using it
    # is cancelled, naming the failure, until the host rewrites it.
    worker.register_callable(2, build(vector_orchestration))
    with pytest.raises(chiprt.CancelledError) as info:
        worker.run(2, run.args)
    assert f"poisoned by run {failed.sequence}, which failed with OrchestrationFailed" in info.value.message
    worker.memset(run.tf.buffer, 0)
    worker.run(2, run.args)
    run.check(worker)


def test_worker_calls_inside_python_orchestration_are_reentrant_errors(worker):
    def calls_the_worker(orch, args):
        worker.malloc(16)

    worker.register_callable(0, build(calls_the_worker))
    run = VectorRun(worker, length=512, chunk=512)
    with pytest.raises(chiprt.StateError) as info:
        worker.run(0, run.args)
    assert info.value.code is chiprt.StatusCode.ReentrantCall


def test_python_orchestration_on_the_ring_variant_is_unsupported():
    with chiprt.Worker(runtime="tensormap_ringbuffer", clusters=2) as w:
        w.register_callable(0, build(vector_orchestration))
        run = VectorRun(w, length=512, chunk=512)
        with pytest.raises(chiprt.Error) as info:
            w.run(0, run.args)
        assert info.value.code is chiprt.StatusCode.UnsupportedFeature
        assert "host_build_graph" in info.value.message and "build_chip_object" in info.value.message
        with pytest.raises(chiprt.Error, match="UnsupportedFeature"):
            w.submit(0, run.args)
        # host_build_graph chosen per run works on the same Worker.
        w.run(0, run.args, runtime="host_build_graph")
        run.check(w)


def test_slots_are_released_with_their_callables(worker):
    for _ in range(100):  # more than the slot table holds
        build(vector_orchestration)
        gc.collect()
    callables = [build(vector_orchestration) for _ in range(8)]
    worker.register_callable(0, callables[-1])
    del callables
    gc.collect()
    run = VectorRun(worker, length=512, chunk=512)
    worker.run(0, run.args)
    run.check(worker)


def test_released_callable_bytes_fail_cleanly(worker):
    container = build(vector_orchestration).container  # the Callable dies here
    gc.collect()
    # Refused when registered: its slot may hold another Callable's function by the time it runs.
    with pytest.raises(chiprt.ArgumentError) as info:
        worker.register_callable(0, container)
    assert "destroyed" in info.value.message
    assert not worker.has_callable(0)


def test_interpreter_exit_finishes_admitted_python_runs(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "exit_with_runs.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "import chiprt\n"
        "from conftest import VectorRun\n"
        "from test_python_orchestration import build, vector_orchestration\n"
        "w = chiprt.Worker(clusters=2)\n"
        "w.register_callable(0, build(vector_orchestration))\n"
        "run = VectorRun(w)\n"
        "handles = [w.submit(0, run.args) for _ in range(2)]\n"
        "print('submitted', flush=True)\n"
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "submitted" in result.stdout
    assert "nobody waited" not in result.stderr
