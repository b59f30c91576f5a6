"""Worker lifecycle, device memory round trips, Tensor views and TaskArgs."""

import threading

import numpy as np
import pytest

import chiprt
from conftest import DLPackOnly


def test_worker_lifecycle_and_context_manager():
    w = chiprt.Worker(clusters=2)
    assert w.initialized and not w.closed
    assert w.runtime is chiprt.RuntimeVariant.HOST_BUILD_GRAPH
    assert w.runs_in_flight == 0 and w.reset_count == 0
    w.close()
    assert w.closed and not w.initialized
    w.close()  # twice is fine
    with chiprt.Worker(runtime="tensormap_ringbuffer") as w2:
        assert w2.runtime is chiprt.RuntimeVariant.TENSORMAP_RINGBUFFER
        buf = w2.malloc(64)
    assert w2.closed
    with pytest.raises(chiprt.StateError) as info:
        w2.free(buf)
    assert info.value.code is chiprt.StatusCode.AlreadyClosed


def test_worker_options_are_checked():
    with pytest.raises(chiprt.ArgumentError, match="unknown Worker option 'clusterz'"):
        chiprt.Worker(clusterz=3)
    with pytest.raises(chiprt.ArgumentError, match="not a runtime variant"):
        chiprt.Worker(runtime="ring")
    with pytest.raises(chiprt.ArgumentError, match="core_execution"):
        chiprt.Worker(core_execution="gpu")
    with pytest.raises(chiprt.Error):
        chiprt.Worker(clusters=1000)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int32, np.int64, np.uint16, np.uint64, np.bool_])
def test_copy_round_trip(worker, dtype):
    data = (np.arange(60) % 7).astype(dtype).reshape(3, 4, 5)
    buf = worker.malloc(data.nbytes + 16)
    worker.copy_to(buf, data, offset=16)
    back = worker.copy_from(buf, dtype=dtype, shape=(3, 4, 5), offset=16)
    np.testing.assert_array_equal(back, data)
    out = np.empty_like(data)
    worker.copy_from(buf, out=out, offset=16)
    np.testing.assert_array_equal(out, data)
    worker.free(buf)


def test_copy_accepts_lists_buffer_protocol_non_contiguous_and_dlpack(worker):
    buf = worker.malloc(64)
    worker.copy_to(buf, bytes(range(16)))
    np.testing.assert_array_equal(worker.copy_from(buf, shape=16), np.arange(16, dtype=np.uint8))
    worker.copy_to(buf, memoryview(bytearray(b"\x05" * 8)))
    assert worker.copy_from(buf, shape=8).tolist() == [5] * 8
    worker.copy_to(buf, np.array([[1, 2], [3, 4]], np.int32).T)  # made C-contiguous
    assert worker.copy_from(buf, dtype="i32", shape=4).tolist() == [1, 3, 2, 4]
    worker.copy_to(buf, [1.5, 2.5])
    assert worker.copy_from(buf, dtype=np.float64, shape=2).tolist() == [1.5, 2.5]

    worker.copy_to(buf, DLPackOnly(np.arange(4, dtype=np.float32)))
    assert worker.copy_from(buf, dtype="f32", shape=4).tolist() == [0, 1, 2, 3]


def test_a_cpu_torch_tensor_goes_in_and_its_shape_comes_back(worker):
    torch = pytest.importorskip("torch")  # python3-torch is welcome, not required
    source = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()  # non-contiguous view
    tensor = worker.upload(source)
    assert tensor.shape == (4, 3) and tensor.dtype is chiprt.DataType.F32
    np.testing.assert_array_equal(worker.download(tensor), source.numpy())


def test_memset_and_bytes_in_use(worker):
    before = worker.device_bytes_in_use
    buf = worker.malloc(32)
    assert worker.device_bytes_in_use >= before + 32
    worker.memset(buf, 0xAB, 32)
    assert worker.copy_from(buf).tolist() == [0xAB] * 32
    worker.memset(buf, 0)
    assert not worker.copy_from(buf).any()
    worker.free(buf)
    assert worker.device_bytes_in_use == before


