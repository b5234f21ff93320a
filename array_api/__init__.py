"""``array_api``: an array-API (2024.12) namespace over baracuda_dsl's GPU kernels.

    import array_api as xp
    x = xp.asarray(numpy_array)                 # host → device copy
    y = xp.rms_norm(x, (x.shape[-1],), w)       # dispatches to RMSNormPlan
    y.to_numpy()                                # device → host

Arrays live on CUDA devices in stream-ordered pool memory; views share memory; DLPack interop
with torch / cupy in both directions (``xp.from_dlpack``, ``torch.from_dlpack(x)``).  Only what
is listed in ``__all__`` is wired: anything else is absent (elementwise arithmetic, reductions,
... are not part of this seed yet).  Default dtypes: float32, complex64, int64.
"""

from baracuda_dsl.errors import UnsupportedError  # noqa: F401

from ._array_object import Array
from ._creation_functions import (asarray, empty, empty_like, from_dlpack, full, full_like, ones,
                                  ones_like, zeros, zeros_like)
from ._device import Device
from ._dtypes import (bfloat16, bool, complex64, complex128, finfo, float16, float32, float64,
                      iinfo, int8, int16, int32, int64, isdtype, uint8, uint16, uint32, uint64)
from ._extensions import batch_norm, group_norm, instance_norm, layer_norm, rms_norm
from ._info import __array_namespace_info__
from ._manipulation_functions import (ascontiguousarray, broadcast_to, expand_dims, flip,
                                      matrix_transpose, permute_dims, repeat, reshape, squeeze,
                                      tile)

__array_api_version__ = "2024.12"

newaxis = None
e, pi, inf, nan = 2.718281828459045, 3.141592653589793, float("inf"), float("nan")


def asnumpy(x):
    """Host (numpy) copy of an Array (extension)."""
    return x.to_numpy()


__all__ = [
    "__array_api_version__", "__array_namespace_info__", "Array", "Device", "UnsupportedError",
    "asarray", "empty", "empty_like", "from_dlpack", "full", "full_like", "ones", "ones_like",
    "zeros", "zeros_like", "asnumpy",
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "isdtype", "finfo", "iinfo",
    "broadcast_to", "expand_dims", "flip", "matrix_transpose", "permute_dims", "repeat", "reshape",
    "squeeze", "tile", "ascontiguousarray",
    "rms_norm", "layer_norm", "batch_norm", "group_norm", "instance_norm",
    "newaxis", "e", "pi", "inf", "nan",
]
