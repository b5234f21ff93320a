"""Linear algebra functions of the standard (2024.12) — ``matmul`` (and the ``@`` operator),
``tensordot``, ``vecdot``, ``matrix_transpose`` — plus ``outer`` (linalg extension).

GEMMs run on :class:`~baracuda_dsl.ops.gemm.gemm.GemmPlan` / :class:`~baracuda_dsl.ops.gemm.
gemm_batched.BatchedGemmPlan` through the driver in ``_gemm``, on the legacy default stream, into
new dense outputs:

* **dtypes** (result dtype = the standard's promotion of the inputs; operands of another dtype
  are converted first): float16 / bfloat16 on tensor cores with float32 accumulate (result
  rounded to the half type), float32 strict IEEE (no tf32), float64 in float64.
  complex64 / complex128: four real GEMMs on the real / imaginary parts (strided views of the
  interleaved storage; ``Re = ArBr − AiBi``, ``Im = ArBi + AiBr``), same precision as the real
  type.  Integers: exact results wrapped to the result dtype modulo 2**bits (as numpy), by the
  first of: (1) the float64 GEMM when the dtypes guarantee exactness — every product and partial
  sum an integer below 2**53: K · max|x1| · max|x2| < 2**53, e.g. int8 / uint8 / int16 / uint16
  operands with K < 2**23 — then float64 → int64 / uint64 → result dtype; (2) for small problems
  (batch · M · K · N <= ``INT_ELEMENTWISE_MAX`` = 2**24 products) a broadcast ``multiply`` in the
  result dtype into a temporary plus an integer ``sum`` over K (exact for any values); (3) the
  float64 GEMM when the operands' actual extremes satisfy the bound (a device max / min and one
  host read each: a sync); otherwise ``UnsupportedError`` naming those conditions.
  bool is a ``TypeError`` (the standard asks for numeric dtypes); fp8 is storage-only
  (``UnsupportedError``).
* **matmul broadcasting**: 1-D x1 is promoted to (1, K) and x2 to (K, 1), the added dim removed
  from the result (two 1-D arrays give a 0-D result); batch dims broadcast per the standard.
  When x2 has no (non-broadcast) batch dims and x1's batch and row dims collapse to one stride,
  the batch is folded into M: one GEMM.  Otherwise the batch dims of x1, x2 and the output are
  collapsed jointly and each remaining outer index runs one ``BatchedGemmPlan`` (one launch
  over a batch grid when the entries take the mma.sync kernel, else a loop of GemmPlan
  launches).  Operands are used as strided views (transposes,
  slices, stride-0 broadcasts); half-type operands with no unit stride in their two matrix dims
  are copied dense first so that they reach the tensor-core path.
* ``tensordot``: the contracted axes are grouped into K and the free ones into M / N — a view
  when the dims collapse, else a dense copy of the permuted operand — then one 2-D matmul.
* ``vecdot``: elementwise ``multiply`` (``conj(x1)`` first for complex) and ``sum`` over the
  axis; half types are computed in float32 and rounded once; integers wrap like the inputs'
  promoted dtype.  ``outer``: one broadcast ``multiply`` (exact products, every numeric dtype).

Shape errors (a contracted-dimension mismatch, unbroadcastable batch dims, 0-D operands) are
``ValueError``; dtype errors ``TypeError``; valid inputs the kernels are not wired for
``UnsupportedError``.
"""

from __future__ import annotations

import builtins
import operator

from baracuda_dsl import dtypes as _d
from baracuda_dsl.errors import UnsupportedError
from baracuda_dsl.ops.elementwise.elementwise import broadcast_shapes
from baracuda_dsl.plan import prod
from baracuda_dsl.tensor import contiguous_strides

from . import _elementwise_functions as _ef
from . import _statistical_functions as _sf
from ._array_object import Array
from ._dtypes import INTEGER_DTYPES
from ._gemm import (COMPLEX_PART, GEMM_FLOAT_DTYPES, HALF_DTYPES, as_matrix, check_arrays,
                    convert, gemm, numeric_dtype, tensor_core_ready)
from ._manipulation_functions import broadcast_to, moveaxis
from ._records import recorded

__all__ = ["matmul", "tensordot", "vecdot", "matrix_transpose", "outer"]

_EXACT = 2 ** 53
#: integer matmuls beyond the float64-exact bound with batch·M·K·N up to this many products
#: take the exact elementwise path (multiply into a temporary + integer sum)
INT_ELEMENTWISE_MAX = 2 ** 24


