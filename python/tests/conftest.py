"""Shared fixtures of the chiprt Python tests: Workers, the vector_example callable built from the
example chip objects (chiprt.paths()["chip_object_dir"]) and its numpy reference."""

import os

import numpy as np
import pytest

import chiprt

# vector_example's func_ids (examples/vector_example/protocol.h).
ADD, ADD_SCALAR, MUL, ADD_INTO = 0, 1, 2, 3
BINARY = chiprt.signature(["in", "in", "out"], 1)
BINARY_INTO = chiprt.signature(["in", "in", "output_existing"], 1)
ADD_SCALAR_SIG = chiprt.signature(["in", "out"], 2)
RUNTIMES = ["host_build_graph", "tensormap_ringbuffer"]


def chip_object(name: str) -> str:
    path = os.path.join(chiprt.paths()["chip_object_dir"], name + ".so")
    if not os.path.exists(path):
        pytest.skip(f"chip object {path} is not built (build target chiprt_python)")
    return path


def vector_kernels(builder: chiprt.CallableBuilder) -> chiprt.CallableBuilder:
    add = chip_object("vector_example_add")
    return (
        builder.kernel_object(ADD, "aiv", add, BINARY)
        .kernel_object(ADD_SCALAR, chiprt.CoreType.AIV, chip_object("vector_example_add_scalar"), ADD_SCALAR_SIG)
        .kernel_object(MUL, "aiv", chip_object("vector_example_mul"), BINARY)
        .kernel_object(ADD_INTO, "aiv", add, BINARY_INTO)
    )


def vector_callable() -> chiprt.Callable:
    builder = chiprt.CallableBuilder().orchestration_object(
        chip_object("vector_example_orchestration"), BINARY_INTO
    )
    return vector_kernels(builder).build()


def vector_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    s = a + b
    return (s + np.float32(1)) * (s + np.float32(2)) + s


class VectorRun:
    """Inputs on the device and the TaskArgs of one vector_example run."""

    def __init__(self, worker: chiprt.Worker, length: int = 2048, chunk: int = 512, seed: int = 7):
        rng = np.random.default_rng(seed)
        self.a = rng.uniform(-1, 1, length).astype(np.float32)
        self.b = rng.uniform(-1, 1, length).astype(np.float32)
        self.ta = worker.upload(self.a)
        self.tb = worker.upload(self.b)
        self.tf = worker.upload(np.full(length, np.nan, np.float32))
        self.chunk = chunk
        self.args = chiprt.TaskArgs().input(self.ta).input(self.tb).output_existing(self.tf).scalar(chunk)
        self.tasks = length // chunk * 5

    def check(self, worker: chiprt.Worker) -> None:
        np.testing.assert_allclose(worker.download(self.tf), vector_reference(self.a, self.b), rtol=1e-5, atol=1e-5)


class DLPackOnly:
    """An object that offers its data through DLPack alone (no buffer protocol, no __array__)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


@pytest.fixture
def worker():
    with chiprt.Worker(clusters=4, aicpu_threads=4) as w:
        yield w


@pytest.fixture(params=RUNTIMES)
def runtime_worker(request):
    with chiprt.Worker(runtime=request.param, clusters=4, aicpu_threads=4) as w:
        yield w


@pytest.fixture(scope="session")
def vector():
    return vector_callable()
