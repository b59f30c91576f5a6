"""chiprt's exceptions: chiprt.Error and one subclass per family of status codes.

A chiprt::Error thrown by the C++ runtime reaches Python as the class error_class(code) gives,
with .code (StatusCode), .name, .hint and .message; str(e) is "[NAME] message (hint: ...)". The
hint is said in Python's terms: where the C++ hint names a C++ call or field (Worker::reset(),
CallConfig::rings), the Python one names the Python call or keyword (worker.reset(), rings=).
"""

import re

from . import _chiprt
from ._enums import StatusCode

# The hints, in Python's terms, of the codes whose C++ hint names C++ calls, fields or constants.
# python/tests/test_errors.py requires one here for every C++ hint that names C++ API.
PYTHON_HINTS = {
    "NotInitialized": "create the Worker with chiprt.Worker(...): it initialises itself",
    "AlreadyClosed": "create a new chiprt.Worker",
    "DeviceMismatch": "use one Worker per device id",
    "UnknownCallable": "register the callable first with worker.register_callable(id, callable), "
                       "or use an id you registered",
    "DuplicateCallable": "worker.unregister_callable(id) first, or choose another id",
    "CallableIdOutOfRange": "use an id in [0, chiprt.MAX_CALLABLE_IDS)",
    "EmptyCallable": "give chiprt.CallableBuilder an orchestration (orchestration_function or "
                     "orchestration_object) and at least one kernel_object",
    "MalformedCallable": "rebuild the callable with chiprt.CallableBuilder().build(); the message "
                         "names the bad field",
    "OutOfDeviceMemory": "free device buffers (worker.free) or raise the simulated device's "
                         "capacity: chiprt.Worker(memory_bytes=...)",
    "InvalidConfig": "fix the keyword or option named in the message",
    "DeviceFaulted": "call worker.reset() (device memory is lost, callables stay registered)",
    "TooManyArgs": "split the task, or pack scalars into a tensor (limits: "
                   "chiprt.MAX_TASK_TENSORS, chiprt.MAX_TASK_SCALARS)",
    "CapacityExceeded": "raise the limit named in the message (the run keyword max_tasks=, or "
                        "rings=)",
    "HeapExhausted": "raise the run keyword output_heap_bytes=, or end scopes (orch.scope()) "
                     "earlier to release intermediates",
    "ScopeMismatch": "pair every orch.scope_begin() with an orch.scope_end() (use "
                     "`with orch.scope():`)",
    "InvalidTask": "depend only on task ids orch.submit returned in this run",
    "RingDeadlock": "raise the ring size named in the message (the run keyword rings= or "
                    "CHIPRT_RING_*) or end scopes sooner",
    "ReentrantCall": "call Worker methods from outside orchestration functions and kernels; "
                     "inside an orchestration function use its orch argument (submit, allocate, "
                     "get_tensor_data, set_tensor_data)",
    "KernelCrashed": "fix the kernel named in the message (the signal and faulting address say "
                     "how it failed), then call worker.reset()",
    "OpExecuteTimeout": "fix the kernel named in the message or raise "
                        "CHIPRT_OP_EXECUTE_TIMEOUT_US, then call worker.reset()",
    "DiagnosticsError": "check the run keyword diagnostics_dir= (it must be a writable "
                        "directory) or the file named in the message",
    "Cancelled": "fix the failed run named in the message, rewrite the memory it names from "
                 "Python (worker.copy_to, worker.memset) or free it, then run again",
    "InheritedWorker": "create a new chiprt.Worker in this process; the inherited one stays the "
                       "parent's (dropping it here releases nothing of the parent's)",
}

# C++ spellings in messages: Worker::reset() reads worker.reset() in Python.
_CPP_WORKER_CALL = re.compile(r"\bWorker::(\w+)")
# SimOptions.clusters reads "Worker keyword clusters": chiprt.Worker's keywords are its fields.
_CPP_SIM_OPTION = re.compile(r"\bSimOptions\.(\w+)")
# CallConfig's fields are the run keywords: CallConfig::rings.heap_bytes reads "rings={'heap_bytes':
# ...}", CallConfig::output_heap_bytes "the run keyword output_heap_bytes=", and
# diagnostics.output_dir "diagnostics_dir=". The limit constant's name is left out (the message
# states its value).
_CPP_RUN_KEYWORDS = (
    (re.compile(r" \(CallConfig::kMax\w+\)"), ""),
    (re.compile(r"\bCallConfig::rings\.(\w+)\b(?!\[)"), r"rings={'\1': ...}"),
    (re.compile(r"\bCallConfig::rings\.(\w+)\["), r"rings['\1']["),
    (re.compile(r"\bCallConfig::(\w+)"), r"the run keyword \1="),
    (re.compile(r"\bdiagnostics\.output_dir\b"), "diagnostics_dir="),
)


