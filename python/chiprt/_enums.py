"""chiprt's enums as Python IntEnums, with the C++ values."""

import enum

from . import _chiprt


class DataType(enum.IntEnum):
    """Element types (chiprt::DataType). BF16 data travels as its raw 16-bit patterns (uint16)."""

    F32 = 0
    F16 = 1
    BF16 = 2
    F64 = 3
    I8 = 4
    I16 = 5
    I32 = 6
    I64 = 7
    U8 = 8
    U16 = 9
    U32 = 10
    U64 = 11
    BOOL = 12

    @property
    def itemsize(self) -> int:
        return _chiprt.element_size(int(self))

    def __str__(self) -> str:
        return _chiprt.dtype_name(int(self))


class CoreType(enum.IntEnum):
    """Compute core kinds (chiprt::CoreType)."""

    AIC = 0
    AIV = 1
    MIX = 2


class ArgTag(enum.IntEnum):
    """How a task uses a tensor argument (chiprt::ArgTag)."""

    IN = 0
    OUT = 1
    INOUT = 2
    OUTPUT_EXISTING = 3
    NO_DEP = 4


class RuntimeVariant(enum.IntEnum):
    """Runtime variants (chiprt::RuntimeVariant); DEFAULT is the Worker's own."""

    DEFAULT = 0
    HOST_BUILD_GRAPH = 1
    TENSORMAP_RINGBUFFER = 2

    def __str__(self) -> str:
        return "default" if self is RuntimeVariant.DEFAULT else _chiprt.runtime_name(int(self))


# Every chiprt::StatusCode by its C++ name, e.g. StatusCode.InvalidArgument == 1.
StatusCode = enum.IntEnum(
    "StatusCode",
    [(name, value) for name, value, _detail, _hint in _chiprt.status_codes()],
    module=__name__,
)
StatusCode.__doc__ = "chiprt status codes (chiprt::StatusCode), by their C++ names."
