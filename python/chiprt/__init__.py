"""chiprt: a task-graph runtime for a simulated accelerator chip, from Python.

A Worker owns one (simulated) device: malloc device buffers, copy numpy data in and out, register
callables (an orchestration function and its kernels, built with CallableBuilder from chip
objects, which build_chip_object compiles from C++ sources), and run them with TaskArgs. Errors
are chiprt.Error (subclasses per family) with .code, .name, .hint and .message.
"""

import atexit

from . import _chiprt
from ._enums import ArgTag, CoreType, DataType, RuntimeVariant, StatusCode
from ._errors import (
    ArgumentError,
    BuildError,
    CancelledError,
    DeviceError,
    Error,
    StateError,
    error_class,
)
from ._dtypes import bf16_to_float32, float32_to_bf16, from_numpy_dtype, to_dtype, to_numpy_dtype
from ._build import build_chip_object, paths
from ._chiprt import (
    ArgSignature,
    Buffer,
    Callable,
    CallableBuilder,
    GraphExport,
    Orchestration,
    RunHandle,
    RunReport,
    TaskArgs,
    Tensor,
    Worker,
    _native_run_loop,
    format_task_count,
    signature,
)
from ._build_config import VERSION as __version__

# Admitted runs finish (and Workers close) while the interpreter still runs: a run's Python
# orchestration function needs it.
atexit.register(_chiprt._close_all_workers)

MAX_TENSOR_DIMS = _chiprt.MAX_TENSOR_DIMS
MAX_TASK_TENSORS = _chiprt.MAX_TASK_TENSORS
MAX_TASK_SCALARS = _chiprt.MAX_TASK_SCALARS
MAX_EXPLICIT_DEPS = _chiprt.MAX_EXPLICIT_DEPS
MAX_CALLABLE_IDS = _chiprt.MAX_CALLABLE_IDS


def version() -> str:
    """The chiprt version, "0.1.0"."""
    return __version__


__all__ = [
    "ArgSignature",
    "ArgTag",
    "ArgumentError",
    "Buffer",
    "BuildError",
    "Callable",
    "CallableBuilder",
    "CancelledError",
    "CoreType",
    "DataType",
    "DeviceError",
    "Error",
    "GraphExport",
    "Orchestration",
    "RunHandle",
    "RunReport",
    "RuntimeVariant",
    "StateError",
    "StatusCode",
    "TaskArgs",
    "Tensor",
    "Worker",
    "bf16_to_float32",
    "build_chip_object",
    "error_class",
    "float32_to_bf16",
    "format_task_count",
    "from_numpy_dtype",
    "paths",
    "signature",
    "to_dtype",
    "to_numpy_dtype",
    "version",
]

# The example workloads (numpy references; `python3 -m chiprt run`) as chiprt.examples without an
# import of their own. Last: they use the names above.
from . import examples  # noqa: E402
