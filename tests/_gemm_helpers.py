"""Helpers shared by the GEMM tests (the GPU tests test_gemm_gpu, test_gemm_sm90_gpu,
test_gemm_batched_gpu, test_gemm_tf32_gpu, test_gemm_fp8_gpu, test_gemm_int_gpu): float64
references with every epilogue, the magnitude their rounding error is relative to
(:func:`gemm_scale`), per-element bounds derived from the OUTPUT dtype and k
(:func:`gemm_tolerance` / :func:`assert_gemm_close`, over ``tests._checks``), operand builders
(dense / transposed views, padded leading dims, random int8 / uint8), NaN-poisoned split-K
workspaces and module loaders that skip cleanly; and :func:`tuned` (a preference with a
GemmTuning record), used by the CPU tests too.
Importable without torch or a GPU (the helpers take the torch module as an argument)."""

import dataclasses
import math

import pytest

import baracuda_dsl as bd

from tests._checks import assert_close, bounds, eps


def tuned(pref=None, **tuning):
    """``pref`` (default: ``PlanPreference()``) with ``GemmTuning(**tuning)`` (tile, splits)."""
    return dataclasses.replace(bd.PlanPreference() if pref is None else pref,
                               tuning=bd.GemmTuning(**tuning))


# -- modules ---------------------------------------------------------------------------------
def gemm_mods():
    """(torch, GemmArgs, GemmDescriptor, GemmPlan); skips without torch."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan

    return torch, GemmArgs, GemmDescriptor, GemmPlan


def sm90_mods():
    """:func:`gemm_mods`, skipping unless a CUDA device of arch sm90a is present."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    import baracuda_dsl as bd
    from baracuda_dsl.runtime.device import device_arch

    if device_arch(0) is not bd.ArchSku.SM90A:
        pytest.skip("gemm_sm90 needs an sm90a (Hopper) device")
    return gemm_mods()


def int_mods():
    """(torch, IntGemmArgs, IntGemmDescriptor, IntGemmPlan); skips without torch."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.gemm.gemm_int import IntGemmArgs, IntGemmDescriptor, IntGemmPlan

    return torch, IntGemmArgs, IntGemmDescriptor, IntGemmPlan


# -- references and errors -------------------------------------------------------------------
def ref_gemm(torch, a, b, c_old, bias, alpha, beta, epilogue):
    """float64 act(alpha · a @ b + beta · c_old + bias) (c_old read only when beta != 0; gelu
    in the erf form).  Batched operands (batch, m, k) @ (batch, k, n) work too, with a shared
    (n,) or per-entry (batch, n) bias."""
    r = alpha * torch.matmul(a.double(), b.double())
    if beta != 0:
        r = r + beta * c_old.double()
    if bias is not None:
        r = r + (bias.double() if bias.dim() == 1 else bias.double()[:, None, :])
    if epilogue == "bias_relu":
        r = torch.relu(r)
    elif epilogue == "bias_gelu":
        r = 0.5 * r * (1.0 + torch.erf(r / math.sqrt(2.0)))
    elif epilogue == "bias_silu":
        r = r * torch.sigmoid(r)
    return r


#: rounded operations of the epilogue before the activation (compute precision): alpha · acc,
#: beta · c, the two adds (+ beta · c, + bias); the fp8 / int8 scales (sa · sb, · acc, + bias)
#: are fewer
EPILOGUE_TERMS = 4
#: rounded operations of each activation: gelu x·(1/√2), erf (libdevice, <= 2 ulps), 1 +, 0.5 ·,
#: · x; silu exp (<= 2 ulps), 1 +, ÷ (relu is a select: exact)
ACT_TERMS = {"identity": 0, "bias": 0, "bias_relu": 0, "bias_gelu": 6, "bias_silu": 4}
#: max |act'(x)|: how much the activation amplifies the error of its argument (gelu' peaks at
#: Φ(√2) + √2·φ(√2) ≈ 1.129, silu' at ≈ 1.0998)
ACT_COND = {"identity": 1.0, "bias": 1.0, "bias_relu": 1.0, "bias_gelu": 1.13,
            "bias_silu": 1.1}
#: tf32 (``cvt.rna``: <= 2**-11 relative per operand) rounds both factors of every product:
#: (1 + u)**2 - 1 = 2u + u**2 with u = eps(tf32) / 2, relative to |a|·|b|
TF32_PRODUCT = eps("tf32") * (1 + eps("tf32") / 4)
#: fp8 tensor cores with a reduced-precision accumulator (sm90a wgmma / QGMMA, sm89's native fp8
#: mma.sync): the running sum is kept in an e8m13 format and truncated (DeepSeek-V3 report
#: §3.3.2: "around 14 bits"; Khattak & Mikaitis, "Accurate models of NVIDIA tensor cores"):
#: up to one ulp of 13 fraction bits per accumulation step, relative to the running magnitude
#: (<= the |a|·|b| scale); measured (ops/gemm/gemm_fp8.py) rms ≈ 2.4e-5 of |a|·|b| at k = 1040
FP8_ACC_EPS = 2.0 ** -13
#: k depth of one accumulation step of the fp8 MMAs (m64nNk32 / m16n8k32)
FP8_ACC_K = 32


def gemm_scale(torch, a, b, c_old=None, bias=None, alpha=1.0, beta=0.0):
    """The float64 magnitude the rounding error of :func:`ref_gemm`'s result is relative to:
    |alpha| · |a| @ |b| + |beta| · |c_old| (when beta != 0) + |bias| — from the exact operand
    values, so cancellation in a @ b (tiny |ref|) does not shrink the bound below the error the
    k rounded additions make.  Shapes as in :func:`ref_gemm`."""
    s = abs(alpha) * torch.matmul(a.double().abs(), b.double().abs())
    if beta != 0:
        s = s + abs(beta) * c_old.double().abs()
    if bias is not None:
        s = s + (bias.double().abs() if bias.dim() == 1 else bias.double().abs()[:, None, :])
    return s


def gemm_tolerance(out_dtype, ref, k, *, scale, compute="float32",
                   epilogue="identity", extra_terms=0, tf32=False, fp8_acc=False):
    """``(rtol, atol, magnitude)`` for ``tests._checks.assert_close(out, ref, rtol, atol,
    scale=magnitude)`` of a GEMM-like result in ``out_dtype``.

    The result is computed in ``compute`` precision (float32 accumulate for half / fp8 / tf32
    inputs, float64 for float64) and rounded once to ``out_dtype``: with ``S = scale``
    (:func:`gemm_scale`), ``y`` the computed value before the output rounding,

        |y - ref| <= r_c · S,   r_c = cond · (k + EPILOGUE_TERMS + ACT_TERMS + extra_terms)
                                      · eps(compute)
                                  (+ cond · TF32_PRODUCT with ``tf32``,
                                   + cond · ceil(k / FP8_ACC_K) · FP8_ACC_EPS with ``fp8_acc``)
        |out - y| <= r_o · |y|,  r_o = eps(out_dtype) / 2

    so |out - ref| <= (r_o + r_c) · |ref| + r_c · (1 + r_o) · S: ``rtol = r_o + r_c`` (the
    :func:`tests._checks.bounds` of the output dtype, k terms and the epilogue, plus the tf32 /
    fp8 accumulator parts) applied to ``magnitude = |ref| + r_c (1 + r_o) / rtol · S`` (>= |ref|,
    <= |ref| + S): the output rounding stays relative to the result, the accumulated error to
    the terms' magnitude.  ``extra_terms``: more rounded adds (a split-K reduction: the number of
    splits).  ``atol`` is the output dtype's smallest normal."""
    cond = ACT_COND[epilogue]
    terms = k + EPILOGUE_TERMS + ACT_TERMS[epilogue] + extra_terms
    rtol, atol = bounds(out_dtype, compute=compute, terms=terms, cond=cond)
    r_o = bounds(out_dtype)[0]
    r_c = rtol - r_o
    if tf32:
        r_c += cond * TF32_PRODUCT
    if fp8_acc:
        r_c += cond * math.ceil(k / FP8_ACC_K) * FP8_ACC_EPS
    rtol = r_o + r_c
    mag = ref.double().abs() + (r_c * (1 + r_o) / rtol) * scale.double()
    return rtol, atol, mag


