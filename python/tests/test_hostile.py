"""Misuse found by a hostile review: each test failed (crash, wrong result or a non-chiprt error)
before its fix."""

import gc
import os
import signal
import threading
import time

import numpy as np
import pytest

import chiprt
from conftest import BINARY, chip_object

ORCH_SIG = chiprt.signature(["in", "output_existing"], 0)


def python_callable(fn):
    return (chiprt.CallableBuilder().orchestration_function(fn, ORCH_SIG)
            .kernel_object(0, "aiv", chip_object("vector_example_add"), BINARY).build())


def run_args(worker):
    x = worker.upload(np.zeros(4, np.float32))
    y = worker.upload(np.zeros(4, np.float32))
    return chiprt.TaskArgs().input(x).output_existing(y)


def test_copy_from_into_object_array_is_refused(worker):
    # Raw device bytes written over PyObject pointers crashed the interpreter.
    buffer = worker.malloc(64)
    worker.memset(buffer, 0x41)
    out = np.zeros(2, dtype=object)
    with pytest.raises(chiprt.ArgumentError, match="Python objects"):
        worker.copy_from(buffer, out=out)
    assert list(out) == [0, 0]


@pytest.mark.parametrize("data", [np.array([object(), 1], dtype=object), None])
def test_copy_to_of_object_array_is_refused(worker, data):
    # Copied the PyObject pointers to the device.
    with pytest.raises(chiprt.ArgumentError, match="Python objects"):
        worker.copy_to(worker.malloc(64), data)


def test_upload_of_object_array_with_dtype_still_converts(worker):
    tensor = worker.upload(np.array([1.0, 2.0], dtype=object), dtype="f32")
    assert np.array_equal(worker.download(tensor), np.array([1, 2], np.float32))


def test_copy_from_huge_shape_is_an_argument_error(worker):
    with pytest.raises(chiprt.ArgumentError, match="does not fit the buffer"):
        worker.copy_from(worker.malloc(64), dtype="f32", shape=[2**62])


def test_index_lists_take_values_up_to_u64(worker):
    tensor = worker.upload(np.zeros(4, np.float32))
    with pytest.raises(chiprt.ArgumentError):
        tensor.view([2], [2**63])  # was a RuntimeError "Unable to cast"
    with pytest.raises(chiprt.ArgumentError, match="64 bits"):
        tensor.view([2], [2**64])


def test_bool_scalar_of_ambiguous_truth_raises_cleanly():
    # Left the exception set: SystemError "returned a result with an exception set".
    with pytest.raises(ValueError):
        chiprt.TaskArgs().scalar(np.array([1, 2]), dtype="bool")


def test_register_directory_path_is_load_failed(worker, tmp_path):
    with pytest.raises(chiprt.Error) as info:
        worker.register_callable(0, str(tmp_path))
    assert info.value.name == "LoadFailed"


def test_registered_bytes_of_python_callable_keep_it_and_refuse_ring():
    calls = []
    with chiprt.Worker(clusters=4, aicpu_threads=4) as worker:
        args = run_args(worker)
        callable_ = python_callable(lambda orch, a: calls.append("f"))
        worker.register_callable(0, callable_.container)
        del callable_
        gc.collect()
        # The slot is kept: another Callable cannot take it and run in its place.
        other = python_callable(lambda orch, a: calls.append("g"))
        worker.run(0, args)
        assert calls == ["f"]
        # The bytes are refused on the ring variant like the Callable (the function ran there).
        with pytest.raises(chiprt.Error) as info:
            worker.run(0, args, runtime="tensormap_ringbuffer")
        assert info.value.name == "UnsupportedFeature"
        wrapped = chiprt.Callable(other.container)
        assert wrapped.python_orchestration
        del other
        gc.collect()
        worker.register_callable(1, wrapped)
        worker.run(1, args)
        assert calls == ["f", "g"]


def test_bytes_of_destroyed_python_callable_are_refused(worker):
    callable_ = python_callable(lambda orch, a: None)
    container = callable_.container
    del callable_
    gc.collect()
    with pytest.raises(chiprt.ArgumentError, match="destroyed"):
        worker.register_callable(0, container)
    with pytest.raises(chiprt.ArgumentError, match="destroyed"):
        chiprt.Callable(container)


def test_orchestration_error_with_bad_code_keeps_its_message(worker):
    class Odd(chiprt.Error):
        pass

    def orchestration(orch, args):
        error = Odd("odd code")
        error.code = 2**80
        raise error

    worker.register_callable(0, python_callable(orchestration))
    with pytest.raises(chiprt.Error) as info:
        worker.run(0, run_args(worker))
    assert info.value.name == "OrchestrationFailed"
    assert "odd code" in str(info.value)
    assert "Unable to cast" not in str(info.value)


def test_wait_with_infinite_timeout_waits(worker):
    worker.register_callable(0, python_callable(lambda orch, a: time.sleep(0.2)))
    handle = worker.submit(0, run_args(worker))
    assert handle.wait(float("inf")).task_count == 0  # was TimeoutError at once
    with pytest.raises(chiprt.ArgumentError):
        handle.wait(float("nan"))
    with pytest.raises(chiprt.ArgumentError):
        handle.wait("soon")
    with pytest.raises(TimeoutError):
        worker.submit(0, run_args(worker)).wait(0.01)


