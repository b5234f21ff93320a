"""Result checks shared by every GPU test: bounds derived from the OUTPUT dtype, every element
checked as well as the norm, and poisoned outputs that show unwritten elements.

The bound for one element (``out``, exact float64 reference ``ref``, optional error ``scale``)::

    |out - ref| <= atol + rtol * max(|ref|, scale)

``scale`` is the magnitude the error is relative to when it is not ``|ref|``: for a dot
product / GEMM / sum it is ``sum_k |a_k| |b_k|`` (cancellation makes ``|ref|`` tiny while the
rounding error stays proportional to the terms).  On top of the per-element test the whole
tensor must satisfy ``||out - ref|| / ||ref|| <= rtol`` (relative to ``||max(|ref|, scale)||``).
Special values are compared exactly: a NaN in ``ref`` must be NaN in ``out``; ``±inf`` must match
in sign; a finite ``ref`` needs a finite ``out`` (so a NaN poison left unwritten fails).

:func:`bounds` turns "what the op does" into ``(rtol, atol)``:

* rounding the result into the output dtype costs at most half an ulp: ``eps(out) / 2``;
* an op evaluated in ``compute`` precision over ``terms`` rounded operations (a sum of K terms:
  ``terms=K``; a transcendental: 2-4) adds ``terms * eps(compute)`` (the classical worst-case
  bound, no sqrt(K) optimism), scaled by the condition number ``cond`` when the op amplifies
  relative input error;
* inputs that are themselves rounded from float64 (``inputs=dtype``) add ``cond * eps(inputs)/2``.

Everything is computed in float64 numpy, so this module works on torch tensors (any device) and
numpy arrays alike and its own tests run without torch or a GPU (``tests/core/test_checks_cpu.py``).
"""

from __future__ import annotations

import math

import numpy as np

#: unit roundoff ×2 (machine epsilon: spacing of 1.0) per dtype name (torch or numpy spelling)
EPS = {
    "float64": 2.0 ** -52, "float32": 2.0 ** -23, "tf32": 2.0 ** -10, "float16": 2.0 ** -10,
    "bfloat16": 2.0 ** -7, "float8_e4m3fn": 2.0 ** -3, "float8_e5m2": 2.0 ** -2,
    "complex128": 2.0 ** -52, "complex64": 2.0 ** -23,
}
#: smallest positive normal per dtype (the absolute floor of a relative bound: subnormal results)
TINY = {
    "float64": 2.0 ** -1022, "float32": 2.0 ** -126, "float16": 2.0 ** -14,
    "bfloat16": 2.0 ** -126, "float8_e4m3fn": 2.0 ** -6, "float8_e5m2": 2.0 ** -14,
    "complex128": 2.0 ** -1022, "complex64": 2.0 ** -126,
}


def dtype_name(dt) -> str:
    """``"float32"``-style name of a torch dtype, numpy dtype, ml_dtypes type or string."""
    s = str(dt)
    s = s.replace("torch.", "")
    return {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64",
            "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "half": "float16",
            "float": "float32", "double": "float64"}.get(s, s)


def eps(dt) -> float:
    """Machine epsilon of a floating dtype (0 for integers and bool: they must match exactly)."""
    return EPS.get(dtype_name(dt), 0.0)


def bounds(out, *, compute=None, terms: float = 0, cond: float = 1.0, inputs=None,
           ulps: float = 1.0):
    """``(rtol, atol)`` for a result stored in dtype ``out``.

    ``ulps`` half-ulps of final rounding (1 = correctly rounded); ``compute`` / ``terms``: the
    precision the op is evaluated in and how many rounded operations feed one element;
    ``cond``: the op's condition number (amplification of relative error); ``inputs``: the
    dtype the inputs were rounded to from the float64 reference's operands, if coarser than
    float64.  ``atol`` is the output dtype's smallest normal (results in the subnormal range
    carry absolute, not relative, error).  Integer and bool outputs get ``(0, 0)``: exact."""
    e_out = eps(out)
    if e_out == 0.0:
        return 0.0, 0.0
    rtol = ulps * e_out / 2
    if compute is not None and terms:
        rtol += cond * terms * eps(compute)
    if inputs is not None and dtype_name(inputs) != "float64":
        rtol += cond * eps(inputs) / 2
    return rtol, TINY.get(dtype_name(out), 0.0)