def test_copies_outside_the_buffer_are_argument_errors(worker):
    buf = worker.malloc(16)
    with pytest.raises(chiprt.ArgumentError, match="do not fit"):
        worker.copy_to(buf, np.zeros(5, np.float32))
    with pytest.raises(chiprt.ArgumentError, match="do not fit"):
        worker.copy_to(buf, np.zeros(4, np.float32), offset=4)
    with pytest.raises(chiprt.ArgumentError):
        worker.copy_from(buf, out=np.zeros(8, np.float32))
    with pytest.raises(chiprt.ArgumentError):
        worker.memset(buf, 0, 17)
    with pytest.raises(chiprt.ArgumentError):
        worker.copy_from(buf, out=np.zeros((4, 4), np.float32)[:, 0])


def test_freed_buffer_is_refused(worker):
    buf = worker.malloc(16)
    worker.free(buf)
    with pytest.raises(chiprt.ArgumentError) as info:
        worker.copy_to(buf, np.zeros(4, np.float32))
    assert info.value.code is chiprt.StatusCode.InvalidDevicePointer
    with pytest.raises(chiprt.ArgumentError):
        worker.free(buf)


def test_buffer_value_semantics(worker):
    a = worker.malloc(8)
    b = worker.malloc(8)
    assert a == chiprt.Buffer(a.addr, a.size) and a != b and a.size == 8
    assert len({a, chiprt.Buffer(a.addr, a.size), b}) == 2
    assert "Buffer(addr=0x" in repr(a)


def test_upload_download_preserves_shape_and_dtype(worker):
    for data in [np.arange(24, dtype=np.float32).reshape(2, 3, 4), np.arange(5, dtype=np.int64),
                 np.array([True, False, True]), np.float64(3.5)]:
        t = worker.upload(data)
        assert t.dtype is chiprt.from_numpy_dtype(np.asarray(data).dtype)
        back = worker.download(t)
        assert back.dtype == np.asarray(data).dtype
        np.testing.assert_array_equal(back.reshape(np.shape(data)), data)
        worker.free(t.buffer)


def test_upload_bf16(worker):
    values = np.array([1.0, -0.5, 2.0], np.float32)
    t = worker.upload(values, dtype="bf16")
    assert t.dtype is chiprt.DataType.BF16
    raw = worker.download(t)
    assert raw.dtype == np.uint16
    np.testing.assert_array_equal(chiprt.bf16_to_float32(raw), values)
    t2 = worker.upload(np.arange(4), dtype="f32")
    assert worker.download(t2).dtype == np.float32


def test_tensor_views_slices_transpose_and_strided_download(worker):
    data = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
    t = worker.upload(data)
    assert t.shape == (4, 6) and t.strides == (6, 1) and t.ndim == 2 and t.numel == 24
    assert t.is_contiguous and t.nbytes == 96 and t.start_offset == 0
    assert "f32" in repr(t)
    v = t.view([2, 3], [1, 2])
    assert v.shape == (2, 3) and not v.is_contiguous
    np.testing.assert_array_equal(worker.download(v), data[1:3, 2:5])
    s = t.slice(1, 1, 6, 2)
    np.testing.assert_array_equal(worker.download(s), data[:, 1:6:2])
    tt = t.transpose(0, 1)
    assert tt.shape == (6, 4) and tt.strides == (1, 6)
    np.testing.assert_array_equal(worker.download(tt), data.T)
    np.testing.assert_array_equal(worker.download(t.permute([1, 0])), data.T)
    np.testing.assert_array_equal(worker.download(t.reshape([2, 12])), data.reshape(2, 12))
    made = chiprt.Tensor.make(t.buffer, [5], "f32", start_offset=3)
    np.testing.assert_array_equal(worker.download(made), data.reshape(-1)[3:8])
    with pytest.raises(chiprt.ArgumentError) as info:
        t.view([3, 3], [2, 0])
    assert info.value.code is chiprt.StatusCode.ViewOutOfBounds
    with pytest.raises(chiprt.ArgumentError):
        chiprt.Tensor.make(t.buffer, [100], "f32")
    with pytest.raises(chiprt.ArgumentError):
        tt.reshape([24])  # not contiguous