def _python_terms(message: str) -> str:
    """`message` with the C++ spellings of calls, fields and keywords in Python's terms."""
    message = _CPP_SIM_OPTION.sub(r"Worker keyword \1", _CPP_WORKER_CALL.sub(r"worker.\1", message))
    for pattern, replacement in _CPP_RUN_KEYWORDS:
        message = pattern.sub(replacement, message)
    return message


def python_hint(code, native_hint: str = None) -> str:
    """The hint of `code` in Python's terms. `native_hint`: a failure's own hint, more precise
    than its code's (kept as it is); None or the code's C++ hint give the Python one."""
    name, _detail, hint = _chiprt.status_info(int(code))
    if native_hint and native_hint != hint:
        return native_hint
    return PYTHON_HINTS.get(name, hint)


def _format(name: str, message: str, detail: str, hint: str) -> str:
    return f"[{name}] {message or detail} (hint: {hint})"


class Error(Exception):
    """A chiprt failure: .code (StatusCode), .name, .hint, .message."""

    default_code = StatusCode.InternalError

    def __init__(self, code=None, message: str = "", *, _what: str = None,
                 _hint_override: str = None):
        if isinstance(code, str) and not message:
            # Error("text"): a message with the class's default code.
            code, message = None, code
        if code is None:
            code = self.default_code
        try:
            code = StatusCode(int(code))
        except ValueError:
            code = StatusCode.InternalError
        name, detail, _hint = _chiprt.status_info(int(code))
        hint = python_hint(code, _hint_override)
        self.code = code
        self.name = name
        self.hint = hint
        self.message = message
        super().__init__(_what if _what is not None else _format(name, message, detail, hint))

    def __str__(self) -> str:
        return self.args[0] if self.args else ""


class ArgumentError(Error):
    """An argument, a config field or a view is invalid."""

    default_code = StatusCode.InvalidArgument


class StateError(Error):
    """The call does not fit the object's state (closed, not registered, inside a run, a Worker
    inherited by a forked child...)."""

    default_code = StatusCode.NotInitialized


class DeviceError(Error):
    """The device faulted, a kernel crashed or failed, or the chip timed out."""

    default_code = StatusCode.DeviceFaulted


class CancelledError(Error):
    """A run was not launched because it touches memory an earlier failed run wrote.

    A failed submitted run cancels exactly the later runs (submit or run) that pass any part of
    a buffer it wrote or was writing (its inout and output_existing arguments); the message names
    the failed run's sequence number and its error. A cancelled submitted run's own outputs count
    as written by that failure too; a failed or cancelled run() poisons nothing (its caller has
    the error at once, and may retry). The memory stays poisoned until the host rewrites it (copy_to or memset
    covering it) or frees it; reset() clears everything. Runs sharing no buffer run normally.
    """

    default_code = StatusCode.Cancelled


class BuildError(Error):
    """build_chip_object could not compile its sources (code BuildFailed); .output is the
    compiler's output."""

    default_code = StatusCode.BuildFailed

    def __init__(self, message: str = "", output: str = "", *, code=None, _what: str = None):
        super().__init__(code if code is not None else StatusCode.BuildFailed, message, _what=_what)
        self.output = output


_FAMILIES = {
    ArgumentError: (
        "InvalidArgument",
        "SignatureMismatch",
        "InvalidConfig",
        "TooManyArgs",
        "ViewOutOfBounds",
        "CallableIdOutOfRange",
        "InvalidDevicePointer",
    ),
    StateError: (
        "NotInitialized",
        "AlreadyClosed",
        "ReentrantCall",
        "UnknownCallable",
        "DuplicateCallable",
        "InheritedWorker",
    ),
    DeviceError: (
        "DeviceFaulted",
        "KernelCrashed",
        "OpExecuteTimeout",
        "KernelFault",
        "SchedulerTimeout",
        "StreamSyncTimeout",
    ),
    CancelledError: ("Cancelled",),
    BuildError: ("BuildFailed",),
}
_CLASS_OF = {StatusCode[name]: cls for cls, names in _FAMILIES.items() for name in names}


def error_class(code) -> type:
    """The exception class chiprt raises for `code` (a StatusCode or its value)."""
    try:
        return _CLASS_OF.get(StatusCode(int(code)), Error)
    except ValueError:
        return Error


def _from_native(code: int, message: str, hint: str) -> Error:
    """The exception object of a chiprt::Error (called by the C++ exception translator): its
    hint (the failure's own, or the code's) and C++ call names in its message in Python's
    terms."""
    cls = error_class(code)
    error = cls.__new__(cls)
    Error.__init__(error, code, _python_terms(message), _hint_override=hint)
    if cls is BuildError:
        error.output = ""
    return error


# Shown as chiprt.ArgumentError, not chiprt._errors.ArgumentError.
for _cls in (Error, ArgumentError, StateError, DeviceError, CancelledError, BuildError):
    _cls.__module__ = "chiprt"