def to_numpy(x) -> np.ndarray:
    """A numpy copy of a torch tensor or array-like: float64 for floating dtypes (bf16 / fp8
    included), complex128 for complex, integers and bool as they are (exact)."""
    if hasattr(x, "detach"):  # torch tensor (any device, any dtype incl. bf16 / fp8)
        import torch

        t = x.detach()
        if t.is_complex():
            return t.to(torch.complex128).cpu().numpy()
        if t.dtype == torch.bool or not t.is_floating_point():
            return t.cpu().numpy()                # integers stay exact (int64 / uint64 > 2**53)
        return t.to(torch.float64).cpu().numpy()
    a = np.asarray(x)
    if a.dtype.kind in "cbiu":
        return a.astype(np.complex128) if a.dtype.kind == "c" else a
    return a.astype(np.float64)


def _fmt_bad(idx, o, r, bound, limit=5):
    rows = []
    for k in range(min(limit, len(idx[0]))):
        at = tuple(int(i[k]) for i in idx)
        rows.append(f"at {at}: got {o[at]!r}, expected {r[at]!r}, allowed ±{bound[at]:.3g}")
    return "; ".join(rows)


def check_close(out, ref, rtol: float, atol: float = 0.0, *, scale=None, what: str = ""):
    """The failure message of comparing ``out`` with ``ref`` element by element (see the module
    doc), or ``None`` when every element and the norm are within bounds."""
    o, r = to_numpy(out), to_numpy(ref)
    tag = f"{what}: " if what else ""
    if o.shape != r.shape:
        return f"{tag}shape {o.shape} != reference shape {r.shape}"
    if o.size == 0:
        return None
    o, r = np.atleast_1d(o), np.atleast_1d(r)  # 0-d results (full reductions) index like 1-d
    if o.dtype.kind in "biu" and r.dtype.kind in "biu":    # bool / integers: exact
        bad = np.nonzero(o != r)
        n = len(bad[0])
        return None if n == 0 else f"{tag}{n} of {o.size} elements differ; " + _fmt_bad(
            bad, o, r, np.zeros(o.shape))
    comps = [(o.real, r.real), (o.imag, r.imag)] if np.iscomplexobj(o) or np.iscomplexobj(r) \
        else [(o, r)]
    mag = None if scale is None else np.broadcast_to(np.abs(to_numpy(scale)), o.shape)
    for part, (oc, rc) in zip(("", "imag "), comps):
        oc, rc = np.asarray(oc, dtype=np.float64), np.asarray(rc, dtype=np.float64)
        rnan, onan = np.isnan(rc), np.isnan(oc)
        bad = np.nonzero(rnan != onan)
        if len(bad[0]):
            return (f"{tag}{part}NaN mismatch at {len(bad[0])} of {o.size} elements "
                    "(NaN where a number is due: an unwritten poisoned output?); "
                    + _fmt_bad(bad, oc, rc, np.zeros(oc.shape)))
        rinf = np.isinf(rc)
        bad = np.nonzero((rinf | np.isinf(oc)) & ~rnan & (oc != rc))
        if len(bad[0]):
            return f"{tag}{part}infinity mismatch at {len(bad[0])} elements; " + _fmt_bad(
                bad, oc, rc, np.zeros(oc.shape))
        fin = ~rnan & ~rinf
        m = np.abs(np.where(fin, rc, 0.0))
        if mag is not None:
            m = np.maximum(m, np.where(fin, mag if not np.iscomplexobj(mag) else np.abs(mag), 0))
        bound = atol + rtol * m
        err = np.where(fin, np.abs(oc - np.where(fin, rc, 0.0)), 0.0)
        bad = np.nonzero(err > bound)
        if len(bad[0]):
            return (f"{tag}{part}{len(bad[0])} of {o.size} elements out of bounds (rtol {rtol:.3g}, "
                    f"atol {atol:.3g}); " + _fmt_bad(bad, oc, rc, bound))
        den = float(np.linalg.norm(m[fin])) if fin.any() else 0.0
        num = float(np.linalg.norm(err[fin])) if fin.any() else 0.0
        if num > rtol * den + atol * math.sqrt(max(int(fin.sum()), 1)):
            return f"{tag}{part}norm error {num / den if den else num:.3g} > rtol {rtol:.3g}"
    return None


