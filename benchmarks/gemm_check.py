"""Float64-referenced result checks of the GEMM benchmarks (``benchmarks.gemm``).

Every checked run writes into an output poisoned first (its dtype's NaN, ``iinfo.max`` for
int32: ``tests/_checks.py`` ``poison_``), so an output a kernel never writes fails; the output is
then compared element by element, and in norm, with a float64 reference computed on the GPU from
the *same* operands (``torch.matmul`` of ``.double()`` copies, in row blocks of about
``CHUNK_ELEMS`` elements so a 16384 × 128256 output needs no 17 GB float64 copy).

The bound of one element (out dtype ``o``, reduction length K, ``S = |A| @ |B|`` in float64,
scaled like the reference when the op has scales, ``+ |bias|`` when it has a bias)::

    |out - ref| <= atol(o) + eps(o)/2 · |ref| + (L · acc + ev) · (1 + eps(o)/2) · S

* ``eps(o)/2``: half an ulp of the output dtype (the final rounding), ``atol(o)`` its smallest
  normal (``tests._checks.bounds(o)``);
* ``acc``: the sum's error relative to S — f16 / bf16 / tf32 products are exact in f32 and K of
  them are added in f32: ``K · 2^-24`` (the classical worst case γ_K; split-K adds S partial
  sums of K/S terms, ≤ K roundings too).  tf32 rounds both inputs first (round to nearest:
  ``2^-11`` each, so ``2·2^-11 + 2^-22`` per product).  fp8 on the sm90a wgmma kernel keeps the
  running sum in Hopper's reduced-precision accumulator: modelled as ``2^-13`` relative to S per
  32-deep QGMMA step (≈ 14 bits retained; ``ops/gemm/gemm_fp8.py`` measured 5e-4 at k = 1040),
  i.e. ``ceil(K/32) · 2^-13`` on top of ``K · 2^-24``.  int8 · int8 → int32 is exact (bound 0);
* ``L``: the epilogue activation's Lipschitz constant (gelu 1.13, silu 1.10, relu / none 1) —
  how far it moves the accumulated error; ``ev``: the epilogue's own f32 roundings (bias add,
  erf / exp / division, the fp8 scales: a few ``eps(f32)`` relative to S).

This is :func:`tests._checks.check_close` with ``rtol = eps(o)/2`` and
``scale = |ref| + (L·acc + ev)(1 + eps(o)/2) · S / rtol`` (so ``rtol · max(|ref|, scale)`` is the
right-hand side above): the norm criterion is the same too.  The per-block arithmetic runs on the
GPU (numpy-compatible operators only, so :class:`Tally` is testable on the CPU); a failing block
is handed to ``check_close`` on the host for its message (first failing elements, got / expected /
allowed).

Importable without torch or a GPU (``--help`` of the benchmark works anywhere).
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
from dataclasses import dataclass
from typing import Optional

#: elements of one float64 block of the reference (256 MB)
CHUNK_ELEMS = 2 ** 25
#: f32 unit roundoff and machine epsilon
U32 = 2.0 ** -24
EPS32 = 2.0 ** -23
#: epilogue -> (Lipschitz constant of the activation, f32 roundings of its evaluation in units
#: of eps(f32), relative to S_pre = S + |bias|).  gelu (erf form, 0.5·x·(1 + erf(x/√2)) in f32:
#: the bias add, the scale of x, erf, the add of 1 (cancels for x < 0: absolute error ~|x|·eps),
#: two products: 8 generous); max gelu'(x) = 1.1289; silu = x / (1 + e^-x): add, exp, add, div:
#: 6; max silu'(x) = 1.0998.
ACT_MODEL = {"identity": (1.0, 0), "bias": (1.0, 1), "bias_relu": (1.0, 1),
             "bias_gelu": (1.13, 8), "bias_silu": (1.10, 6)}
#: fp8 wgmma (sm90a): bits the reduced-precision accumulator keeps, and k per QGMMA step
FP8_ACC_BITS = 13
FP8_STEP_K = 32


@functools.lru_cache(maxsize=None)
def shared_checks():
    """``tests/_checks.py`` (``bounds``, ``check_close``, ``poison_``...): imported as
    ``tests._checks`` when the repo root is on ``sys.path`` (``python3 -m benchmarks.gemm`` from
    the root), else loaded from its file (another ``tests`` package may shadow the namespace)."""
    try:
        from tests import _checks  # noqa: PLC0415
        if hasattr(_checks, "check_close") and hasattr(_checks, "poison_"):
            return _checks
    except ImportError:
        pass
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests",
                        "_checks.py")
    spec = importlib.util.spec_from_file_location("_baracuda_bench_checks", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@dataclass(frozen=True)
class GemmBound:
    """``|out - ref| <= atol + out_rtol·|ref| + (lip·acc + ev)·(1 + out_rtol)·S`` (module doc);
    ``exact``: integers, ``out == ref``."""

    out_rtol: float
    atol: float
    acc: float
    lip: float = 1.0
    ev: float = 0.0
    exact: bool = False
    why: str = ""

    @property
    def s_coef(self) -> float:
        """The coefficient of S."""
        return (self.lip * self.acc + self.ev) * (1.0 + self.out_rtol)

    def allow(self, ref_abs, s):
        """Allowed |out - ref| per element (arrays of |ref| and S; numpy or torch)."""
        if self.exact:
            return ref_abs * 0.0
        return self.atol + self.out_rtol * ref_abs + self.s_coef * s

    def describe(self) -> str:
        if self.exact:
            return "exact"
        return (f"atol {self.atol:.3g} + {self.out_rtol:.3g}·|ref| + {self.s_coef:.3g}·S"
                + (f" ({self.why})" if self.why else ""))


def half_bound(out_dtype: str, k: int, epilogue: str = "identity") -> GemmBound:
    """f16 / bf16 inputs (exact in the reference), f32 accumulate, ``out_dtype`` output."""
    C = shared_checks()
    rtol, atol = C.bounds(out_dtype)
    lip, ev = ACT_MODEL[epilogue]
    return GemmBound(rtol, atol, k * U32, lip, ev * EPS32,
                     why=f"half-ulp {out_dtype}, K·2^-24 with K={k}, {epilogue}")


def tf32_bound(k: int) -> GemmBound:
    """f32 inputs rounded to tf32 (round to nearest, 2^-11 each), f32 accumulate and output."""
    C = shared_checks()
    rtol, atol = C.bounds("float32")
    return GemmBound(rtol, atol, 2 * 2.0 ** -11 + 2.0 ** -22 + k * U32,
                     why=f"tf32 inputs 2·2^-11, K·2^-24 with K={k}")


def int_bound() -> GemmBound:
    """int8 · int8 → int32: exact."""
    return GemmBound(0.0, 0.0, 0.0, exact=True, why="exact")


def fp8_bound(out_dtype: str, k: int, wgmma: bool, has_bias: bool = False) -> GemmBound:
    """fp8 inputs (exact in the reference), scales and output as in ``ops/gemm/gemm_fp8.py``:
    the sm90a wgmma accumulator modelled at ``FP8_ACC_BITS`` bits per ``FP8_STEP_K``-deep step,
    the mma.sync path an f32 sum; two f32 scale products (+ the bias add)."""
    C = shared_checks()
    rtol, atol = C.bounds(out_dtype)
    acc = k * U32
    if wgmma:
        acc += math.ceil(k / FP8_STEP_K) * 2.0 ** -FP8_ACC_BITS
    return GemmBound(rtol, atol, acc, 1.0, (2 + int(has_bias)) * EPS32,
                     why=f"fp8 {'wgmma ' + str(FP8_ACC_BITS) + '-bit accumulator' if wgmma else 'f32 sum'}, K={k}")


@dataclass
class Result:
    """One output's verdict: ``ok``; ``rel_err`` = ‖out − ref‖/‖ref‖ (finite elements);
    ``worst`` = max |out − ref| / allowed (≤ 1 passes; inf for NaN / inf); ``n_bad`` elements
    out of bounds; ``msg`` the first failing block's ``check_close`` message."""

    ok: bool
    rel_err: float
    worst: float
    n_bad: int
    n: int
    msg: Optional[str] = None

    def as_dict(self) -> dict:
        return dict(ok=self.ok, rel_err=self.rel_err, worst=self.worst, n_bad=self.n_bad,
                    n=self.n, msg=self.msg)

    def short(self) -> str:
        if self.ok:
            return f"ok ({self.rel_err:.1e}, {self.worst:.2g} of bound)"
        return f"FAIL ({self.n_bad} of {self.n} out of bound; {(self.msg or '')[:160]})"


