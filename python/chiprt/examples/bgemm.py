"""bgemm: tiled C += A B; tile products on AIC, accumulation into the C tiles on AIV (INOUT).

Port of examples/bgemm/host/bgemm.cpp; argument layout and func ids in
examples/bgemm/protocol.h. The call accumulates into C, so C starts at zero and one run is
checked against A B exactly; running the same arguments again adds A B once more
(PreparedRun.restore() zeroes C again).
"""

import numpy as np

import chiprt

from ._support import Example, ExampleCase, PreparedRun, chip_object_path

# examples/bgemm/protocol.h
MATMUL = 0
ACCUMULATE = 1
TASKS_PER_TILE_PRODUCT = 2  # matmul + accumulate

SEED = 7


def build_callable():
    return (chiprt.CallableBuilder()
            .orchestration_object(chip_object_path("bgemm_orchestration"),
                                  chiprt.signature(["in", "in", "inout"], scalars=1))
            .kernel_object(MATMUL, "aic", chip_object_path("bgemm_matmul"),
                           chiprt.signature(["in", "in", "out"], scalars=3), name="matmul")
            .kernel_object(ACCUMULATE, "aiv", chip_object_path("bgemm_accumulate"),
                           chiprt.signature(["in", "inout"], scalars=2), name="accumulate")
            .build())


def tolerance_for(k: int) -> float:
    # Float rounding grows with the reduction length (|terms| <= 1).
    return 1e-6 * k + 1e-5


class Bgemm(Example):
    name = "bgemm"
    description = ("tiled C = sum_k A_k B_k: tile products on AIC, accumulation into C tiles on "
                   "AIV (INOUT)")
    cases = (
        ExampleCase("small", (("tiles_m", 4), ("tiles_n", 4), ("tiles_k", 4), ("tile", 16))),
        ExampleCase("medium", (("tiles_m", 8), ("tiles_n", 8), ("tiles_k", 8), ("tile", 16))),
        ExampleCase("large", (("tiles_m", 16), ("tiles_n", 16), ("tiles_k", 8), ("tile", 8)),
                    large=True),
        # `chiprt bench`'s bgemm row: 64x64 tiles make each tile product long beside the
        # runtime's per-task cost.
        ExampleCase("bench", (("tiles_m", 8), ("tiles_n", 8), ("tiles_k", 4), ("tile", 64)),
                    large=True),
    )

    def _prepare(self, prepared: PreparedRun, case: ExampleCase) -> None:
        tile = case.param("tile")
        m = case.param("tiles_m") * tile
        n = case.param("tiles_n") * tile
        k = case.param("tiles_k") * tile
        rng = np.random.default_rng(SEED)
        a = rng.uniform(-1.0, 1.0, (m, k)).astype(np.float32)
        b = rng.uniform(-1.0, 1.0, (k, n)).astype(np.float32)
        # Reference in float64: the device sums in float, tile by tile.
        want = a.astype(np.float64) @ b.astype(np.float64)
        tolerance = tolerance_for(k)

        tensor_a = prepared.upload(a)
        tensor_b = prepared.upload(b)
        # C accumulates: it starts at zero (restore() zeroes it again between runs).
        tensor_c = prepared.filled([m, n], np.float32, 0)
        prepared.register(build_callable())
        prepared.args = (chiprt.TaskArgs().input(tensor_a).input(tensor_b).inout(tensor_c)
                         .scalar(tile))
        prepared.kernel_tasks = (m // tile) * (n // tile) * (k // tile) * TASKS_PER_TILE_PRODUCT
        prepared.tolerance = tolerance

        prepared.check_output(tensor_c, want, n)
