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
sets, indexing, ``matmul``/``@``/``tensordot``/``vecdot``, the ``linalg`` extension (products,
norms and the factorisations / solvers on cuSOLVER) and the ``fft`` extension (cuFFT), and ML
extensions (activations, normalizations, softmax family, ``xp.losses``, ``xp.random``, dropout,
``linear``).  Only what is listed in ``__all__`` is wired.  Default dtypes: float32, complex64,
int64; float16 and bfloat16 are extension dtypes that promote like the standard's floats (to
float32 with each other).

Layout (array-api-strict's): one module per chapter of the standard (``_creation_functions``,
``_data_type_functions``, ``_elementwise_functions``, ``_indexing_functions``,
``_linear_algebra_functions``, ``_manipulation_functions``, ``_searching_functions``,
``_set_functions``, ``_sorting_functions``, ``_statistical_functions``, ``_utility_functions``,
``_constants``, ``_info``, ``linalg``, ``fft``), one module per op family for the extensions
(``_<family>_extensions``, ``losses``, ``random``), and shared machinery in modules with one job:
``_dtypes`` / ``_promotion`` / ``_device`` / ``_dlpack`` at the bottom, ``_array_object`` above
them, then the bridges to the plans (``_dispatch``, ``_plans``, ``_copy``, ``_reduce``,
``_scan``, ``_unique``, ``_gemm``).  Imports go one way (no cycles): the Array methods reach
the function modules through ``_array_object.OPERATIONS``, bound at the end of this file.
"""

import sys as _sys

from baracuda_dsl.errors import UnsupportedError  # noqa: F401

from . import _copy, _elementwise_functions, _indexing_functions, _linear_algebra_functions
from . import losses  # noqa: F401  (xp.losses.<torch.nn.functional name>)
from . import fft  # noqa: F401  (xp.fft: the standard's FFT extension, on cuFFT)
from . import linalg  # noqa: F401  (xp.linalg: the standard's linear algebra extension)
from . import random  # noqa: F401  (xp.random.Generator / default_rng)
from ._array_object import OPERATIONS, Array
from ._constants import e, inf, nan, newaxis, pi  # noqa: F401
from ._creation_functions import (arange, asarray, empty, empty_like, eye, from_dlpack, full,
                                  full_like, linspace, meshgrid, ones, ones_like, tril, triu, zeros,
                                  zeros_like)
from ._data_type_functions import astype, can_cast, result_type
from ._device import Device, empty_cache
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
from ._indexing_functions import take, take_along_axis
from ._info import __array_namespace_info__
from ._linear_algebra_functions import matmul, matrix_transpose, tensordot, vecdot
from ._manipulation_functions import (ascontiguousarray, broadcast_arrays, broadcast_to, concat,
                                      expand_dims, flip, moveaxis, permute_dims, repeat, reshape,
                                      roll, squeeze, stack, tile, unstack)
from ._plans import set_index_checking
from ._searching_functions import (argmax, argmin, count_nonzero, nonzero, searchsorted,
                                   where)
from ._set_functions import unique_all, unique_counts, unique_inverse, unique_values
from ._sorting_functions import argsort, sort
from ._statistical_functions import (cumulative_prod, cumulative_sum, max, mean, min, prod,
                                     std, sum, var)
from ._utility_functions import all, any, diff  # noqa: A004

# ML extensions, one module per op family (baracuda_dsl.ops.<family>)
from ._elementwise_extensions import (addcdiv, addcmul, digamma, elu, erf, erfc, erfinv, fma,
                                      geglu, gelu, gelu_tanh, glu, hardshrink, hardsigmoid,
                                      hardswish, hardtanh, leaky_relu, lerp, lgamma, logit,
                                      masked_fill, mish, prelu, reglu, relu, relu6, selu, sigmoid,
                                      silu, softplus, softshrink, softsign, swiglu, tanhshrink,
                                      threshold)
from ._elementwise_extensions import __all__ as _elementwise_extension_names
from ._attention_extensions import (flash_attention, flash_attention_backward, rope,
                                    rope_backward, rope_cos_sin,
                                    scaled_dot_product_attention)
from ._conv_extensions import conv, conv_backward, conv_transpose
from ._unfold_extensions import fold, unfold
from ._interpolate_extensions import interpolate, interpolate_backward
from ._sampling_extensions import (affine_grid, affine_grid_backward, grid_sample,
                                   grid_sample_backward)
from ._roi_extensions import (batched_nms, nms, roi_align, roi_align_backward, roi_pool,
                              roi_pool_backward)
from ._gemm_extensions import linear
from ._pooling_extensions import (adaptive_avg_pool, adaptive_avg_pool_backward,
                                  adaptive_max_pool, adaptive_max_pool_backward, avg_pool,
                                  avg_pool_backward, max_pool, max_pool_backward)
from ._pooling_more_extensions import (fractional_max_pool2d, fractional_max_pool3d,
                                       fractional_max_pool_backward, lp_pool, lp_pool_backward,
                                       max_unpool, max_unpool_backward)
from ._histogram_extensions import bincount, histc, histogram
from ._indexing_extensions import gather, index_select, one_hot, scatter, scatter_add
from ._normalization_extensions import (batch_norm, group_norm, instance_norm, layer_norm,
                                        rms_norm)
from ._random_extensions import dropout, gumbel_softmax
from ._reduction_extensions import logsumexp, trace
from ._scan_extensions import cummax, cummin, cumprod, cumsum, flatnonzero, logcumsumexp
from ._segment_extensions import (embedding, embedding_bag, index_add, segment_max,
                                  segment_mean, segment_min, segment_prod, segment_sum)
from ._shape_extensions import pad, pixel_shuffle, pixel_unshuffle
from ._softmax_extensions import log_softmax, softmax, sparsemax
from ._graphs import CUDAGraph, current_stream, use_stream
from ._sorting_extensions import kthvalue, msort, topk, unique_consecutive

__array_api_version__ = "2024.12"


def asnumpy(x):
    """Host (numpy) copy of an Array (extension)."""
    return x.to_numpy()


# the functions behind the Array methods (they live above _array_object, which cannot import them)
OPERATIONS.bind(namespace=_sys.modules[__name__], binary=_elementwise_functions.binary,
                abs=abs, negative=negative, positive=positive, bitwise_invert=bitwise_invert,
                matmul=matmul, imatmul=_linear_algebra_functions.imatmul,
                advanced_getitem=_indexing_functions.advanced_getitem,
                setitem=_indexing_functions.setitem, contiguous_copy=_copy.contiguous_copy)

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
    *_elementwise_extension_names,
]
__all__ += ["argmax", "argmin", "count_nonzero", "diff", "logsumexp", "max", "mean", "min",
            "prod", "std", "sum", "trace", "var"]
__all__ += ["cumulative_sum", "cumulative_prod", "cumsum", "cumprod", "cummax", "cummin",
            "logcumsumexp", "nonzero", "flatnonzero"]
__all__ += ["sort", "argsort", "searchsorted", "topk", "kthvalue", "msort"]
__all__ += ["bincount", "histc", "histogram", "unique_all", "unique_consecutive",
            "unique_counts", "unique_inverse", "unique_values"]
__all__ += ["concat", "stack", "unstack", "moveaxis", "roll", "take", "take_along_axis", "pad",
            "pixel_shuffle", "pixel_unshuffle", "set_index_checking", "index_select", "gather",
            "scatter", "scatter_add", "index_add", "one_hot", "embedding", "embedding_bag",
            "segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod"]
__all__ += ["random", "losses", "dropout", "gumbel_softmax", "softmax", "log_softmax", "sparsemax"]
__all__ += ["flash_attention", "flash_attention_backward", "scaled_dot_product_attention",
            "rope", "rope_backward", "rope_cos_sin"]
__all__ += ["conv", "conv_transpose", "conv_backward", "unfold", "fold"]
__all__ += ["interpolate", "interpolate_backward"]
__all__ += ["grid_sample", "grid_sample_backward", "affine_grid", "affine_grid_backward"]
__all__ += ["roi_align", "roi_align_backward", "roi_pool", "roi_pool_backward", "nms",
            "batched_nms"]
__all__ += ["max_pool", "avg_pool", "adaptive_max_pool", "adaptive_avg_pool", "max_pool_backward",
            "avg_pool_backward", "adaptive_max_pool_backward", "adaptive_avg_pool_backward"]
__all__ += ["fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool_backward",
            "lp_pool", "lp_pool_backward", "max_unpool", "max_unpool_backward"]
__all__ += ["matmul", "tensordot", "vecdot", "linear", "linalg", "fft"]
__all__ += ["empty_cache", "CUDAGraph", "current_stream", "use_stream"]
