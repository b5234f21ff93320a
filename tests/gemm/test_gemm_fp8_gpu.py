"""Fp8GemmPlan on the GPU (gemm_fp8: mma.sync m16n8k32 e4m3 / e5m2, f32 accumulate) against a
float64 reference computed from the same fp8-rounded inputs and scales, every element within a
bound from the OUTPUT dtype and k (_gemm_helpers.gemm_tolerance: one rounding to bf16 / f16 /
f32 relative to the result; f32 accumulation relative to |sa·sb|·|a|@|b| + |bias| — plus, where
the fp8 tensor cores keep a reduced-precision accumulator (the sm90a wgmma kernel, sm89's native
fp8 mma.sync), one e8m13 truncation per 32-deep k step).  Every a / b type pair and output dtype,
per-tensor / per-row / per-column scales in every accepted shape, bias, odd m / n (1, 7, 33,
257) and k (16, 48, 1040: not multiples of the k tile), empty problems, column-major and padded
c, padded a / b leading dims (padding holds fp8 NaN, so reading it shows), forced tiles,
NaN-poisoned outputs and split-K workspaces, the agreement with ``torch._scaled_mm``, and typed
errors before launch."""

import pytest
from _gemm_helpers import assert_gemm_close, gemm_scale, gemm_tolerance, poisoned_workspace, tuned

from tests._checks import assert_close, poison, poison_

pytestmark = pytest.mark.gpu


def _fp8_acc(plan) -> bool:
    """Whether the plan's kernel sums on fp8 tensor cores with the reduced-precision (e8m13)
    accumulator: the sm90a wgmma kernel (measured, ops/gemm/gemm_fp8.py) and sm89's native fp8
    mma.sync (not measured: assumed alike).  sm90a's fp8 mma.sync runs as f16 MMAs with f32
    accumulation."""
    return plan.sku().template == "gemm_sm90" or plan.sku().arch.value == "sm89"


def _scale_of(torch, a, b, sa, sb, bv):
    """|sa ⊗ sb| · |a| @ |b| (+ |bias|) in float64: what the accumulated error is relative to."""
    s = (sa.double().abs().reshape(-1, 1) * sb.double().abs().reshape(1, -1)) * gemm_scale(
        torch, a, b)
    return s if bv is None else s + bv.double().abs()


def _mods():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    if torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("capability: fp8 tensor cores need sm89 or sm90a")
    from baracuda_dsl.ops.gemm import gemm_fp8

    return torch, gemm_fp8


def _tdt(torch, name):
    return {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2, "bf16": torch.bfloat16,
            "f16": torch.float16, "f32": torch.float32}[name]


def _fp8(torch, rows, cols, dt, gen, ld=None, scale=2.0):
    """Random (rows, cols) row-major fp8 operand (normal data × ``scale``); with ``ld`` the
    view of a (rows, ld) buffer whose padding holds fp8 NaN bytes (0x7F)."""
    tdt = _tdt(torch, dt)
    ld = cols if ld is None else ld
    buf = torch.empty((rows, ld), device="cuda", dtype=torch.uint8).fill_(0x7F).view(tdt)
    if rows and cols:
        buf[:, :cols] = (torch.randn((rows, cols), generator=gen, device="cuda")
                         * scale).to(tdt)
    return buf[:, :cols]


def _scale(torch, shape, gen):
    return torch.rand(shape, generator=gen, device="cuda") + 0.5


def _out(torch, m, n, out, layout):
    """Poisoned (NaN) c: "row" (dense), "col" (column-major), "pad" (row stride n + 5) or "gap"
    (column stride 2); returns (c, the buffer)."""
    tdt = _tdt(torch, out)
    if layout == "col":
        buf = torch.empty((n, m), device="cuda", dtype=tdt)
        c = buf.t()
    elif layout == "pad":
        buf = torch.empty((m, n + 5), device="cuda", dtype=tdt)
        c = buf[:, :n]
    elif layout == "gap":
        buf = torch.empty((m, 2 * n), device="cuda", dtype=tdt)
        c = buf[:, ::2]
    else:
        buf = torch.empty((m, n), device="cuda", dtype=tdt)
        c = buf
    poison_(torch, buf)
    return c, buf


