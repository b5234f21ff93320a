"""The GEMM driver of the linear algebra functions and ``linear``: operand checks and dtype
promotion, and ``gemm`` — c = act(alpha · a @ b + beta · c + bias) on
:class:`~baracuda_dsl.ops.gemm.gemm.GemmPlan` (the batch folded into M when b is shared and a's /
c's batch and row dims collapse to one stride: one launch) or
:class:`~baracuda_dsl.ops.gemm.gemm_batched.BatchedGemmPlan` (the batch dims of a, b and c
collapsed jointly, one launch per remaining outer index).  Plans are selected once per descriptor
through ``_plans.select`` and run on the current stream.  Operands are strided views
(transposes, slices, stride-0 broadcasts); ``tensor_core_ready`` copies half-type operands with no
unit stride in their matrix dims so that they reach the tensor-core path.
"""

from __future__ import annotations

import builtins
import itertools

from baracuda_dsl import dtypes as _d
from baracuda_dsl.errors import DeviceMismatchError, UnsupportedError
from baracuda_dsl.plan import collapse_dims, prod
from baracuda_dsl.tensor import TensorView

from . import _dispatch
from . import _plans
from ._array_object import Array
from ._dtypes import FP8_DTYPES
from ._manipulation_functions import ascontiguousarray, permute_dims
from ._promotion import result_type

#: half types: tensor cores with float32 accumulate
HALF_DTYPES = (_d.float16, _d.bfloat16)
#: the dtypes GemmPlan computes in
GEMM_FLOAT_DTYPES = (_d.float16, _d.bfloat16, _d.float32, _d.float64)
#: complex dtype → the real dtype of its parts
COMPLEX_PART = {_d.complex64: _d.float32, _d.complex128: _d.float64}


# ------------------------------------------------------------------------------ validation
def check_arrays(name: str, *xs) -> None:
    """TypeError unless every one of ``xs`` is an Array, DeviceMismatchError unless they share
    a device."""
    for i, x in enumerate(xs):
        if not isinstance(x, Array):
            raise TypeError(f"{name}: x{i + 1} must be an array_api Array, got "
                            f"{type(x).__name__}")
    for x in xs[1:]:
        if x.device != xs[0].device:
            raise DeviceMismatchError(f"{name}: arrays on {xs[0].device} and {x.device}")


def numeric_dtype(name: str, *xs):
    """The promoted dtype of ``xs`` (TypeError where the standard defines none, or for bool);
    UnsupportedError for fp8 (storage-only)."""
    for x in xs:
        if x.dtype in FP8_DTYPES:
            raise UnsupportedError(f"{name}: {x.dtype.name} arrays are storage-only in this "
                                   f"namespace (astype them to float16/bfloat16/float32 first)")
    dt = result_type(*xs)
    if dt == _d.bool_:
        raise TypeError(f"{name}: only numeric dtypes are allowed, got bool")
    return dt


def convert(x: Array, dt) -> Array:
    """``x`` converted to ``dt`` (x itself when it has that dtype)."""
    if x.dtype == dt:
        return x
    return _dispatch.cast(x, dt)


# ---------------------------------------------------------------------------- GEMM driver
def group_stride(shape, strides):
    """The single stride of ``shape`` dims merged (row-major) into one, or None when they do
    not merge (extent-1 dims are ignored; 0 when every extent is 1)."""
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]
    if not dims:
        return 0
    if any(n == 0 for n, _ in dims):
        return dims[-1][1]
    for (_, s0), (n1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * n1:
            return None
    return dims[-1][1]


def _tv(x: Array, offset: int, shape, strides) -> TensorView:
    """A trusted view of x's memory at element ``offset`` with the given shape / strides."""
    return TensorView._trusted(x._ptr + offset * x.dtype.itemsize, tuple(shape), tuple(strides),
                               x.dtype, x.device.ordinal, x)


def gemm(a: Array, b: Array, c: Array, *, alpha: float = 1.0, beta: float = 0.0,
         epilogue: str = "identity", bias=None) -> None:
    """c = act(alpha · a @ b + beta · c + bias) for a (B..., M, K), b (B..., K, N), c (B..., M, N)
    views of one batch shape (stride 0 = broadcast; c not broadcast); a and b one GEMM dtype,
    c its output dtype."""
    from baracuda_dsl.ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan
    from baracuda_dsl.ops.gemm.gemm_batched import (BatchedGemmArgs, BatchedGemmDescriptor,
                                                    BatchedGemmPlan)

    if c.size == 0:
        return
    batch = tuple(c.shape[:-2])
    M, N = c.shape[-2:]
    K = a.shape[-1]
    dt, od = a.dtype, c.dtype
    nb = prod(batch)
    bv = None if bias is None else bias.__baracuda_view__()
    shared_b = all(n == 1 or s == 0 for n, s in zip(batch, b.strides[:-2]))
    if shared_b:
        ra = group_stride(a.shape[:-1], a.strides[:-1])
        rc = group_stride(c.shape[:-1], c.strides[:-1])
        if ra is not None and rc is not None:
            plan = _plans.select(GemmPlan, GemmDescriptor(nb * M, N, K, dt, od, alpha, beta,
                                                          epilogue))
            _plans.run(plan, GemmArgs(_tv(a, 0, (nb * M, K), (ra, a.strides[-1])),
                                      _tv(b, 0, (K, N), b.strides[-2:]),
                                      _tv(c, 0, (nb * M, N), (rc, c.strides[-1])), bv), c)
            return
    shape, sa, sb, sc = collapse_dims(batch, a.strides[:-2], b.strides[:-2], c.strides[:-2])
    inner = shape[-1]
    plan = _plans.select(BatchedGemmPlan, BatchedGemmDescriptor(inner, M, N, K, dt, od, alpha,
                                                                beta, epilogue))
    for idx in itertools.product(*(range(n) for n in shape[:-1])):
        oa = builtins.sum(i * s for i, s in zip(idx, sa))
        ob = builtins.sum(i * s for i, s in zip(idx, sb))
        oc = builtins.sum(i * s for i, s in zip(idx, sc))
        _plans.run(plan, BatchedGemmArgs(
            _tv(a, oa, (inner, M, K), (sa[-1],) + a.strides[-2:]),
            _tv(b, ob, (inner, K, N), (sb[-1],) + b.strides[-2:]),
            _tv(c, oc, (inner, M, N), (sc[-1],) + c.strides[-2:]), bv), c)


def tensor_core_ready(x: Array) -> Array:
    """Half-type operands without a unit stride in their matrix dims: a dense copy."""
    if x.dtype in HALF_DTYPES and x.size and 1 not in x.strides[-2:]:
        return ascontiguousarray(x)
    return x


def as_matrix(x: Array, row_axes, col_axes) -> Array:
    """x as a 2-D (prod rows, prod cols) array: a strided view when each axis group merges into
    one stride, else a dense copy of the permuted array."""
    rows = prod(x.shape[d] for d in row_axes)
    cols = prod(x.shape[d] for d in col_axes)
    rs = group_stride([x.shape[d] for d in row_axes], [x.strides[d] for d in row_axes])
    cs = group_stride([x.shape[d] for d in col_axes], [x.strides[d] for d in col_axes])
    if rs is not None and cs is not None:
        return x._view(0, (rows, cols), (rs, cs))
    y = ascontiguousarray(permute_dims(x, tuple(row_axes) + tuple(col_axes)))
    return y._view(0, (rows, cols), (cols, 1))
