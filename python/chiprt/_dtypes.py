"""dtype mapping between chiprt and numpy, and the bf16 converters.

bf16 has no numpy dtype: bf16 data travels as its raw 16-bit patterns in uint16 arrays;
float32_to_bf16 / bf16_to_float32 convert (round to nearest, ties to even; NaN stays NaN).
"""

import numpy as np

from . import _chiprt
from ._enums import DataType


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
    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    rounded = ((bits + rounding) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(array, dtype=np.float32))
    if nan.any():
        rounded = np.where(nan, ((bits >> 16) | 0x40).astype(np.uint16), rounded)
    return rounded


def bf16_to_float32(array) -> np.ndarray:
    """float32 values of bf16 bit patterns (uint16)."""
    bits = np.ascontiguousarray(array, dtype=np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32)