class Tally:
    """Accumulates one output's check over row blocks.  ``add`` takes float64 arrays of one
    block (numpy or torch: only operators, ``abs``, ``.sum()``, ``.max()``) and a ``to_host``
    callable for the failing block's message."""

    def __init__(self, bound: GemmBound):
        self.bound = bound
        self.n = self.n_bad = 0
        self.err2 = self.ref2 = self.allow2 = 0.0
        self.worst = 0.0
        self.msg = None

    def add(self, out, ref, s, row0: int = 0, to_host=None):
        b = self.bound
        ref_abs = abs(ref)
        allow = b.allow(ref_abs, s)
        d = abs(out - ref)
        good = d <= allow                       # NaN / inf out (unwritten, overflow): False
        fin = (d == d) & (d != float("inf"))
        n_bad = int((~good).sum())
        self.n += int(good.numel() if hasattr(good, "numel") else good.size)
        self.n_bad += n_bad
        df = d[fin]
        self.err2 += float((df * df).sum())
        self.ref2 += float((ref_abs * ref_abs).sum())
        rel_allow = allow - b.atol if not b.exact else allow
        self.allow2 += float((rel_allow * rel_allow).sum())
        if n_bad:
            self.worst = float("inf")
        elif not b.exact:
            self.worst = max(self.worst, float((d / allow).max()))
        if n_bad and self.msg is None:
            self.msg = self._message(out, ref, s, row0, to_host)

    def _message(self, out, ref, s, row0, to_host):
        """``check_close``'s message for this block (rows offset by ``row0``)."""
        C = shared_checks()
        b = self.bound
        host = to_host or (lambda x: x)
        o, r, sc = host(out), host(ref), host(s)
        if b.exact:
            msg = C.check_close(o, r, 0.0, 0.0)
        else:
            scale = abs(r) + b.s_coef * sc / b.out_rtol
            msg = C.check_close(o, r, b.out_rtol, b.atol, scale=scale)
        return f"rows from {row0}: {msg}"

    def result(self) -> Result:
        b = self.bound
        num = math.sqrt(self.err2)
        den = math.sqrt(self.allow2)
        norm_ok = num <= den + b.atol * math.sqrt(max(self.n, 1))
        rel = num / math.sqrt(self.ref2) if self.ref2 > 0 else num
        msg = self.msg
        if not norm_ok and msg is None:
            msg = f"norm error {num:.3g} > allowed {den:.3g}"
        return Result(self.n_bad == 0 and norm_ok, rel, self.worst, self.n_bad, self.n, msg)


