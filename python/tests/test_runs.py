"""Callables from the example chip objects run on both variants: run, submit / wait /
try_submit, RunReport, export_graph, diagnostics, reset, _native_run_loop and misuse."""

import json
import os

import pytest

import chiprt
from conftest import BINARY_INTO, VectorRun, chip_object, vector_callable


def test_callable_from_paths_and_bytes(vector):
    assert isinstance(vector.container, bytes) and len(vector) == len(vector.container)
    assert not vector.python_orchestration
    with open(chip_object("vector_example_orchestration"), "rb") as f:
        orchestration_bytes = f.read()
    from conftest import vector_kernels
    from_bytes = vector_kernels(chiprt.CallableBuilder().orchestration_object(orchestration_bytes, BINARY_INTO)).build()
    assert from_bytes.container == vector.container
    with pytest.raises(chiprt.Error) as info:
        chiprt.CallableBuilder().build()
    assert info.value.code is chiprt.StatusCode.EmptyCallable
    with pytest.raises(chiprt.Error):
        chiprt.CallableBuilder().orchestration_object("/nonexistent/x.so", BINARY_INTO)


def test_vector_example_runs_on_both_variants(runtime_worker, vector):
    w = runtime_worker
    w.register_callable(3, vector)
    assert w.has_callable(3) and not w.has_callable(4)
    run = VectorRun(w)
    report = w.run(3, run.args)
    run.check(w)
    assert report.task_count == run.tasks
    assert report.host_total_ns >= report.device_wall_ns > 0
    assert report.cores > 0 and report.aicpu_threads > 0
    assert "run_wall" in report.phases and "scheduling" in report.phases
    for phase in report.phases.values():
        assert set(phase) == {"start_ns", "span_ns"}
    if w.runtime is chiprt.RuntimeVariant.HOST_BUILD_GRAPH:
        assert "graph_build" in report.phases
    else:
        assert "orchestration" in report.phases
    # The other variant on the same Worker, chosen per run, and bytes registration.
    other = "tensormap_ringbuffer" if w.runtime is chiprt.RuntimeVariant.HOST_BUILD_GRAPH else "host_build_graph"
    w.register_callable(4, vector.container)
    assert w.run(4, run.args, runtime=other, serial=True).serial
    run.check(w)
    w.unregister_callable(4)
    assert not w.has_callable(4)


def test_submit_wait_try_submit(worker, vector):
    worker.register_callable(0, vector)
    run = VectorRun(worker)
    handles = [worker.submit(0, run.args) for _ in range(2)]
    assert handles[1].sequence == handles[0].sequence + 1
    reports = [h.wait() for h in handles]
    assert all(r.task_count == run.tasks for r in reports)
    assert handles[0].ready() and handles[0].wait(timeout=1).task_count == run.tasks
    run.check(worker)
    admitted = [h for h in (worker.try_submit(0, run.args) for _ in range(4)) if h is not None]
    assert 1 <= len(admitted) <= 4
    for h in admitted:
        h.wait()
    assert worker.runs_in_flight == 0
    # A failing submitted run raises from wait().
    bad = chiprt.TaskArgs().input(run.ta).input(run.tb).output_existing(run.tf).scalar(3)
    h = worker.submit(0, bad)
    with pytest.raises(chiprt.ArgumentError, match="chunk=3"):
        h.wait()


def test_run_config_keywords(worker, vector):
    worker.register_callable(0, vector)
    run = VectorRun(worker)
    report = worker.run(0, run.args, measure_kernel_time=True, aicpu_thread_num=3, cluster_count=2,
                        replay_graph=True, replay_key=5, user_data=b"abc", max_tasks=1000,
                        output_heap_bytes=1 << 20)
    assert report.kernel_time_measured and report.kernel_ns > 0
    run.check(worker)
    with pytest.raises(chiprt.ArgumentError, match="unknown run keyword 'clusters'"):
        worker.run(0, run.args, clusters=2)
    with pytest.raises(chiprt.ArgumentError) as info:
        worker.run(0, run.args, aicpu_thread_num=1)
    assert info.value.code is chiprt.StatusCode.InvalidConfig
    with pytest.raises(chiprt.ArgumentError):
        worker.run(0, run.args, diagnostics="swimlane=9", diagnostics_dir="/tmp")


def test_export_graph_and_dot(worker, vector):
    worker.register_callable(0, vector)
    run = VectorRun(worker, length=1024, chunk=512)
    graph = worker.export_graph(0, run.args)
    kernel_tasks = [t for t in graph.tasks if not t["dummy"]]
    assert len(kernel_tasks) == run.tasks
    assert graph.task_count == len(graph.tasks) and graph.edge_count > 0
    assert kernel_tasks[0]["func_id"] == 0 and kernel_tasks[0]["core_type"] is chiprt.CoreType.AIV
    assert graph.shape["kernel_tasks"] == run.tasks
    assert all(c > i for i, t in enumerate(graph.tasks) for c in t["consumers"])
    dot = graph.to_dot()
    assert dot.startswith("digraph") and "->" in dot