# ---------------------------------------------------------------------------- GEMM dtypes
def _matmul_float(a: Array, b: Array, dt, batch) -> Array:
    """a (.., M, K) @ b (.., K, N) in GEMM dtype ``dt`` (inputs converted), broadcast to
    ``batch``: a new dense array."""
    a = tensor_core_ready(convert(a, dt))
    b = tensor_core_ready(convert(b, dt))
    M, K = a.shape[-2:]
    N = b.shape[-1]
    out = Array._empty(tuple(batch) + (M, N), dt, a.device)
    if out.size:
        gemm(broadcast_to(a, tuple(batch) + (M, K)), broadcast_to(b, tuple(batch) + (K, N)),
              out)
    return out


def _parts(x: Array):
    """(real, imag) strided real views of a complex array."""
    rt = COMPLEX_PART[x.dtype]
    st = tuple(2 * s for s in x.strides)
    re = Array._new(x._ptr, x.shape, st, rt, x.device, x._owner)
    im = Array._new(x._ptr + rt.itemsize, x.shape, st, rt, x.device, x._owner)
    return re, im


def _matmul_complex(a: Array, b: Array, dt, batch) -> Array:
    """Complex a @ b as four real GEMMs into the interleaved output."""
    a, b = convert(a, dt), convert(b, dt)
    M, K = a.shape[-2:]
    N = b.shape[-1]
    out = Array._empty(tuple(batch) + (M, N), dt, a.device)
    if out.size == 0:
        return out
    (ar, ai), (br, bi), (cr, ci) = _parts(a), _parts(b), _parts(out)
    ash, bsh = tuple(batch) + (M, K), tuple(batch) + (K, N)
    ar, ai = broadcast_to(ar, ash), broadcast_to(ai, ash)
    br, bi = broadcast_to(br, bsh), broadcast_to(bi, bsh)
    gemm(ar, br, cr)
    gemm(ai, bi, cr, alpha=-1.0, beta=1.0)
    gemm(ar, bi, ci)
    gemm(ai, br, ci, alpha=1.0, beta=1.0)
    return out


def _max_abs_dtype(dt) -> int:
    bits = dt.itemsize * 8
    return (1 << (bits - 1)) if dt.kind == "i" else (1 << bits) - 1


def _max_abs_values(x: Array) -> int:
    """max |x| of an integer array (device max / min, one host read each)."""
    if x.size == 0:
        return 0
    return builtins.max(abs(int(_sf.max(x))), abs(int(_sf.min(x))))


def int_exact_bound_ok(k: int, m1: int, m2: int) -> bool:
    """True when K · m1 · m2 < 2**53: every product and partial sum is exact in float64."""
    return k * m1 * m2 < _EXACT


def _matmul_int_elementwise(a: Array, b: Array, dt) -> Array:
    """Σ_k a[.., m, k] · b[.., k, n] as one broadcast multiply in ``dt`` (wrapping) into a
    (.., M, K, N) temporary and one integer ``sum`` over K: exact modulo 2**bits for any
    values."""
    a, b = convert(a, dt), convert(b, dt)
    a4 = a._view(0, a.shape + (1,), a.strides + (0,))
    b4 = b._view(0, b.shape[:-2] + (1,) + b.shape[-2:], b.strides[:-2] + (0,) + b.strides[-2:])
    return _sf.sum(_ef.multiply(a4, b4), axis=-2, dtype=dt)


def _matmul_int(a: Array, b: Array, dt, batch) -> Array:
    K = a.shape[-1]
    if not int_exact_bound_ok(K, _max_abs_dtype(a.dtype), _max_abs_dtype(b.dtype)):
        if prod(batch) * a.shape[-2] * K * b.shape[-1] <= INT_ELEMENTWISE_MAX:
            return _matmul_int_elementwise(a, b, dt)
        m1 = _max_abs_values(a)
        m2 = _max_abs_values(b) if m1 else 0
        if not int_exact_bound_ok(K, m1, m2):
            raise UnsupportedError(
                f"matmul: integer operands ({a.dtype.name}, {b.dtype.name}) with K = {K}, "
                f"max|x1| = {m1}, max|x2| = {m2}: K·max|x1|·max|x2| >= 2**53, beyond what the "
                f"float64 GEMM computes exactly, and batch·M·K·N > {INT_ELEMENTWISE_MAX} for the "
                f"elementwise path; wired: integer matmul with K·max|x1|·max|x2| < 2**53 or "
                f"batch·M·K·N <= {INT_ELEMENTWISE_MAX} (and float16 / bfloat16 / float32 / "
                f"float64 / complex)")
    r = _matmul_float(a, b, _d.float64, batch)
    wide = _d.uint64 if dt.kind == "u" else _d.int64
    return convert(convert(r, wide), dt)


