"""chiprt's exceptions: chiprt.Error and one subclass per family of status codes.

A chiprt::Error thrown by the C++ runtime reaches Python as the class error_class(code) gives,
with .code (StatusCode), .name, .hint and .message; str(e) is the C++ what():
"[NAME] message (hint: ...)".
"""

from . import _chiprt
from ._enums import StatusCode


def _format(name: str, message: str, detail: str, hint: str) -> str:
    return f"[{name}] {message or detail} (hint: {hint})"


class Error(Exception):
    """A chiprt failure: .code (StatusCode), .name, .hint, .message."""

    default_code = StatusCode.InternalError

    def __init__(self, code=None, message: str = "", *, _what: str = None):
        if isinstance(code, str) and not message:
            # Error("text"): a message with the class's default code.
            code, message = None, code
        if code is None:
            code = self.default_code
        try:
            code = StatusCode(int(code))
        except ValueError:
            code = StatusCode.InternalError
        name, detail, hint = _chiprt.status_info(int(code))
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
    """build_chip_object could not compile its sources; .output is the compiler's output."""

    default_code = StatusCode.LoadFailed

    def __init__(self, message: str = "", output: str = "", *, code=None, _what: str = None):
        super().__init__(code if code is not None else StatusCode.LoadFailed, message, _what=_what)
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
}
_CLASS_OF = {StatusCode[name]: cls for cls, names in _FAMILIES.items() for name in names}


def error_class(code) -> type:
    """The exception class chiprt raises for `code` (a StatusCode or its value)."""
    try:
        return _CLASS_OF.get(StatusCode(int(code)), Error)
    except ValueError:
        return Error


def _from_native(code: int, message: str, what: str) -> Error:
    """The exception object of a chiprt::Error (called by the C++ exception translator)."""
    cls = error_class(code)
    error = cls.__new__(cls)
    Error.__init__(error, code, message, _what=what)
    return error


# Shown as chiprt.ArgumentError, not chiprt._errors.ArgumentError.
for _cls in (Error, ArgumentError, StateError, DeviceError, CancelledError, BuildError):
    _cls.__module__ = "chiprt"
