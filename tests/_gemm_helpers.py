"""Helpers shared by the GEMM tests (the GPU tests test_gemm_tf32_gpu, test_gemm_sm90_gpu,
test_gemm_int_gpu; test_gemm_gpu's own copies map onto these): float64 references with every
epilogue, the relative Frobenius error, operand builders (dense / transposed views, padded
leading dims, random int8 / uint8), poisoned outputs and module loaders that skip cleanly; and
:func:`tuned` (a preference with a GemmTuning record), used by the CPU tests too.
Importable without torch or a GPU (the helpers take the torch module as an argument)."""

import dataclasses
import math

import pytest

import baracuda_dsl as bd


def tuned(pref=None, **tuning):
    """``pref`` (default: ``PlanPreference()``) with ``GemmTuning(**tuning)`` (tile, splits)."""
    return dataclasses.replace(bd.PlanPreference() if pref is None else pref,
                               tuning=bd.GemmTuning(**tuning))

#: ‖out − ref‖ / ‖ref‖ bounds by input dtype (f16 / bf16: f32 accumulate, output rounding)
TOL = {"bfloat16": 1e-2, "float16": 5e-3, "float32": 1e-5, "float64": 1e-12}
#: tf32 rounds inputs to 10 mantissa bits (RN): ≈ 2-3e-4 for O(1) data
TF32_TOL = 6e-4
#: the int32 poison word of integer outputs (never a plausible small-k result)
INT_POISON = 0x7F7F7F7F


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


def rel_err(torch, out, ref):
    """‖out − ref‖ / ‖ref‖ in float64 (‖out − ref‖ when ref is all zero)."""
    den = torch.linalg.norm(ref).item()
    num = torch.linalg.norm(out.double() - ref).item()
    return num / den if den else num


def assert_close(torch, out, ref, tol, ctx=()):
    """Every element of ``out`` finite and :func:`rel_err` <= ``tol``; returns the error.
    ``ctx`` (a tuple) is prepended to the assertion messages."""
    assert torch.isfinite(out).all(), ctx
    err = rel_err(torch, out, ref)
    assert err <= tol, (*ctx, err)
    return err


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


def poison_(c):
    """Fill ``c`` in place with NaN (floating) or :data:`INT_POISON` (integer) so unwritten
    elements show; returns ``c``."""
    if c.numel():
        c.fill_(float("nan") if c.dtype.is_floating_point else INT_POISON)
    return c
