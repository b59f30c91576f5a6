"""wavefront: a 2-D tiled stencil updated in place; the dependencies come only from overlapping
views of one buffer.

Port of examples/wavefront/host/wavefront.cpp; argument layout and func id in
examples/wavefront/protocol.h. The call updates X in place, so a second run of the same
arguments starts from the first run's result (PreparedRun.restore() re-uploads the input).
"""

import numpy as np

import chiprt

from ._support import Example, ExampleCase, PreparedRun, chip_object_path

# examples/wavefront/protocol.h
UPDATE = 0
LEFT_WEIGHT = np.float32(0.5)
UP_WEIGHT = np.float32(0.25)

# The reference repeats the kernel's float operations in the same order.
TOLERANCE = 1e-5
SEED = 12345


def build_callable():
    return (chiprt.CallableBuilder()
            .orchestration_object(chip_object_path("wavefront_orchestration"),
                                  chiprt.signature(["inout"], scalars=1))
            .kernel_object(UPDATE, "aiv", chip_object_path("wavefront_update"),
                           chiprt.signature(["inout", "in", "in"], scalars=2), name="update")
            .build())


def reference(x: np.ndarray, tile_rows: int, tile_cols: int, tile: int) -> np.ndarray:
    """The stencil tile by tile in submission order, in f32 as the kernel computes it:
    x = (x + 0.5 * left[:, last]) + 0.25 * up[last, :]."""
    x = x.copy()
    for i in range(1, tile_rows):
        rows = slice(i * tile, (i + 1) * tile)
        for j in range(1, tile_cols):
            cols = slice(j * tile, (j + 1) * tile)
            from_left = LEFT_WEIGHT * x[rows, j * tile - 1]
            from_up = UP_WEIGHT * x[i * tile - 1, cols]
            x[rows, cols] = (x[rows, cols] + from_left[:, None]) + from_up[None, :]
    return x.astype(np.float64)


class Wavefront(Example):
    name = "wavefront"
    description = ("2-D tiled stencil updated in place; dependencies only from overlapping views "
                   "of one buffer")
    cases = (
        ExampleCase("default", (("tiles_r", 32), ("tiles_c", 32), ("tile", 8))),
        ExampleCase("small", (("tiles_r", 8), ("tiles_c", 8), ("tile", 8))),
        ExampleCase("large", (("tiles_r", 64), ("tiles_c", 64), ("tile", 8)), large=True),
    )

    def _prepare(self, prepared: PreparedRun, case: ExampleCase) -> None:
        tile = case.param("tile")
        # Interior tiles plus the halo row and column.
        tile_rows = case.param("tiles_r") + 1
        tile_cols = case.param("tiles_c") + 1
        rows, cols = tile_rows * tile, tile_cols * tile
        rng = np.random.default_rng(SEED)
        x = rng.uniform(-1.0, 1.0, (rows, cols)).astype(np.float32)
        want = reference(x, tile_rows, tile_cols, tile)

        tensor_x = prepared.upload(x, written=True)
        prepared.register(build_callable())
        prepared.args = chiprt.TaskArgs().inout(tensor_x).scalar(tile)
        prepared.kernel_tasks = (tile_rows - 1) * (tile_cols - 1)
        prepared.tolerance = TOLERANCE

        prepared.check_output(tensor_x, want, cols)
