"""Import, version, enums, dtype mapping (bf16 included) and the error classes."""

import numpy as np
import pytest

import chiprt


def test_import_and_version():
    assert chiprt.__version__ == "0.1.0"
    assert chiprt.version() == "0.1.0"
    for name in chiprt.__all__:
        assert hasattr(chiprt, name), name


def test_enums_equal_the_cpp_values():
    assert [m.name for m in chiprt.DataType] == [
        "F32", "F16", "BF16", "F64", "I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "BOOL"
    ]
    for member in chiprt.DataType:
        assert chiprt._chiprt.dtype_name(int(member)) == member.name.lower()
        assert chiprt.to_dtype(member.name.lower()) is member
    assert chiprt.DataType.F32 == 0 and chiprt.DataType.BOOL == 12
    assert (chiprt.CoreType.AIC, chiprt.CoreType.AIV, chiprt.CoreType.MIX) == (0, 1, 2)
    assert chiprt.ArgTag.OUTPUT_EXISTING == 3 and chiprt.ArgTag.NO_DEP == 4
    assert chiprt.RuntimeVariant.TENSORMAP_RINGBUFFER == 2
    assert str(chiprt.RuntimeVariant.HOST_BUILD_GRAPH) == "host_build_graph"
    assert chiprt.StatusCode.Ok == 0
    assert chiprt.StatusCode.InvalidArgument == 1
    assert chiprt.StatusCode.Cancelled == 38
    assert chiprt.StatusCode.InheritedWorker == 39
    assert len(chiprt.StatusCode) == len(chiprt._chiprt.status_codes())


@pytest.mark.parametrize(
    "dtype, np_dtype",
    [
        ("f32", np.float32), ("f16", np.float16), ("f64", np.float64), ("i8", np.int8),
        ("i16", np.int16), ("i32", np.int32), ("i64", np.int64), ("u8", np.uint8),
        ("u16", np.uint16), ("u32", np.uint32), ("u64", np.uint64), ("bool", np.bool_),
    ],
)
def test_dtype_mapping_round_trips(dtype, np_dtype):
    dt = chiprt.to_dtype(dtype)
    assert chiprt.to_numpy_dtype(dt) == np.dtype(np_dtype)
    assert chiprt.from_numpy_dtype(np_dtype) is dt
    assert chiprt.from_numpy_dtype(np.dtype(np_dtype)) is dt
    assert chiprt.to_dtype(np.zeros(1, np_dtype).dtype) is dt


def test_bf16_travels_as_uint16_and_converts_round_to_nearest_even():
    assert chiprt.to_numpy_dtype("bf16") == np.dtype(np.uint16)
    assert chiprt.to_numpy_dtype(chiprt.DataType.BF16) == np.dtype(np.uint16)
    values = np.array([0.0, 1.0, -2.5, 3.140625, 65280.0, np.inf, -np.inf], np.float32)
    bits = chiprt.float32_to_bf16(values)
    assert bits.dtype == np.uint16
    np.testing.assert_array_equal(chiprt.bf16_to_float32(bits), values)
    # 1 + 2^-8 is halfway between two bf16 values: ties go to the even one (1.0); just above it
    # rounds up.
    halfway = np.array([1.0 + 2.0**-8, 1.0 + 2.0**-8 + 2.0**-16, 1.0 + 3 * 2.0**-8], np.float32)
    np.testing.assert_array_equal(chiprt.bf16_to_float32(chiprt.float32_to_bf16(halfway)),
                                  np.array([1.0, 1.0 + 2.0**-7, 1.0 + 2.0**-6], np.float32))
    assert np.isnan(chiprt.bf16_to_float32(chiprt.float32_to_bf16(np.array([np.nan], np.float32))))[0]


def test_unknown_dtype_is_an_argument_error():
    with pytest.raises(chiprt.ArgumentError, match="not a data type"):
        chiprt.to_dtype("f128")
    with pytest.raises(chiprt.ArgumentError, match="no chiprt data type"):
        chiprt.from_numpy_dtype(np.complex64)
    with pytest.raises(chiprt.ArgumentError):
        chiprt.to_dtype(99)


def test_error_carries_code_name_hint_message():
    with pytest.raises(chiprt.ArgumentError) as info:
        chiprt._chiprt._raise_error(int(chiprt.StatusCode.ViewOutOfBounds), "dim 1 is out")
    e = info.value
    assert e.code is chiprt.StatusCode.ViewOutOfBounds
    assert e.name == "ViewOutOfBounds"
    assert e.message == "dim 1 is out"
    assert e.hint.startswith("check the shape")
    assert str(e) == f"[ViewOutOfBounds] dim 1 is out (hint: {e.hint})"


@pytest.mark.parametrize(
    "code, cls",
    [
        ("InvalidArgument", chiprt.ArgumentError), ("TooManyArgs", chiprt.ArgumentError),
        ("InvalidDevicePointer", chiprt.ArgumentError), ("AlreadyClosed", chiprt.StateError),
        ("UnknownCallable", chiprt.StateError), ("ReentrantCall", chiprt.StateError),
        ("InheritedWorker", chiprt.StateError),
        ("KernelCrashed", chiprt.DeviceError), ("SchedulerTimeout", chiprt.DeviceError),
        ("Cancelled", chiprt.CancelledError), ("OutOfDeviceMemory", chiprt.Error),
        ("LoadFailed", chiprt.Error), ("UnsupportedFeature", chiprt.Error),
        ("BuildFailed", chiprt.BuildError),
    ],
)
def test_error_families(code, cls):
    status = chiprt.StatusCode[code]
    assert chiprt.error_class(status) is cls
    with pytest.raises(cls) as info:
        chiprt._chiprt._raise_error(int(status), "x")
    assert type(info.value) is cls
    assert isinstance(info.value, chiprt.Error)
    assert info.value.code is status


def test_errors_can_be_raised_from_python():
    e = chiprt.ArgumentError(chiprt.StatusCode.SignatureMismatch, "mine")
    assert e.name == "SignatureMismatch" and e.message == "mine"
    assert str(e).startswith("[SignatureMismatch] mine (hint: ")
    assert chiprt.Error("plain").code is chiprt.StatusCode.InternalError
    b = chiprt.BuildError("did not compile", output="x.cpp:1: error")
    assert b.code is chiprt.StatusCode.BuildFailed and b.output == "x.cpp:1: error"
    assert issubclass(chiprt.BuildError, chiprt.Error)
