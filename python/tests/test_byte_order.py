"""Byte order: arrays of the other byte order than this host's (">i4" on a little-endian host) go in
converted to native order on every path that takes arrays (upload, copy_to; numpy, the buffer
protocol, DLPack), and an out= array of the other order is refused (copy_from, download): the
device holds values in native order."""

import numpy as np
import pytest

import chiprt
from conftest import DLPackOnly


def swapped(dtype) -> np.dtype:
    """`dtype` in the byte order that is not this host's."""
    return np.dtype(dtype).newbyteorder("S")


def other_order(values, dtype):
    array = np.asarray(values, dtype=swapped(dtype))
    assert not array.dtype.isnative
    return array


@pytest.mark.parametrize("dtype", ["i4", "f4", "u2", "i8", "f8"])
def test_upload_converts_to_native_order(worker, dtype):
    values = np.arange(6).reshape(2, 3)
    tensor = worker.upload(other_order(values, dtype))  # was byte-swapped on the device
    assert tensor.dtype is chiprt.from_numpy_dtype(dtype)
    got = worker.download(tensor)
    assert got.dtype.isnative
    np.testing.assert_array_equal(got, values.astype(dtype))


def test_upload_with_a_dtype_converts_from_the_other_order(worker):
    data = other_order([1.0, -2.5, 3.0], "f4")
    np.testing.assert_array_equal(worker.download(worker.upload(data, dtype="f64")), [1.0, -2.5, 3.0])
    bf16 = worker.download(worker.upload(data, dtype="bf16"))
    np.testing.assert_array_equal(bf16, chiprt.float32_to_bf16(np.array([1.0, -2.5, 3.0], np.float32)))


def test_copy_to_converts_to_native_order(worker):
    buffer = worker.malloc(16)
    worker.copy_to(buffer, other_order([0, 1, 2, 3], "i4"))
    np.testing.assert_array_equal(worker.copy_from(buffer, dtype="i32"), [0, 1, 2, 3])
    worker.copy_to(buffer, other_order([7, 9], "i4"), offset=8)
    np.testing.assert_array_equal(worker.copy_from(buffer, dtype="i32"), [0, 1, 7, 9])


def test_buffer_protocol_of_the_other_order_is_converted(worker):
    view = memoryview(other_order([5, 6, 7], "i4"))
    assert view.format in (">i", "<i")
    np.testing.assert_array_equal(worker.download(worker.upload(view)), [5, 6, 7])
    buffer = worker.malloc(12)
    worker.copy_to(buffer, view)
    np.testing.assert_array_equal(worker.copy_from(buffer, dtype="i32"), [5, 6, 7])


def test_dlpack_paths(worker):
    # DLPack carries native order only: a native array goes through it as it is...
    np.testing.assert_array_equal(worker.download(worker.upload(DLPackOnly(np.arange(4, dtype=np.int32)))),
                                  [0, 1, 2, 3])
    # ...and an exporter that cannot export (numpy refuses another byte order) is a chiprt error
    # naming the export, not a BufferError from inside the call.
    with pytest.raises(chiprt.ArgumentError, match="DLPack"):
        worker.upload(DLPackOnly(other_order([1, 2], "i4")))
    with pytest.raises(chiprt.ArgumentError, match="DLPack"):
        worker.copy_to(worker.malloc(8), DLPackOnly(other_order([1, 2], "i4")))


def test_out_of_the_other_order_is_refused(worker):
    tensor = worker.upload(np.arange(4, dtype=np.int32))
    out = np.zeros(4, dtype=swapped("i4"))
    with pytest.raises(chiprt.ArgumentError, match="byte order") as info:
        worker.download(tensor, out=out)
    assert info.value.name == "InvalidArgument"
    with pytest.raises(chiprt.ArgumentError, match="byte order"):
        worker.copy_from(tensor.buffer, out=out)  # was filled with byte-swapped values
    assert not out.any()
    native = np.zeros(4, dtype=np.int32)
    worker.copy_from(tensor.buffer, out=native)
    np.testing.assert_array_equal(native, [0, 1, 2, 3])