def _matmul_dt(a: Array, b: Array, dt, batch) -> Array:
    """a (.., M, K) @ b (.., K, N) broadcast to ``batch`` with result dtype ``dt``."""
    shape = tuple(batch) + (a.shape[-2], b.shape[-1])
    if prod(shape) == 0 and dt in INTEGER_DTYPES + GEMM_FLOAT_DTYPES + tuple(COMPLEX_PART):
        return Array._empty(shape, dt, a.device)
    if dt in GEMM_FLOAT_DTYPES:
        return _matmul_float(a, b, dt, batch)
    if dt in COMPLEX_PART:
        return _matmul_complex(a, b, dt, batch)
    if dt in INTEGER_DTYPES:
        return _matmul_int(a, b, dt, batch)
    raise UnsupportedError(f"matmul: dtype {dt.name} is not wired; wired: int8-64, uint8-64, "
                           f"float16, bfloat16, float32, float64, complex64, complex128")


# ------------------------------------------------------------------------------- matmul
def matmul_shapes(s1, s2):
    """(batch shape, M, K, N, result shape) of ``matmul`` for operand shapes s1, s2 per the
    standard (ValueError for 0-D operands, a K mismatch or unbroadcastable batch dims)."""
    s1, s2 = tuple(s1), tuple(s2)
    if len(s1) == 0 or len(s2) == 0:
        raise ValueError("matmul: operands must have at least one dimension (0-D given)")
    a = s1 if len(s1) >= 2 else (1,) + s1
    b = s2 if len(s2) >= 2 else s2 + (1,)
    if a[-1] != b[-2]:
        raise ValueError(f"matmul: contracted dimensions differ: {s1} @ {s2} "
                         f"({a[-1]} vs {b[-2]})")
    batch = broadcast_shapes(a[:-2], b[:-2])
    M, K, N = a[-2], a[-1], b[-1]
    res = batch + ((M,) if len(s1) >= 2 else ()) + ((N,) if len(s2) >= 2 else ())
    return batch, M, K, N, res


@recorded
def matmul(x1, x2, /) -> Array:
    """Matrix product of the standard: x1 (..., M, K) @ x2 (..., K, N) → (..., M, N) with
    broadcast batch dims; a 1-D x1 is a row (its dim removed from the result), a 1-D x2 a column.
    Result dtype by promotion; see the module docstring for the dtypes / precision / kernels."""
    check_arrays("matmul", x1, x2)
    dt = numeric_dtype("matmul", x1, x2)
    batch, M, K, N, res = matmul_shapes(x1.shape, x2.shape)
    a = x1 if x1.ndim >= 2 else x1._view(0, (1,) + x1.shape, (0,) + x1.strides)
    b = x2 if x2.ndim >= 2 else x2._view(0, x2.shape + (1,), x2.strides + (0,))
    out = _matmul_dt(a, b, dt, batch)
    return out._view(0, res, contiguous_strides(res)) if out.shape != res else out


def imatmul(x1: Array, x2, /) -> Array:
    """``x1 @= x2``: ``matmul(x1, x2)`` written into x1 (the result dtype must be x1's:
    TypeError; the result shape x1's: ValueError)."""
    r = matmul(x1, x2)
    if r.dtype != x1.dtype:
        raise TypeError(f"in-place matmul: the result dtype {r.dtype.name} differs from the "
                        f"target's {x1.dtype.name}")
    if r.shape != x1.shape:
        raise ValueError(f"in-place matmul: the result shape {r.shape} differs from the "
                         f"target's shape {x1.shape}")
    x1[...] = r
    return x1


# ---------------------------------------------------------------------------- tensordot
def _norm_axes(axes, ndim: int, name: str):
    try:
        out = [operator.index(a) for a in axes]
    except TypeError:
        raise TypeError(f"{name}: axes must be sequences of ints, got {axes!r}") from None
    for a in out:
        if not -ndim <= a < ndim:
            raise ValueError(f"{name}: axis {a} is out of bounds for a {ndim}-D array")
    out = [a % ndim for a in out]
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {axes!r}")
    return out


def tensordot_axes(shape1, shape2, axes):
    """(x1 contracted axes, x2 contracted axes) of ``tensordot`` (ValueError / TypeError for
    invalid ``axes`` or contracted sizes that differ)."""
    n1, n2 = len(shape1), len(shape2)
    if isinstance(axes, builtins.bool):
        raise TypeError("tensordot: axes must be an int or a pair of sequences, got a bool")
    if isinstance(axes, int):
        if axes < 0:
            raise ValueError(f"tensordot: axes must be >= 0, got {axes}")
        if axes > n1 or axes > n2:
            raise ValueError(f"tensordot: cannot contract {axes} axes of arrays of rank "
                             f"{n1} and {n2}")
        ax1, ax2 = list(range(n1 - axes, n1)), list(range(axes))
    else:
        try:
            p1, p2 = axes
        except (TypeError, ValueError):
            raise TypeError(f"tensordot: axes must be an int or a pair of sequences, got "
                            f"{axes!r}") from None
        if isinstance(p1, int) and isinstance(p2, int):   # numpy-style (i, j) shorthand
            p1, p2 = (p1,), (p2,)
        ax1 = _norm_axes(p1, n1, "tensordot")
        ax2 = _norm_axes(p2, n2, "tensordot")
        if len(ax1) != len(ax2):
            raise ValueError(f"tensordot: {len(ax1)} axes of x1 vs {len(ax2)} axes of x2")
    for a1, a2 in zip(ax1, ax2):
        if shape1[a1] != shape2[a2]:
            raise ValueError(f"tensordot: contracted axes {a1} of x1 (size {shape1[a1]}) and "
                             f"{a2} of x2 (size {shape2[a2]}) differ")
    return ax1, ax2