def check_gemm(torch, a, b, outs: dict, bound: GemmBound, *, bias=None, act=None,
               scale_a=None, scale_b=None, chunk_elems: int = CHUNK_ELEMS) -> dict:
    """Check every output of ``outs`` (name → (m, n) tensor) against the float64 reference
    ``act(scale_a · (a @ b) · scale_b + bias)`` (each optional; ``scale_a`` (m,) or (1,),
    ``scale_b`` (n,) or (1,)); returns name → :class:`Result`.  One float64 row block of the
    reference and of S = |a| @ |b| serves all outputs."""
    f64 = torch.float64
    m, k = a.shape
    n = b.shape[1]
    b64 = b.to(f64)
    babs = b64.abs()
    bias64 = bias.to(f64).reshape(1, n) if bias is not None else None
    sa = scale_a.to(f64).reshape(-1, 1) if scale_a is not None else None
    sb = scale_b.to(f64).reshape(1, -1) if scale_b is not None else None
    tallies = {name: Tally(bound) for name in outs}
    rows = max(1, chunk_elems // max(n, 1))

    def to_host(x):
        return x.detach().cpu().numpy()

    for i in range(0, m, rows):
        a64 = a[i:i + rows].to(f64)
        z = a64 @ b64
        s = a64.abs() @ babs
        del a64
        if sa is not None or sb is not None:
            rs = (sa if sa.shape[0] == 1 else sa[i:i + rows]) if sa is not None else 1.0
            cs = sb if sb is not None else 1.0
            z = z * rs * cs
            s = s * abs(rs) * abs(cs)
        if bias64 is not None:
            z = z + bias64
            s = s + bias64.abs()
        ref = act(z) if act is not None else z
        for name, o in outs.items():
            tallies[name].add(o[i:i + rows].to(f64), ref, s, i, to_host)
        del z, s, ref
    return {name: t.result() for name, t in tallies.items()}


def ref_act(torch, epilogue: str):
    """The float64 activation of a GemmPlan epilogue (None for identity / bias)."""
    F = torch.nn.functional
    return {"bias_relu": torch.relu, "bias_gelu": F.gelu, "bias_silu": F.silu}.get(epilogue)