def assert_close(out, ref, rtol: float, atol: float = 0.0, *, scale=None, what: str = ""):
    """Assert :func:`check_close` finds nothing; returns the relative norm error for logging."""
    msg = check_close(out, ref, rtol, atol, scale=scale, what=what)
    assert msg is None, msg
    return rel_err(out, ref)


def assert_within(out, ref, dtype, rel: float, abs_err=0.0, what=""):
    """:func:`assert_close` for a result in ``dtype`` whose error has two parts: the roundings into
    ``dtype`` (``rel``, relative to each element) and an op's own error bound ``abs_err`` (an
    absolute bound, scalar or per element: a reduction's ``d·u·Σ|terms|``), i.e. per element
    ``|out − ref| <= rel·|ref| + abs_err`` (+ ``dtype``'s smallest normal).  Implemented as
    ``rtol = rel`` with ``scale = |ref| + abs_err / rel``; a NaN or infinite ``abs_err`` counts
    as 0 (no bound can be derived there, so none is granted)."""
    r = to_numpy(ref)
    with np.errstate(invalid="ignore", over="ignore"):
        extra = np.nan_to_num(np.asarray(to_numpy(abs_err), np.float64), nan=0.0, posinf=0.0)
        scale = np.abs(np.where(np.isfinite(r), r, 0.0)) + extra / rel
    return assert_close(out, ref, rel, bounds(dtype)[1], scale=scale, what=str(what))


def assert_equal(out, ref, what: str = ""):
    """Exact equality (integers, bool, copies): every element, NaN == NaN, signed zeros alike."""
    o, r = to_numpy(out), to_numpy(ref)
    assert o.shape == r.shape, f"{what}: shape {o.shape} != {r.shape}"
    o, r = np.atleast_1d(o), np.atleast_1d(r)
    if o.dtype.kind in "fc":
        both_nan = np.isnan(o) & np.isnan(r)
        same = (o == r) | both_nan
        if o.dtype.kind == "f":  # signed zeros must match too
            same &= both_nan | (np.signbit(o) == np.signbit(r))
    else:
        same = o == r
    bad = np.nonzero(~same)
    assert not len(bad[0]), f"{what}: {len(bad[0])} of {o.size} elements differ; " + _fmt_bad(
        bad, o, r, np.zeros(o.shape))


def rel_err(out, ref) -> float:
    """``||out - ref|| / ||ref||`` over the finite elements of ``ref`` (``||out - ref||`` when
    ``ref`` is zero) — for reporting; the assertion is :func:`assert_close`."""
    o, r = to_numpy(out), to_numpy(ref)
    if o.dtype.kind == "b":
        o, r = o.astype(np.float64), r.astype(np.float64)
    fin = np.isfinite(r)
    den = float(np.linalg.norm(r[fin]))
    num = float(np.linalg.norm((o - r)[fin]))
    return num / den if den else num


# ------------------------------------------------------------------------------- poisoning
def nan_or_sentinel(torch, dtype):
    """The poison value of a torch dtype: NaN for floating and complex dtypes, the largest value
    for integers (a sentinel no test reference produces by accident), True for bool."""
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).max


def poison(torch, shape, dtype, device="cuda"):
    """An output tensor filled with its dtype's NaN (or integer sentinel), so unwritten
    elements fail :func:`assert_close` / :func:`assert_equal`.  ``dtype``: torch dtype or name."""
    dt = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    out = torch.empty(shape, device=device, dtype=dt)
    if out.numel():
        out.fill_(nan_or_sentinel(torch, dt))
    return out


def poison_(torch, t):
    """Fill ``t`` in place with its dtype's poison (see :func:`poison`); returns ``t``."""
    if t.numel():
        t.fill_(nan_or_sentinel(torch, t.dtype))
    return t
