"""IntGemmPlan on the GPU (gemm_int8: mma.sync m16n8k32 s8/u8 → s32) against exact references:
int32 output bit-exact, dequantised f32 output per element within its three f32 roundings
(float32(acc), sa · sb, · acc) and the final one (no cancellation: relative to |ref|); odd m / n
(1, 7, 33, 130, 1000), k a multiple of 16 but not of the 64 / 128-byte k tile, M = 1, every
signedness pair, per-row / per-column and broadcast scales, strided c, poisoned outputs (int32:
iinfo.max; f32: NaN), typed errors before launch."""

import pytest
from _gemm_helpers import int_mods as _mods, tuned
from _gemm_helpers import int_operand as _operand

from tests._checks import assert_close, assert_equal, bounds, poison_

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
    poison_(torch, c)                                     # NaN / 2**31 - 1
    sa = sb = None
    if dequant:
        sa = torch.rand((1 if scalar_a else m,), generator=gen, device="cuda") + 0.5
        sb = torch.rand((1 if scalar_b else n,), generator=gen, device="cuda") + 0.5
    plan = IntGemmPlan.select(IntGemmDescriptor(m, n, k, ad, bd, dequant), tuned(tile=tile))
    plan.run(IntGemmArgs(a, b, c, sa, sb))
    torch.cuda.synchronize()
    acc = a.double() @ b.double()                         # exact: |acc| < 2**53
    ctx = repr((m, n, k, ad, bd, dequant, scalar_a, scalar_b, tile, c_t))
    if not dequant:
        assert_equal(c, acc.to(torch.int64), what=ctx)
    else:
        ref = sa.double()[:, None] * sb.double()[None, :] * acc   # length-1 scales broadcast
        # products only (no cancellation): 3 f32 roundings + the output's, relative to |ref|
        rtol, atol = bounds("float32", compute="float32", terms=3)
        assert_close(c, ref, rtol, atol, what=ctx)


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
    cbuf = poison_(torch, torch.empty((m, 2 * n), dtype=torch.int32, device="cuda"))
    c = cbuf[:, ::2]
    IntGemmPlan.select(IntGemmDescriptor(m, n, k)).run(IntGemmArgs(a, b, c))
    torch.cuda.synchronize()
    assert_equal(c, (a.double() @ b.double()).to(torch.int64), what="strided c")
    assert (cbuf[:, 1::2] == torch.iinfo(torch.int32).max).all()    # untouched


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