def test_download_into_mismatched_out_is_an_argument_error(worker):
    t = worker.upload(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(chiprt.ArgumentError, match="dtype"):
        worker.download(t, out=np.empty((2, 3), np.float64))
    with pytest.raises(chiprt.ArgumentError, match="shape"):
        worker.download(t, out=np.empty((3, 2), np.float32))
    out = np.empty((2, 3), np.float32)
    worker.download(t, out=out)
    np.testing.assert_array_equal(out, np.arange(6).reshape(2, 3))


def test_task_args_building_and_limits(worker):
    t = worker.upload(np.zeros(4, np.float32))
    args = chiprt.TaskArgs()
    assert args.input(t) is args
    args.inout(t).output_existing(t).no_dep(t).out([2, 2], "f16")
    args.scalar(7).scalar(1.5).scalar(1.5, "f32").scalar(-1, "i32").scalar(2**64 - 1).scalar(np.float32(2.0))
    args.after(0)
    assert (args.tensor_count, args.scalar_count, args.dep_count) == (5, 6, 1)
    assert args.tag(0) is chiprt.ArgTag.IN and args.tag(4) is chiprt.ArgTag.OUT
    assert args.tensor(0) == t
    assert args.scalar_bits(0) == 7
    assert args.scalar_bits(1) == np.float64(1.5).view(np.uint64)
    assert args.scalar_bits(2) == np.float32(1.5).view(np.uint32)
    assert args.scalar_bits(3) == 0xFFFFFFFF
    assert args.scalar_bits(4) == 2**64 - 1
    assert args.scalar_bits(5) == np.float32(2.0).view(np.uint32)
    with pytest.raises(chiprt.ArgumentError, match="predicate"):
        args.when(t)  # a float flag
    args.when(worker.upload(np.ones(1, np.int32)))
    assert args.has_predicate
    with pytest.raises(chiprt.ArgumentError):
        args.scalar(300, "u8")
    with pytest.raises(chiprt.ArgumentError):
        args.scalar("x")
    with pytest.raises(chiprt.ArgumentError):
        args.tensor(9)
    full = chiprt.TaskArgs()
    for _ in range(chiprt.MAX_TASK_TENSORS):
        full.input(t)
    with pytest.raises(chiprt.ArgumentError) as info:
        full.input(t)
    assert info.value.code is chiprt.StatusCode.TooManyArgs
    scalars = chiprt.TaskArgs()
    for i in range(chiprt.MAX_TASK_SCALARS):
        scalars.scalar(i)
    with pytest.raises(chiprt.ArgumentError, match="TooManyArgs"):
        scalars.scalar(0)


def test_signature():
    sig = chiprt.signature(["in", chiprt.ArgTag.OUT, "output_existing"], scalars=2)
    assert sig.tags == (chiprt.ArgTag.IN, chiprt.ArgTag.OUT, chiprt.ArgTag.OUTPUT_EXISTING)
    assert sig.tensor_count == 3 and sig.scalar_count == 2
    with pytest.raises(chiprt.ArgumentError):
        chiprt.signature(["sideways"])
    with pytest.raises(chiprt.ArgumentError) as info:
        chiprt.signature(["in"] * 17)
    assert info.value.code is chiprt.StatusCode.TooManyArgs


def test_copies_from_threads_release_the_gil(worker):
    buf = worker.malloc(1 << 20)
    data = np.arange(1 << 18, dtype=np.float32)
    errors = []

    def copy_loop():
        try:
            for _ in range(20):
                worker.copy_to(buf, data)
                assert worker.copy_from(buf, dtype="f32").sum() == data.sum()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=copy_loop) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
