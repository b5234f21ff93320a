"""GemmPlan with ``allow_tf32=True`` on the GPU (gemm_tf32: mma.sync m16n8k8 tf32) against float64
torch references: odd sizes, K not a multiple of the k tile, M = 1, all four operand layouts,
every epilogue, alpha / beta, poisoned outputs, SIMT fallback of unaligned operands.
Every element is checked against a bound from the float32 output and k
(_gemm_helpers.gemm_tolerance): on gemm_tf32 both factors of every product are rounded to tf32
(<= 2**-11 each, cvt.rna: 2·2**-11 relative to |a|·|b|) on top of the f32 accumulation; the
SIMT fallback is strict f32 (the tf32 part is left out there)."""

import pytest
from _gemm_helpers import assert_gemm_close, gemm_scale, poisoned_workspace, tuned
from _gemm_helpers import dense_operand, gemm_mods, ref_gemm

from tests._checks import poison_

pytestmark = pytest.mark.gpu


def _run(m, n, k, *, a_t=False, b_t=False, alpha=1.0, beta=0.0, epilogue="identity",
         tile=None, expect="gemm_tf32", seed=0):
    torch, GemmArgs, GemmDescriptor, GemmPlan = gemm_mods()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = dense_operand(torch, m, k, torch.float32, gen, a_t)
    b = dense_operand(torch, k, n, torch.float32, gen, b_t)
    c = torch.randn((m, n), generator=gen, device="cuda")
    if beta == 0:
        poison_(torch, c)                           # poisoned: must not be read
    c_old = c.clone()
    bias = torch.randn((n,), generator=gen, device="cuda") if epilogue != "identity" else None
    plan = GemmPlan.select(GemmDescriptor(m, n, k, "f32", alpha=alpha, beta=beta,
                                          epilogue=epilogue, allow_tf32=True), tuned(tile=tile))
    args = GemmArgs(a, b, c, bias)
    name = plan.kernel_for(args)[0].name
    if expect is not None:
        assert name == expect, (m, n, k, name)
    plan.run(args, workspace=poisoned_workspace(torch, plan))
    torch.cuda.synchronize()
    ref = ref_gemm(torch, a, b, c_old, bias, alpha, beta, epilogue)
    return assert_gemm_close(c, ref, k, scale=gemm_scale(torch, a, b, c_old, bias, alpha, beta),
                             epilogue=epilogue, extra_terms=plan.splits,
                             tf32=name == "gemm_tf32", ctx=(m, n, k, a_t, b_t, name, epilogue))


@pytest.mark.parametrize("m", [1, 7, 33, 130, 1000])
@pytest.mark.parametrize("a_t,b_t", [(False, False), (True, True)])
def test_odd_sizes(m, a_t, b_t):
    # n, k multiples of 4 (the tf32 path's vector); k not a multiple of the 16 / 32 k tile
    for n, k in ((8, 4), (36, 132), (260, 1000)):
        # an m-major a needs m % 4 == 0 for the tensor-core path (else SIMT)
        _run((m + 3) // 4 * 4 if a_t else m, n, k, a_t=a_t, b_t=b_t)
    if a_t and m % 4 and m > 1:    # (m = 1: the 1-row view is k-contiguous too)
        _run(m, 36, 132, a_t=True, b_t=b_t, expect="gemm_simt")


@pytest.mark.parametrize("a_t", [False, True])
@pytest.mark.parametrize("b_t", [False, True])
@pytest.mark.parametrize("tile", [None, "64x64", "128x128"])
def test_layouts_and_tiles(a_t, b_t, tile):
    _run(260, 132, 100, a_t=a_t, b_t=b_t, tile=tile)


def test_big_and_error_is_tf32_like():
    # large k: error stays in the tf32 range (and is clearly above strict f32's ~1e-7)
    err = _run(1024, 1024, 2048)
    assert err > 1e-6


@pytest.mark.parametrize("epilogue", ["identity", "bias", "bias_relu", "bias_gelu",
                                      "bias_silu"])
def test_epilogues_alpha_beta(epilogue):
    _run(77, 68, 36, epilogue=epilogue, alpha=0.5, beta=-1.25)
    _run(129, 132, 64, epilogue=epilogue)


def test_unaligned_falls_back_to_simt():
    # k = 6 (not a multiple of 4): strict f32 SIMT kernel, still correct
    _run(33, 8, 6, expect="gemm_simt")
    _run(33, 8, 8, tile="simt", expect="gemm_simt")