def _run(m, n, k, at="e4m3", bt="e4m3", out="bf16", sa_shape="row", sb_shape="tensor",
         bias=False, tile=None, c_layout="row", lda=None, ldb=None, seed=0, splits=None):
    torch, F = _mods()
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = _fp8(torch, m, k, at, gen, lda)                        # (m, k) row-major
    b = _fp8(torch, n, k, bt, gen, ldb).t()                    # (k, n) = w.T, column-major
    c, buf = _out(torch, m, n, out, c_layout)
    sa = _scale(torch, {"tensor": (1,), "tensor2": (1, 1), "row": (m,), "row2": (m, 1)}[sa_shape],
                gen)
    sb = _scale(torch, {"tensor": (1,), "tensor2": (1, 1), "col": (n,), "col2": (1, n)}[sb_shape],
                gen)
    bv = (torch.randn((n,), generator=gen, device="cuda") * 4).to(_tdt(torch, out)) \
        if bias else None
    desc = F.Fp8GemmDescriptor(m, n, k, at, bt, out, "bias" if bias else "identity")
    plan = F.Fp8GemmPlan.select(desc, tuned(tile=tile, splits=splits))
    if splits is not None:
        assert plan.splits == splits
    ws = poisoned_workspace(torch, plan)         # split-K f32 partials: NaN until written
    plan.run(F.Fp8GemmArgs(a, b, c, sa, sb, bv), workspace=ws)
    torch.cuda.synchronize()
    ref = (sa.double().reshape(-1, 1) * sb.double().reshape(1, -1)) * (a.double() @ b.double())
    if bias:
        ref = ref + bv.double()
    ctx = (m, n, k, at, bt, out, sa_shape, sb_shape, bias, tile, c_layout, plan.splits,
           plan.sku().template)
    assert_gemm_close(c, ref, k, scale=_scale_of(torch, a, b, sa, sb, bv),
                      epilogue="bias" if bias else "identity", extra_terms=plan.splits,
                      fp8_acc=_fp8_acc(plan), ctx=ctx)
    if c_layout == "pad":
        assert torch.isnan(buf[:, n:].float()).all(), ctx          # untouched
    elif c_layout == "gap":
        assert torch.isnan(buf[:, 1::2].float()).all(), ctx
    return plan, (a, b, c, sa, sb, bv, ref)


@pytest.mark.parametrize("at", ["e4m3", "e5m2"])
@pytest.mark.parametrize("bt", ["e4m3", "e5m2"])
@pytest.mark.parametrize("out", ["bf16", "f16", "f32"])
def test_types_and_outputs(at, bt, out):
    _run(200, 72, 1040, at, bt, out, sa_shape="row", sb_shape="col")
    _run(33, 257, 48, at, bt, out, sa_shape="tensor", sb_shape="tensor", bias=True)


@pytest.mark.parametrize("m", [1, 7, 33, 257])
def test_odd_sizes(m):
    for n, k in ((1, 16), (7, 48), (33, 1040), (257, 48)):
        _run(m, n, k, seed=m + n)


@pytest.mark.parametrize("sa_shape", ["tensor", "tensor2", "row", "row2"])
def test_scale_shapes(sa_shape):
    for sb_shape in ("tensor", "tensor2", "col", "col2"):
        _run(40, 24, 64, out="f32", sa_shape=sa_shape, sb_shape=sb_shape)


@pytest.mark.parametrize("out", ["bf16", "f16", "f32"])
def test_bias(out):
    _run(70, 130, 208, "e4m3", "e5m2", out, sa_shape="row2", sb_shape="col2", bias=True)
    _run(1, 33, 16, "e5m2", "e4m3", out, bias=True)


@pytest.mark.parametrize("c_layout", ["col", "pad", "gap"])
def test_strided_c_and_padded_operands(c_layout):
    _run(37, 29, 64, c_layout=c_layout, lda=96, ldb=80)
    _run(130, 70, 1040, "e5m2", "e5m2", "f16", c_layout=c_layout, lda=1056, ldb=1072,
         bias=True)


def _hopper(torch):
    return torch.cuda.get_device_capability() == (9, 0)


@pytest.mark.parametrize("tile", [None, "64x64", "128x128", "wgmma128x128", "wgmma128x256"])
def test_tiles(tile):
    torch, _ = _mods()
    if tile and tile.startswith("wgmma") and not _hopper(torch):
        pytest.skip("capability: wgmma tiles need sm90a")
    plan, _ = _run(300, 260, 208, out="f32", tile=tile, sb_shape="col")
    knobs = dict(plan.sku().knobs)
    if tile is None:
        # sm90a: m > 16 runs the wgmma kernel (128x128: < one wave of 128x256 tiles)
        assert (plan.sku().template, knobs["tile"]) == (
            ("gemm_sm90", "128x128") if _hopper(torch) else ("gemm_fp8", "64x64"))
    elif tile.startswith("wgmma"):
        assert plan.sku().template == "gemm_sm90" and knobs["tile"] == tile[5:]
    else:
        assert plan.sku().template == "gemm_fp8" and knobs["tile"] == tile


