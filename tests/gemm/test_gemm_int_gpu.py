"""IntGemmPlan on the GPU (gemm_int8: mma.sync m16n8k32 s8/u8 → s32) against exact references:
int32 output bit-exact, dequantised f32 output to ~1e-6; odd m / n (1, 7, 33, 130, 1000), k a
multiple of 16 but not of the 64 / 128-byte k tile, M = 1, every signedness pair, per-row /
per-column and broadcast scales, strided c, poisoned outputs, typed errors before launch."""

import pytest
from _gemm_helpers import int_mods as _mods, tuned
from _gemm_helpers import int_operand as _operand
from _gemm_helpers import poison_

pytestmark = pytest.mark.gpu


def _run(m, n, k, ad="i8", bd="i8", dequant=False, scalar_a=False, scalar_b=False, tile=None,
         c_t=False, seed=0):
    torch, IntGemmArgs, IntGemmDescriptor, IntGemmPlan = _mods()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = _operand(torch, (m, k), ad, gen)                  # row-major
    b = _operand(torch, (n, k), bd, gen).t()              # (k, n) column-major
    odt = torch.float32 if dequant else torch.int32
    c = torch.empty((n, m) if c_t else (m, n), device="cuda", dtype=odt)
    c = c.t() if c_t else c
    poison_(c)                                            # NaN / 0x7F7F7F7F
    sa = sb = None
    if dequant:
        sa = torch.rand((1 if scalar_a else m,), generator=gen, device="cuda") + 0.5
        sb = torch.rand((1 if scalar_b else n,), generator=gen, device="cuda") + 0.5
    plan = IntGemmPlan.select(IntGemmDescriptor(m, n, k, ad, bd, dequant), tuned(tile=tile))
    plan.run(IntGemmArgs(a, b, c, sa, sb))
    torch.cuda.synchronize()
    acc = a.double() @ b.double()                         # exact: |acc| < 2**53
    if not dequant:
        assert torch.equal(c.double(), acc), (m, n, k, ad, bd, (c.double() - acc).abs().max())
    else:
        ref = sa.double()[:, None] * sb.double()[None, :] * acc   # length-1 scales broadcast
        assert torch.isfinite(c).all()
        err = (c.double() - ref).abs().max().item()
        tol = 1e-6 * max(ref.abs().max().item(), 1.0)
        assert err <= tol, (m, n, k, ad, bd, err)


@pytest.mark.parametrize("m", [1, 7, 33, 130, 1000])
def test_exact_odd_sizes(m):
    for n, k in ((1, 16), (7, 48), (33, 80), (130, 1008)):
        _run(m, n, k)


@pytest.mark.parametrize("ad", ["i8", "u8"])
@pytest.mark.parametrize("bd", ["i8", "u8"])
@pytest.mark.parametrize("tile", [None, "64x64", "128x128"])
def test_signedness_and_tiles(ad, bd, tile):
    _run(130, 70, 208, ad, bd, tile=tile)


def test_large_exact():
    _run(1024, 1024, 1024, "u8", "i8")          # 128x128 tile, full pipeline


@pytest.mark.parametrize("ad,bd", [("i8", "i8"), ("u8", "u8"), ("u8", "i8")])
def test_dequant(ad, bd):
    _run(33, 130, 1008, ad, bd, dequant=True)
    _run(1, 7, 16, ad, bd, dequant=True, scalar_a=True)
    _run(130, 33, 48, ad, bd, dequant=True, scalar_a=True, scalar_b=True, c_t=True)


def test_strided_c_and_padded_lds():
    torch, IntGemmArgs, IntGemmDescriptor, IntGemmPlan = _mods()
    m, n, k = 37, 29, 64
    gen = torch.Generator(device="cuda").manual_seed(3)
    abuf = _operand(torch, (m, 96), "i8", gen)
    bbuf = _operand(torch, (n, 80), "i8", gen)
    a, b = abuf[:, :k], bbuf[:, :k].t()                  # lda = 96, ldb = 80
    cbuf = torch.full((m, 2 * n), 0x7F7F7F7F, dtype=torch.int32, device="cuda")
    c = cbuf[:, ::2]
    IntGemmPlan.select(IntGemmDescriptor(m, n, k)).run(IntGemmArgs(a, b, c))
    torch.cuda.synchronize()
    assert torch.equal(c.double(), a.double() @ b.double())
    assert (cbuf[:, 1::2] == 0x7F7F7F7F).all()            # untouched


def test_typed_errors_before_launch():
    import baracuda_dsl as bd

    torch, IntGemmArgs, IntGemmDescriptor, IntGemmPlan = _mods()
    m, n, k = 8, 8, 32
    p = IntGemmPlan.select(IntGemmDescriptor(m, n, k))
    abuf = torch.zeros((m, k + 16), dtype=torch.int8, device="cuda")
    b = torch.zeros((n, k), dtype=torch.int8, device="cuda").t()
    c = torch.zeros((m, n), dtype=torch.int32, device="cuda")
    with pytest.raises(bd.MisalignedOperandError):
        p.run(IntGemmArgs(abuf[:, 1:k + 1], b, c))      # base not 16-byte aligned
    with pytest.raises(bd.UnsupportedError):
        p.run(IntGemmArgs(abuf[:, :k], b.contiguous(), c))     # row-major b
