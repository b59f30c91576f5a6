"""dtype mapping between chiprt and numpy, and the bf16 converters.

bf16 has no numpy dtype: bf16 data travels as its raw 16-bit patterns in uint16 arrays;
float32_to_bf16 / bf16_to_float32 convert (round to nearest, ties to even; NaN stays NaN).
"""

import numpy as np

from . import _chiprt
from ._enums import DataType
from ._errors import ArgumentError


def to_numpy_dtype(dtype) -> np.dtype:
    """The numpy dtype chiprt data of `dtype` travels in (bf16: uint16)."""
    return np.dtype(_chiprt.numpy_dtype(dtype))


def from_numpy_dtype(dtype) -> DataType:
    """The chiprt DataType of a numpy dtype (uint16 maps to U16; bf16 must be asked for)."""
    return DataType(_chiprt.to_dtype(np.dtype(dtype)))


def to_dtype(dtype) -> DataType:
    """A DataType from a DataType, a name ("f32", "bf16") or a numpy dtype."""
    return DataType(_chiprt.to_dtype(dtype))


def float32_to_bf16(array) -> np.ndarray:
    """bf16 bit patterns (uint16) of float data, rounded to nearest even."""
    source = np.asarray(array)
    if source.dtype == np.float64 or source.dtype.kind in "iu" and source.dtype.itemsize > 2:
        # Rounded straight to bf16: through float32 first would round twice (a value just above
        # a bf16 tie becomes the tie, then rounds to even). float32 rounded to odd keeps the
        # information the second rounding needs.
        with np.errstate(over="ignore", invalid="ignore"):
            wide = source.astype(np.float64)
            narrow = wide.astype(np.float32)
            too_far = np.abs(narrow.astype(np.float64)) > np.abs(wide)
            narrow = np.where(too_far, np.nextafter(narrow, np.float32(0)), narrow).astype(np.float32)
            inexact = narrow.astype(np.float64) != wide
        odd = np.ascontiguousarray(narrow).view(np.uint32) | inexact.astype(np.uint32)
        array = np.ascontiguousarray(odd).view(np.float32)
    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    rounded = ((bits + rounding) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(array, dtype=np.float32))
    if nan.any():
        rounded = np.where(nan, ((bits >> 16) | 0x40).astype(np.uint16), rounded)
    return rounded


def bf16_to_float32(array) -> np.ndarray:
    """float32 values of bf16 bit patterns (uint16)."""
    source = np.asarray(array)
    # Bit patterns are integers in [0, 0xFFFF]: a float, a negative or a wider value would be
    # cast silently into another pattern.
    if source.dtype.kind not in "ui" or (source.size and (source.min() < 0 or source.max() > 0xFFFF)):
        raise ArgumentError(f"bf16_to_float32 takes bf16 bit patterns (integers in [0, 0xFFFF], "
                            f"such as a uint16 array), not {source.dtype} data")
    bits = np.ascontiguousarray(source, dtype=np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32)