def assert_gemm_close(out, ref, k, *, scale, compute="float32", epilogue="identity",
                      extra_terms=0, tf32=False, fp8_acc=False, ctx=()):
    """Every element of ``out`` (float dtype; finite where ``ref`` is, so a NaN poison left
    unwritten fails) within the :func:`gemm_tolerance` of its dtype and k, and the norm too;
    returns the relative Frobenius error (for logging).  ``ctx`` names the case in messages."""
    rtol, atol, mag = gemm_tolerance(out.dtype, ref, k, scale=scale, compute=compute,
                                     epilogue=epilogue, extra_terms=extra_terms, tf32=tf32,
                                     fp8_acc=fp8_acc)
    return assert_close(out, ref, rtol, atol, scale=mag, what=repr(ctx))


# -- operands and outputs --------------------------------------------------------------------
def dense_operand(torch, rows, cols, tdt, gen, transposed=False):
    """A random (rows, cols) CUDA operand of torch dtype ``tdt``: row-major, or the transposed
    view of a row-major (cols, rows) tensor (column-major)."""
    x = torch.randn((cols, rows) if transposed else (rows, cols), generator=gen,
                    device="cuda").to(tdt)
    return x.t() if transposed else x


def padded_operand(torch, rows, cols, tdt, gen, transposed=False):
    """(rows, cols) operand with a 16-byte multiple leading dim: row-major, or the transpose
    view of a row-major (cols, rows) buffer; the padding holds NaN (must never be read)."""
    if transposed:
        ld = -(-max(rows, 1) // 8) * 8
        buf = torch.full((cols, ld), float("nan"), device="cuda", dtype=tdt)
        buf[:, :rows] = torch.randn((cols, rows), generator=gen, device="cuda").to(tdt)
        return buf[:, :rows].t()
    ld = -(-max(cols, 1) // 8) * 8
    buf = torch.full((rows, ld), float("nan"), device="cuda", dtype=tdt)
    buf[:, :cols] = torch.randn((rows, cols), generator=gen, device="cuda").to(tdt)
    return buf[:, :cols]


def int_operand(torch, shape, dt, gen):
    """Random int8 ("i8": [-128, 128)) or uint8 ("u8": [0, 256)) CUDA tensor."""
    lo, hi = (-128, 128) if dt == "i8" else (0, 256)
    return torch.randint(lo, hi, shape, generator=gen, device="cuda").to(
        torch.int8 if dt == "i8" else torch.uint8)


def poisoned_workspace(torch, plan, min_bytes=0):
    """A split-K workspace of ``plan.workspace_size()`` (at least ``min_bytes``) bytes, every
    byte 0xFF: NaN as float32, so a partial product the reduction reads but no split wrote
    shows as NaN in c."""
    n = max(plan.workspace_size(), min_bytes)
    return torch.full((n,), 0xFF, device="cuda", dtype=torch.uint8)