def test_diagnostics_run_writes_its_directory(worker, vector, tmp_path):
    worker.register_callable(0, vector)
    run = VectorRun(worker, length=1024, chunk=512)
    report = worker.run(0, run.args, diagnostics="all", diagnostics_dir=str(tmp_path))
    run_dir = report.diagnostics_dir
    assert run_dir.startswith(str(tmp_path)) and os.path.isdir(run_dir)
    for name in ("run.json", "report.html", "trace.json", "tasks.csv", "deps.json"):
        assert os.path.isfile(os.path.join(run_dir, name)), name
    with open(os.path.join(run_dir, "run.json")) as f:
        json.load(f)
    second = worker.run(0, run.args, diagnostics={"task_timing": True}, diagnostics_dir=tmp_path,
                        background_write=True)
    worker.flush_diagnostics()
    assert os.path.isfile(os.path.join(second.diagnostics_dir, "tasks.csv"))
    assert os.path.isfile(os.path.join(second.diagnostics_dir, "run.json"))
    assert worker.run(0, run.args).diagnostics_dir == ""


def test_reset_loses_buffers_keeps_callables(worker, vector):
    worker.register_callable(0, vector)
    run = VectorRun(worker)
    worker.run(0, run.args)
    worker.reset()
    assert worker.reset_count == 1 and worker.has_callable(0)
    with pytest.raises(chiprt.ArgumentError, match="reset"):
        worker.download(run.tf)
    fresh = VectorRun(worker)
    worker.run(0, fresh.args)
    fresh.check(worker)


def test_native_run_loop(worker, vector):
    worker.register_callable(0, vector)
    run = VectorRun(worker, length=1024, chunk=512)
    times = chiprt._native_run_loop(worker, 0, run.args, 3)
    assert len(times) == 3 and all(isinstance(t, int) and t > 0 for t in times)
    run.check(worker)
    assert chiprt._native_run_loop(worker, 0, run.args, 0) == []


def test_misuse_raises_the_right_class(worker, vector):
    run = VectorRun(worker, length=1024, chunk=512)
    with pytest.raises(chiprt.StateError) as info:
        worker.run(9, run.args)
    assert info.value.code is chiprt.StatusCode.UnknownCallable
    with pytest.raises(chiprt.ArgumentError) as info:
        worker.run(200, run.args)
    assert info.value.code is chiprt.StatusCode.CallableIdOutOfRange
    worker.register_callable(0, vector)
    with pytest.raises(chiprt.StateError) as info:
        worker.register_callable(0, vector)
    assert info.value.code is chiprt.StatusCode.DuplicateCallable
    with pytest.raises(chiprt.ArgumentError) as info:
        worker.run(0, chiprt.TaskArgs().input(run.ta).scalar(1))
    assert info.value.code is chiprt.StatusCode.SignatureMismatch
    # Wrong dtype and wrong shape reach the orchestration's own checks.
    as_int = chiprt.Tensor.make(run.ta.buffer, [1024], "i32")
    with pytest.raises(chiprt.ArgumentError, match="1-D f32"):
        worker.run(0, chiprt.TaskArgs().input(as_int).input(run.tb).output_existing(run.tf).scalar(512))
    with pytest.raises(chiprt.ArgumentError, match="1-D f32"):
        worker.run(0, chiprt.TaskArgs().input(run.ta.reshape([2, 512])).input(run.tb).output_existing(run.tf).scalar(512))
    with pytest.raises(TypeError):
        worker.run(0, "not args")
    worker.free(run.tb.buffer)
    with pytest.raises(chiprt.ArgumentError) as info:
        worker.run(0, run.args)
    assert info.value.code is chiprt.StatusCode.InvalidDevicePointer
    worker.close()
    with pytest.raises(chiprt.StateError) as info:
        worker.run(0, run.args)
    assert info.value.code is chiprt.StatusCode.AlreadyClosed
    with pytest.raises(chiprt.StateError):
        worker.malloc(8)
    with pytest.raises(chiprt.StateError):
        worker.submit(0, run.args)


def test_worker_keeps_a_registered_callable_alive(worker):
    worker.register_callable(0, vector_callable())  # no other reference
    run = VectorRun(worker, length=1024, chunk=512)
    worker.run(0, run.args)
    run.check(worker)


def test_rings_keyword_and_report(vector):
    with chiprt.Worker(runtime="tensormap_ringbuffer", clusters=2) as w:
        w.register_callable(0, vector)
        run = VectorRun(w, length=1024, chunk=256)
        report = w.run(0, run.args, rings={"task_window": [64, 32], "heap_bytes": "65536", "dep_pool": 256})
        run.check(w)
        assert report.rings["task_window"][:2] == [64, 32]
        assert report.rings["heap_bytes"][0] == 65536 and report.rings["dep_pool"][0] == 256
        with pytest.raises(chiprt.ArgumentError) as info:
            w.run(0, run.args, rings={"task_window": [20]})
        assert info.value.code is chiprt.StatusCode.InvalidConfig
        with pytest.raises(chiprt.ArgumentError, match="unknown rings field"):
            w.run(0, run.args, rings={"window": 64})