@recorded
def tensordot(x1, x2, /, *, axes=2) -> Array:
    """Tensor contraction of the standard: ``axes`` an int N (the last N axes of x1 with the
    first N of x2) or a pair of axis sequences; result shape = x1's free axes + x2's free axes;
    dtype by promotion.  One 2-D GEMM (views where the axes group, else permuted dense copies)."""
    check_arrays("tensordot", x1, x2)
    dt = numeric_dtype("tensordot", x1, x2)
    ax1, ax2 = tensordot_axes(x1.shape, x2.shape, axes)
    free1 = [d for d in range(x1.ndim) if d not in ax1]
    free2 = [d for d in range(x2.ndim) if d not in ax2]
    A = as_matrix(x1, free1, ax1)
    B = as_matrix(x2, ax2, free2)
    r = _matmul_dt(A, B, dt, ())
    shape = tuple(x1.shape[d] for d in free1) + tuple(x2.shape[d] for d in free2)
    return r._view(0, shape, contiguous_strides(shape))


# ------------------------------------------------------------------------------- vecdot
def vecdot_axis(shape1, shape2, axis):
    """(normalised negative axis, broadcast batch shape) of ``vecdot``: ``axis`` in [-N, N)
    with N = min(x1.ndim, x2.ndim), counted from the end (a non-negative axis a is a − N);
    ValueError for a bad axis, contracted sizes that differ (no broadcasting along the axis)
    or batch dims that do not broadcast."""
    n = builtins.min(len(shape1), len(shape2))
    if isinstance(axis, builtins.bool) or not isinstance(axis, int):
        raise TypeError(f"vecdot: axis must be an int, got {axis!r}")
    if n == 0:
        raise ValueError("vecdot: operands must have at least one dimension")
    if not -n <= axis < n:
        raise ValueError(f"vecdot: axis {axis} out of range [-{n}, {n})")
    ax = axis - n if axis >= 0 else axis
    if shape1[ax] != shape2[ax]:
        raise ValueError(f"vecdot: sizes along axis {axis} differ: {shape1[ax]} vs {shape2[ax]}")
    r1 = tuple(shape1[:len(shape1) + ax]) + tuple(shape1[len(shape1) + ax + 1:])
    r2 = tuple(shape2[:len(shape2) + ax]) + tuple(shape2[len(shape2) + ax + 1:])
    return ax, broadcast_shapes(r1, r2)


@recorded
def vecdot(x1, x2, /, *, axis: int = -1) -> Array:
    """Σ conj(x1) · x2 along ``axis`` (the standard's vecdot; the axis is not broadcast);
    dtype by promotion.  Elementwise multiply + ``sum`` (half types in float32, one rounding;
    complex conjugates x1)."""
    check_arrays("vecdot", x1, x2)
    dt = numeric_dtype("vecdot", x1, x2)
    ax, _ = vecdot_axis(x1.shape, x2.shape, axis)
    a, b = moveaxis(x1, ax, -1), moveaxis(x2, ax, -1)
    cdt = _d.float32 if dt in HALF_DTYPES else dt
    a, b = convert(a, cdt), convert(b, cdt)
    if cdt in COMPLEX_PART:
        a = _ef.conj(a)
    p = _ef.multiply(a, b)
    s = _sf.sum(p, axis=-1, dtype=cdt if cdt.kind in "iu" else None)
    return convert(s, dt)


# ------------------------------------------------------------------------ matrix_transpose
def matrix_transpose(x: Array, /) -> Array:
    """The last two axes of ``x`` swapped (``x.mT``: a view; ValueError below 2-D)."""
    return x.mT


# -------------------------------------------------------------------------------- outer
def outer(x1, x2, /) -> Array:
    """Outer product of two 1-D arrays (linalg extension): (N,) × (M,) → (N, M), dtype by
    promotion; one broadcast elementwise multiply (exact products)."""
    check_arrays("outer", x1, x2)
    numeric_dtype("outer", x1, x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer: operands must be 1-D, got shapes {x1.shape} and {x2.shape}")
    return _ef.multiply(x1._view(0, (x1.shape[0], 1), (x1.strides[0], 0)),
                        x2._view(0, (1, x2.shape[0]), (0, x2.strides[0])))
