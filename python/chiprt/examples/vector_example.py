"""vector_example: f = (a+b+1)(a+b+2) + (a+b) over f32 vectors, with nested scopes.

Port of examples/vector_example/host/vector_example.cpp; argument layout and func ids in
examples/vector_example/protocol.h. Stateless.
"""

import numpy as np

import chiprt

from ._support import Example, ExampleCase, PreparedRun, chip_object_path

# examples/vector_example/protocol.h
ADD = 0
ADD_SCALAR = 1
MUL = 2
ADD_INTO = 3
TASKS_PER_CHUNK = 5  # add, add_scalar x2, mul, add_into

# The reference repeats the kernels' float operations in their order, so it matches to rounding.
TOLERANCE = 1e-5
SEED = 20240501


def build_callable():
    binary = chiprt.signature(["in", "in", "out"], scalars=1)
    binary_into = chiprt.signature(["in", "in", "output_existing"], scalars=1)
    add_scalar = chiprt.signature(["in", "out"], scalars=2)
    add = chip_object_path("vector_example_add")
    return (chiprt.CallableBuilder()
            .orchestration_object(chip_object_path("vector_example_orchestration"),
                                  chiprt.signature(["in", "in", "output_existing"], scalars=1))
            .kernel_object(ADD, "aiv", add, binary, name="add")
            .kernel_object(ADD_SCALAR, "aiv", chip_object_path("vector_example_add_scalar"),
                           add_scalar, name="add_scalar")
            .kernel_object(MUL, "aiv", chip_object_path("vector_example_mul"), binary, name="mul")
            # The same object and symbol under a second func_id, with a name of its own.
            .kernel_object(ADD_INTO, "aiv", add, binary_into, name="add_into")
            .build())


def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """f32 math in the kernels' order (sum, +1, +2, product, + sum), widened to float64."""
    s = a + b
    product = (s + np.float32(1.0)) * (s + np.float32(2.0))
    return (product + s).astype(np.float64)


class VectorExample(Example):
    name = "vector_example"
    description = ("f = (a+b+1)(a+b+2) + (a+b) over f32 vectors on AIV cores, intermediates in "
                   "nested scopes")
    cases = (
        ExampleCase("default", (("elements", 16384), ("chunk", 4096))),
        ExampleCase("small", (("elements", 1024), ("chunk", 1024))),
    )

    def _prepare(self, prepared: PreparedRun, case: ExampleCase) -> None:
        length = case.param("elements")
        chunk = case.param("chunk")
        rng = np.random.default_rng(SEED)
        a = rng.uniform(-1.0, 1.0, length).astype(np.float32)
        b = rng.uniform(-1.0, 1.0, length).astype(np.float32)
        want = reference(a, b)

        tensor_a = prepared.upload(a)
        tensor_b = prepared.upload(b)
        # Poison the output so an element the run never writes cannot pass by accident.
        tensor_f = prepared.filled([length], np.float32, 0xFF)
        prepared.register(build_callable())
        prepared.args = (chiprt.TaskArgs().input(tensor_a).input(tensor_b)
                         .output_existing(tensor_f).scalar(chunk))
        prepared.kernel_tasks = length // chunk * TASKS_PER_CHUNK
        prepared.tolerance = TOLERANCE

        prepared.check_output(tensor_f, want)