@pytest.mark.parametrize("tile", ["64x64", "128x128", "wgmma128x128", "wgmma128x256"])
@pytest.mark.parametrize("pair", [("e4m3", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e4m3")])
def test_both_kernels_every_pair(tile, pair):
    """Every wgmma type pair and both kernels on edge tiles (m, n, k not tile multiples), per-row
    and per-column scales, bias, column-major c."""
    torch, _ = _mods()
    if tile.startswith("wgmma") and not _hopper(torch):
        pytest.skip("capability: wgmma tiles need sm90a")
    _run(300, 390, 1040, *pair, "bf16", sa_shape="row", sb_shape="col", bias=True, tile=tile)
    _run(17, 130, 48, *pair, "f32", sa_shape="tensor", sb_shape="col2", tile=tile,
         c_layout="col")


@pytest.mark.parametrize("splits", [None, 2, 3])
def test_wgmma_split_k(splits):
    """sm90a split-K over the wgmma kernel: f32 partials (scales applied) in the workspace,
    gemm_splitk_reduce adds the bias and rounds; default small grid and forced splits with a k
    residue, every output dtype, per-row / per-column scales."""
    torch, _ = _mods()
    if not _hopper(torch):
        pytest.skip("capability: wgmma split-K needs sm90a")
    if splits is None:
        plan, _ = _run(64, 4096, 4096, sa_shape="row", sb_shape="col", bias=True)
        assert plan.splits == 4 and plan.sku().template == "gemm_sm90"
        return
    for i, out in enumerate(("bf16", "f16", "f32")):
        _run(70, 300, 128 * 7 + 16, "e4m3", ("e4m3", "e5m2", "e4m3")[i], out, sa_shape="row",
             sb_shape="col", bias=i != 1, tile="wgmma128x128", splits=splits, seed=i,
             c_layout=("row", "col", "pad")[i])


def test_large_default_big_tile():
    torch, _ = _mods()
    plan, _ = _run(1536, 1024, 1024, "e4m3", "e4m3", "bf16", sb_shape="col")
    if _hopper(torch):
        assert plan.sku().template == "gemm_sm90"
    else:
        assert dict(plan.sku().knobs)["tile"] == "128x128"
    plan, _ = _run(4096, 4352, 512, "e4m3", "e4m3", "bf16", sb_shape="col", seed=3)
    if _hopper(torch):   # >= 132 tiles of 128x256
        assert dict(plan.sku().knobs)["tile"] == "128x256"


def test_empty():
    """Empty m / n (k > 0): nothing is launched and c — a zero-size view of a poisoned buffer —
    leaves the buffer untouched (still NaN), every output dtype, with and without bias.  k = 0
    is not wired (ops/gemm/gemm_fp8.py: "k = 0 is not wired"): the descriptor raises
    UnsupportedError, also for an empty m / n."""
    import baracuda_dsl as bd

    torch, F = _mods()
    for m, n in ((0, 8), (8, 0), (0, 0)):
        for out, bias in (("bf16", False), ("f16", True), ("f32", True)):
            tdt = _tdt(torch, out)
            a = torch.zeros((m, 16), device="cuda").to(torch.float8_e4m3fn)
            b = torch.zeros((n, 16), device="cuda").to(torch.float8_e4m3fn).t()
            buf = poison(torch, (8, 8), tdt)
            c = buf[:m, :n]
            s = torch.ones((1,), device="cuda")
            bv = poison(torch, (n,), tdt) if bias else None
            plan = F.Fp8GemmPlan.select(F.Fp8GemmDescriptor(m, n, 16, out_dtype=out,
                                                            epilogue="bias" if bias else
                                                            "identity"))
            assert plan.workspace_size() == 0, (m, n, out)
            plan.run(F.Fp8GemmArgs(a, b, c, s, s, bv))
            torch.cuda.synchronize()
            assert torch.isnan(buf.float()).all(), (m, n, out, bias)     # untouched
    for m, n in ((8, 8), (0, 8), (8, 0)):
        with pytest.raises(bd.UnsupportedError, match="k = 0 is not wired"):
            F.Fp8GemmDescriptor(m, n, 0)


@pytest.mark.parametrize("rowwise", [False, True])
def test_matches_scaled_mm(rowwise):
    torch, F = _mods()
    m, n, k = 256, 512, 1024
    gen = torch.Generator(device="cuda").manual_seed(7)
    a = _fp8(torch, m, k, "e4m3", gen)
    b = _fp8(torch, n, k, "e4m3", gen).t()
    sa = _scale(torch, (m, 1) if rowwise else (1, 1), gen)
    sb = _scale(torch, (1, n) if rowwise else (1, 1), gen)
    try:
        ref_t = torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
    except Exception as e:      # older torch / unsupported combination: nothing to compare
        pytest.skip(f"torch._scaled_mm: {type(e).__name__}: {e}")
    if isinstance(ref_t, tuple):
        ref_t = ref_t[0]
    c = poison(torch, (m, n), torch.bfloat16)
    plan = F.Fp8GemmPlan.select(F.Fp8GemmDescriptor(m, n, k))
    plan.run(F.Fp8GemmArgs(a, b, c, sa, sb), workspace=poisoned_workspace(torch, plan))
    torch.cuda.synchronize()
    ref = sa.double() * sb.double() * (a.double() @ b.double())
    scale = _scale_of(torch, a, b, sa, sb, None)
    rtol, atol, mag = gemm_tolerance(c.dtype, ref, k, scale=scale, extra_terms=plan.splits,
                                     fp8_acc=_fp8_acc(plan))
    assert_close(c, ref, rtol, atol, scale=mag, what=f"ours, rowwise={rowwise}")
    # torch's result against the same reference (cuBLAS may accumulate on the fp8 tensor
    # cores' reduced-precision accumulator: that model bounds both)
    rtol_t, atol_t, mag_t = gemm_tolerance(ref_t.dtype, ref, k, scale=scale, fp8_acc=True)
    assert_close(ref_t, ref, rtol_t, atol_t, scale=mag_t, what=f"torch, rowwise={rowwise}")
    # hence ours and torch's agree within the sum of the two bounds, element by element
    rt = rtol + rtol_t
    assert_close(c, ref_t, rt, atol + atol_t, scale=(rtol * mag + rtol_t * mag_t) / rt,
                 what=f"ours vs torch, rowwise={rowwise}")


def test_typed_errors_before_launch():
    torch, F = _mods()
    import baracuda_dsl as bd

    m, n, k = 32, 48, 64
    gen = torch.Generator(device="cuda").manual_seed(1)
    a = _fp8(torch, m, k, "e4m3", gen)
    b = _fp8(torch, n, k, "e4m3", gen).t()
    c = poison(torch, (m, n), torch.bfloat16)
    s = torch.ones((1,), device="cuda")
    plan = F.Fp8GemmPlan.select(F.Fp8GemmDescriptor(m, n, k))
    with pytest.raises(bd.UnsupportedError, match="row-major a"):
        plan.run(F.Fp8GemmArgs(_fp8(torch, k, m, "e4m3", gen).t(), b, c, s, s))
    with pytest.raises(bd.UnsupportedError, match="column-major b"):
        plan.run(F.Fp8GemmArgs(a, _fp8(torch, k, n, "e4m3", gen), c, s, s))
    big = _fp8(torch, m, k + 16, "e4m3", gen)
    with pytest.raises(bd.MisalignedOperandError):
        plan.run(F.Fp8GemmArgs(big[:, 8:8 + k], b, c, s, s))
    with pytest.raises(bd.InvalidProblemError):
        plan.run(F.Fp8GemmArgs(a, b, c, s.double(), s))
    with pytest.raises(bd.InvalidProblemError):
        plan.run(F.Fp8GemmArgs(a, b, c, torch.ones((m + 1,), device="cuda"), s))
    with pytest.raises(bd.InvalidProblemError):
        plan.run(F.Fp8GemmArgs(a, b, c, s, s, torch.zeros((n,), device="cuda",
                                                          dtype=torch.bfloat16)))
    with pytest.raises(bd.UnsupportedError):
        plan.run(F.Fp8GemmArgs(a, b, c.float(), s, s))
    torch.cuda.synchronize()
    assert torch.isnan(c.float()).all()                 # nothing was launched
