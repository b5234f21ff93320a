"""``array_api``: an array-API (2024.12) namespace over baracuda_dsl's GPU kernels.

    import array_api as xp
    x = xp.asarray(numpy_array)                 # host → device copy
    y = xp.sin(x) * 2 + 1                       # elementwise functions and operators
    z = xp.swiglu(y, axis=-1)                   # ML extensions
    w = xp.rms_norm(z, (z.shape[-1],), g)       # dispatches to RMSNormPlan
    w.to_numpy()                                # device → host

Arrays live on CUDA devices in stream-ordered pool memory; views share memory; DLPack interop
with torch / cupy in both directions (``xp.from_dlpack``, ``torch.from_dlpack(x)``).

Wired: creation and manipulation functions, every elementwise function of the standard and the
Array operators (Python scalars per 2024.12; one GPU kernel per call), statistics, sorting,
sets, indexing, ``matmul``/``@``/``tensordot``/``vecdot`` and the ``linalg`` extension (products
only; factorisations raise UnsupportedError), and ML extensions (activations, normalizations,
softmax family, ``xp.losses``, ``xp.random``, dropout, ``linear``).  Only what is listed in
``__all__`` is wired: anything else (fft, ...) is absent.  Default dtypes: float32, complex64, int64; float16 and bfloat16 are extension dtypes that
promote like the standard's floats (to float32 with each other).
"""

from baracuda_dsl.errors import UnsupportedError  # noqa: F401

from ._activations import (addcdiv, addcmul, digamma, elu, erf, erfc, erfinv, fma, geglu, gelu,
                           gelu_tanh, glu, hardshrink, hardsigmoid, hardswish, hardtanh,
                           leaky_relu, lerp, lgamma, logit, mish, prelu, reglu, relu, relu6,
                           selu, sigmoid, silu, softplus, softshrink, softsign, swiglu, tanhshrink,
                           threshold)
from ._activations import __all__ as _activation_names
from ._array_object import Array
from ._creation_functions import (arange, asarray, empty, empty_like, eye, from_dlpack, full,
                                  full_like, linspace, meshgrid, ones, ones_like, tril, triu, zeros,
                                  zeros_like)
from ._data_type_functions import astype, can_cast, result_type
from ._device import Device
from ._dtypes import (bfloat16, bool, complex64, complex128, finfo, float16, float32, float64,
                      iinfo, int8, int16, int32, int64, isdtype, uint8, uint16, uint32, uint64)
from ._elementwise_functions import (abs, acos, acosh, add, asin, asinh, atan, atan2, atanh,
                                     bitwise_and, bitwise_invert, bitwise_left_shift, bitwise_or,
                                     bitwise_right_shift, bitwise_xor, ceil, clip, conj, copysign,
                                     cos, cosh, divide, equal, exp, expm1, floor, floor_divide,
                                     greater, greater_equal, hypot, imag, isfinite, isinf, isnan,
                                     less, less_equal, log, log1p, log2, log10, logaddexp,
                                     logical_and, logical_not, logical_or, logical_xor, maximum,
                                     minimum, multiply, negative, nextafter, not_equal, positive,
                                     pow, real, reciprocal, remainder, round, sign, signbit, sin,
                                     sinh, sqrt, square, subtract, tan, tanh, trunc)
from ._elementwise_functions import __all__ as _elementwise_names
from ._extensions import batch_norm, group_norm, instance_norm, layer_norm, rms_norm
from ._info import __array_namespace_info__
from ._searching_functions import where
from ._statistical_functions import (all, any, argmax, argmin, count_nonzero, diff,  # noqa: A004
                                     logsumexp, max, mean, min, prod, std, sum, trace, var)
from ._cumulative_functions import (cummax, cummin, cumprod, cumsum, cumulative_prod,
                                    cumulative_sum, logcumsumexp)
from ._nonzero import flatnonzero, nonzero
from ._sorting_functions import argsort, kthvalue, msort, searchsorted, sort, topk
from ._counting_functions import bincount, histc, histogram
from ._set_functions import (unique_all, unique_consecutive, unique_counts, unique_inverse,
                             unique_values)
from ._manipulation_functions import (ascontiguousarray, broadcast_arrays, broadcast_to, concat,
                                      expand_dims, flip, matrix_transpose, moveaxis, permute_dims,
                                      repeat, reshape, roll, squeeze, stack, tile, unstack)
from ._indexing_functions import take, take_along_axis
from ._layout_extensions import pad, pixel_shuffle, pixel_unshuffle
from ._indexing_extensions import (embedding, embedding_bag, gather, index_add, index_select,
                                   masked_fill, one_hot, scatter, scatter_add, segment_max,
                                   segment_mean, segment_min, segment_prod, segment_sum)
from ._indexing_extensions import __all__ as _indexing_extension_names
from ._plans import set_index_checking
from . import random  # noqa: E402  (xp.random.Generator / default_rng)
from . import losses  # noqa: E402  (xp.losses.<torch.nn.functional name>)
from ._random_extensions import dropout, gumbel_softmax
from ._softmax_extensions import log_softmax, softmax, sparsemax
from ._linear_algebra_functions import linear, matmul, tensordot, vecdot
from . import linalg  # noqa: E402  (xp.linalg: the standard's linear algebra extension)

__array_api_version__ = "2024.12"

newaxis = None
e, pi, inf, nan = 2.718281828459045, 3.141592653589793, float("inf"), float("nan")


def asnumpy(x):
    """Host (numpy) copy of an Array (extension)."""
    return x.to_numpy()


__all__ = [
    "__array_api_version__", "__array_namespace_info__", "Array", "Device", "UnsupportedError",
    "asarray", "empty", "empty_like", "from_dlpack", "full", "full_like", "ones", "ones_like",
    "zeros", "zeros_like", "asnumpy", "arange", "eye", "linspace", "meshgrid", "tril", "triu",
    "astype", "can_cast", "result_type", "where", "all", "any", "broadcast_arrays",
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "isdtype", "finfo", "iinfo",
    "broadcast_to", "expand_dims", "flip", "matrix_transpose", "permute_dims", "repeat", "reshape",
    "squeeze", "tile", "ascontiguousarray",
    "rms_norm", "layer_norm", "batch_norm", "group_norm", "instance_norm",
    "newaxis", "e", "pi", "inf", "nan",
    *_elementwise_names,
    *_activation_names,
]
__all__ += ["argmax", "argmin", "count_nonzero", "diff", "logsumexp", "max", "mean", "min",
            "prod", "std", "sum", "trace", "var"]
__all__ += ["cumulative_sum", "cumulative_prod", "cumsum", "cumprod", "cummax", "cummin",
            "logcumsumexp", "nonzero", "flatnonzero"]
__all__ += ["sort", "argsort", "searchsorted", "topk", "kthvalue", "msort"]
__all__ += ["bincount", "histc", "histogram", "unique_all", "unique_consecutive",
            "unique_counts", "unique_inverse", "unique_values"]
__all__ += ["concat", "stack", "unstack", "moveaxis", "roll", "take", "take_along_axis", "pad",
            "pixel_shuffle", "pixel_unshuffle", "set_index_checking", *_indexing_extension_names]
__all__ += ["random", "losses", "dropout", "gumbel_softmax", "softmax", "log_softmax", "sparsemax"]
__all__ += ["matmul", "tensordot", "vecdot", "linear", "linalg"]