def _interrupt_soon(delay=0.3):
    timer = threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    return timer


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
def test_ctrl_c_interrupts_wait(worker):
    worker.register_callable(0, python_callable(lambda orch, a: time.sleep(3)))
    handle = worker.submit(0, run_args(worker))
    start = time.monotonic()
    _interrupt_soon()
    with pytest.raises(KeyboardInterrupt):
        handle.wait()
    assert time.monotonic() - start < 2.5  # was: only once the run was done
    handle.wait()


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
def test_ctrl_c_in_python_orchestration_is_keyboard_interrupt(worker):
    def orchestration(orch, args):
        for _ in range(300):
            time.sleep(0.01)

    worker.register_callable(0, python_callable(orchestration))
    _interrupt_soon()
    with pytest.raises(KeyboardInterrupt):  # was chiprt.Error OrchestrationFailed
        worker.run(0, run_args(worker))
    worker.register_callable(1, python_callable(lambda orch, a: None))
    worker.run(1, run_args(worker))


# A kernel that says it started, waits (at most 8 s, below the scheduler watchdog) until the test
# releases it, then says it finished: files named by the defines.
WAITING_KERNEL = r"""
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "chiprt/kernel.h"

extern "C" __attribute__((visibility("default"))) void kernel_entry(int64_t*) {
  if (FILE* f = std::fopen(STARTED_PATH, "w")) std::fclose(f);
  struct stat st;
  for (int i = 0; i < 8000 && stat(RELEASE_PATH, &st) != 0; ++i) usleep(1000);
  if (FILE* f = std::fopen(FINISHED_PATH, "w")) std::fclose(f);
}
"""


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals")
@pytest.mark.parametrize("how", ["run", "wait"])
def test_ctrl_c_while_a_kernel_runs(worker, tmp_path, how):
    started, release, finished = (tmp_path / name for name in ("started", "release", "finished"))
    kernel = chiprt.build_chip_object(
        [WAITING_KERNEL], name="waiting",
        defines=[f'STARTED_PATH="{started}"', f'RELEASE_PATH="{release}"', f'FINISHED_PATH="{finished}"'],
        cache_dir=tmp_path / "cache")

    def orchestration(orch, args):
        orch.submit(0, "aiv", chiprt.TaskArgs().input(args.tensor(0)).output_existing(args.tensor(1)))

    callable_ = (chiprt.CallableBuilder().orchestration_function(orchestration, ORCH_SIG)
                 .kernel_object(0, "aiv", kernel, ORCH_SIG).build())
    worker.register_callable(0, callable_)
    args = run_args(worker)

    # The sender waits until the main thread is inside pytest.raises: a submitted kernel may run
    # before the sender starts, and a SIGINT that lands while Thread.start() still waits for the
    # thread would raise outside the block.
    armed = threading.Event()

    def interrupt_once_started():  # SIGINT to this process once the kernel runs
        armed.wait()
        for _ in range(3000):
            if started.exists():
                break
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    handle = worker.submit(0, args) if how == "wait" else None
    sender = threading.Thread(target=interrupt_once_started)
    sender.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            armed.set()
            if handle is None:
                worker.run(0, args)  # was: only once the kernel had returned
            else:
                handle.wait()
        # Raised while the kernel still runs: the run is in flight, its kernel not finished.
        assert started.exists() and not finished.exists()
        assert worker.runs_in_flight == 1
        assert handle is None or not handle.ready()
    finally:
        sender.join()
        release.touch()
    # The run goes on and finishes cleanly; the Worker works on.
    if handle is not None:
        assert handle.wait().task_count == 1
    worker.download(args.tensor(1))  # waits for the run that names it
    assert finished.exists() and worker.runs_in_flight == 0
    finished.unlink()
    assert worker.run(0, args).task_count == 1
    assert finished.exists()


@pytest.mark.parametrize("name", ["a/b", "../../escape", "", ".."])
def test_build_name_must_be_a_file_name(tmp_path, name):
    cache = tmp_path / "cache"
    with pytest.raises(chiprt.ArgumentError, match="plain file name"):
        chiprt.build_chip_object(["int x;"], name=name, cache_dir=cache)
    assert not any(p.name.startswith("escape") for p in tmp_path.rglob("*"))


def test_bf16_to_float32_refuses_non_patterns():
    with pytest.raises(chiprt.ArgumentError):
        chiprt.bf16_to_float32([1.5])  # was silently 1 -> 9.2e-41
    with pytest.raises(chiprt.ArgumentError):
        chiprt.bf16_to_float32([-1])
    assert chiprt.bf16_to_float32(np.array([0x3F80], np.uint16))[0] == 1.0


def test_bf16_of_float64_rounds_once():
    # Just above the tie between bf16 1.0 and 1.0078125; through float32 it became the tie.
    value = 1 + 2**-8 + 2**-30
    assert chiprt.float32_to_bf16(np.array([value]))[0] == 0x3F81
    assert chiprt.TaskArgs().scalar(value, dtype="bf16").scalar_bits(0) == 0x3F81
    assert chiprt.float32_to_bf16(np.array([1 + 2**-8]))[0] == 0x3F80  # a tie: to even
    assert chiprt.float32_to_bf16(np.array([1e39, -1e39, np.inf]))[:3].tolist() == [0x7F80, 0xFF80, 0x7F80]
    assert chiprt.float32_to_bf16(np.array([np.nan]))[0] & 0x7FC0 == 0x7FC0


@pytest.mark.parametrize("option", ["clusters", "aicpu_threads", "host_threads", "memory_bytes"])
def test_worker_option_beyond_64_bits_is_an_argument_error(option):
    with pytest.raises(chiprt.ArgumentError, match=f"{option}=.* is too large"):
        chiprt.Worker(**{option: 2**70})


def test_run_keyword_beyond_64_bits_is_an_argument_error(worker):
    with pytest.raises(chiprt.ArgumentError, match="max_tasks=.* is too large"):
        worker.run(0, chiprt.TaskArgs(), max_tasks=2**65)
