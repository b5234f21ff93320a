"""GemmPlan without a GPU: validation, kernel routing by operand layout, SKU space, cross-compile."""

import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import bfloat16, float16, float32, float64
from baracuda_dsl.ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan
from baracuda_dsl.ops.gemm.specs.gemm import SimtKnobs
from baracuda_dsl.tensor import TensorView
from _gemm_helpers import tuned

# the mma.sync / SIMT choices (sm80 and sm89; on sm90a large f16/bf16 grids take gemm_sm90,
# see test_gemm_sm90_cpu.py)
PREF = bd.PlanPreference(arch=bd.ArchSku.SM80)
BASE = 1 << 20


def tv(shape, strides, dtype, off=0):
    return TensorView(BASE + off, shape, strides, dtype, 0)


def row(m, k, dt, ld=None, off=0):
    return tv((m, k), (k if ld is None else ld, 1), dt, off)


def col(m, k, dt, ld=None, off=0):
    return tv((m, k), (1, m if ld is None else ld), dt, off)


def test_descriptor_validation():
    d = GemmDescriptor(4, 5, 6, "bf16")
    assert d.out_dtype is bfloat16 and d.epilogue == "identity" and not d.has_bias
    assert GemmDescriptor(4, 5, 6, "f16", out_dtype="f32").out_dtype is float32
    assert GemmDescriptor(4, 5, 6, "f64", out_dtype="f32").out_dtype is float32
    for bad in (dict(m=-1), dict(n=1.5), dict(k=True)):
        kw = dict(m=1, n=1, k=1, dtype="f32")
        kw.update(bad)
        with pytest.raises(bd.InvalidProblemError):
            GemmDescriptor(**kw)
    with pytest.raises(bd.UnsupportedError):
        GemmDescriptor(1, 1, 1, "int32")
    with pytest.raises(bd.UnsupportedError):
        GemmDescriptor(1, 1, 1, "bf16", out_dtype="f16")   # out must be dtype or f32
    with pytest.raises(bd.UnsupportedError):
        GemmDescriptor(1, 1, 1, "f32", out_dtype="f64")
    with pytest.raises(bd.UnsupportedError):
        GemmDescriptor(1, 1, 1, "f32", epilogue="bias_tanh")
    with pytest.raises(bd.InvalidProblemError):
        GemmDescriptor(1, 1, 1, "f32", alpha=float("nan"))
    with pytest.raises(bd.InvalidProblemError):
        GemmDescriptor(1, 1, 1, "f32", beta="x")
    with pytest.raises(bd.InvalidProblemError):
        GemmPlan.select("not a descriptor", PREF)
    with pytest.raises(bd.UnsupportedError):
        GemmPlan.select(GemmDescriptor(1, 1, 1, "f32"), tuned(PREF, tile="128x128"))
    with pytest.raises(bd.UnsupportedError):
        GemmPlan.select(GemmDescriptor(1, 1, 1, "f16"), tuned(PREF, tile="256x256"))


def test_args_validation():
    d = GemmDescriptor(8, 16, 32, "bf16", epilogue="bias")
    p = GemmPlan.select(d, PREF)
    assert p.workspace_size() == 0
    a, b, c = row(8, 32, bfloat16), row(32, 16, bfloat16), row(8, 16, bfloat16)
    bias = tv((16,), (1,), bfloat16)
    p.can_implement(GemmArgs(a, b, c, bias))
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement(GemmArgs(a, b, c))                          # bias missing
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement(GemmArgs(row(8, 31, bfloat16), b, c, bias))  # shape
    with pytest.raises(bd.UnsupportedError):
        p.can_implement(GemmArgs(row(8, 32, float16), b, c, bias))   # dtype
    with pytest.raises(bd.UnsupportedError):
        p.can_implement(GemmArgs(a, b, row(8, 16, float32), bias))   # c dtype != out dtype
    with pytest.raises(bd.UnsupportedError):
        p.can_implement(GemmArgs(a, b, c, tv((16,), (1,), float32)))
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement(GemmArgs(a, b, tv((8, 16), (0, 1), bfloat16), bias))  # broadcast c
    with pytest.raises(bd.DeviceMismatchError):
        p.can_implement(GemmArgs(a, TensorView(BASE, (32, 16), (16, 1), bfloat16, 1), c, bias))
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement("args")
    q = GemmPlan.select(GemmDescriptor(8, 16, 32, "bf16"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        q.can_implement(GemmArgs(a, b, c, bias))                    # bias with identity
    assert GemmPlan.select(GemmDescriptor(0, 5, 3, "f32"), PREF).is_empty()
    assert GemmPlan.select(GemmDescriptor(5, 0, 3, "f32"), PREF).is_empty()
    assert not GemmPlan.select(GemmDescriptor(5, 5, 0, "f32"), PREF).is_empty()


def test_sku_choice_and_tiles():
    big = GemmPlan.select(GemmDescriptor(4096, 4096, 4096, "bf16"), PREF)
    kn = dict(big.sku().knobs)
    assert big.sku().template == "gemm_mma" and kn["tile"] == "128x128" and kn["act"] == "none"
    assert big.sku().category is bd.OpCategory.GEMM
    assert big.precision_guarantee().accumulator is float32
    small = GemmPlan.select(GemmDescriptor(200, 512, 4096, "f16", epilogue="bias_gelu"),
                            tuned(PREF, splits=1))
    kn = dict(small.sku().knobs)
    assert kn["tile"] == "64x64" and kn["act"] == "gelu" and kn["dtype"] == "f16"
    assert small.splits == 1 and small.workspace_size() == 0
    # split by default (32 CTAs): the sku is the f32 partial-product SKU
    split = GemmPlan.select(GemmDescriptor(200, 512, 4096, "f16", epilogue="bias_gelu"), PREF)
    kn = dict(split.sku().knobs)
    assert split.splits == 8 and kn["tile"] == "64x64" and kn["act"] == "none"
    assert kn["out"] == "f32" and split.sku().epilogue == "bias_gelu"
    dec = GemmPlan.select(GemmDescriptor(16, 4096, 4096, "bf16"), PREF)
    assert dict(dec.sku().knobs)["tile"] == "16x32"
    a, b, c = row(16, 4096, bfloat16), col(4096, 4096, bfloat16), row(16, 4096, bfloat16)
    assert dec.kernel_for(GemmArgs(a, b, c))[1].tile == "16x32"
    # the decode tile has no m-major a SKU: 64x64 serves it
    kn = dec.kernel_for(GemmArgs(col(16, 4096, bfloat16), b, c))[1]
    assert kn.tile == "64x64" and kn.a_major == "m"
    assert dict(GemmPlan.select(GemmDescriptor(17, 4096, 4096, "bf16"),
                                PREF).sku().knobs)["tile"] == "64x64"
    forced = GemmPlan.select(GemmDescriptor(16, 4096, 4096, "f16"), tuned(PREF, tile="128x128"))
    assert dict(forced.sku().knobs)["tile"] == "128x128"
    f32 = GemmPlan.select(GemmDescriptor(64, 64, 64, "f32"), PREF)
    assert f32.sku().template == "gemm_simt"
    f64 = GemmPlan.select(GemmDescriptor(64, 64, 64, "f64", epilogue="bias_silu"), PREF)
    assert f64.sku().template == "gemm_simt" and dict(f64.sku().knobs)["act"] == "silu"
    assert f64.precision_guarantee().accumulator is float64
    for arch in bd.ArchSku:
        p = GemmPlan.select(GemmDescriptor(256, 256, 64, "bf16"), bd.PlanPreference(arch=arch))
        assert p.sku().arch is arch


@pytest.mark.parametrize("am", ["k", "m"])
@pytest.mark.parametrize("bm", ["k", "n"])
def test_layout_routing(am, bm):
    m, n, k = 64, 48, 40
    p = GemmPlan.select(GemmDescriptor(m, n, k, "bf16"), PREF)
    a = row(m, k, bfloat16) if am == "k" else col(m, k, bfloat16)
    b = col(k, n, bfloat16) if bm == "k" else row(k, n, bfloat16)
    c = row(m, n, bfloat16)
    t, kn = p.kernel_for(GemmArgs(a, b, c))
    assert t.name == "gemm_mma" and kn.a_major == am and kn.b_major == bm
    assert kn.tile == "64x64"
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.ops import get_template

    assert freeze_knobs(kn) in get_template("gemm_mma").skus("sm90a")
    # c with any strides stays on the mma path
    assert p.kernel_for(GemmArgs(a, b, col(m, n, bfloat16)))[0].name == "gemm_mma"


def test_simt_fallbacks():
    m, n, k = 64, 48, 40
    p = GemmPlan.select(GemmDescriptor(m, n, k, "f16"), PREF)
    b, c = row(k, n, float16), row(m, n, float16)

    def route(a, bb=b):
        return p.kernel_for(GemmArgs(a, bb, c))[0].name

    assert route(row(m, k, float16)) == "gemm_mma"
    assert route(row(m, k, float16, ld=44)) == "gemm_simt"             # ld % 8
    assert route(row(m, k, float16, off=8)) == "gemm_simt"             # pointer % 16
    assert route(tv((m, k), (2 * k, 2), float16)) == "gemm_simt"       # no unit stride
    assert route(tv((m, k), (-k, 1), float16, off=16 * k * m)) == "gemm_simt"  # negative ld
    assert route(row(m, k, float16), row(k, n, float16, ld=50)) == "gemm_simt"
    # contiguous extent not a multiple of 8
    q = GemmPlan.select(GemmDescriptor(m, n, 36, "f16"), PREF)
    assert q.kernel_for(GemmArgs(row(m, 36, float16, ld=40), row(36, n, float16),
                                 c))[0].name == "gemm_simt"
    assert q.kernel_for(GemmArgs(col(m, 36, float16), row(36, n, float16),
                                 c))[0].name == "gemm_mma"             # k contiguous nowhere
    # m = 1: the leading dim of a one-row operand does not matter
    r = GemmPlan.select(GemmDescriptor(1, n, k, "bf16"), PREF)
    assert r.kernel_for(GemmArgs(tv((1, k), (3, 1), bfloat16), row(k, n, bfloat16),
                                 row(1, n, bfloat16)))[0].name == "gemm_mma"
    # k = 0 and the forced SIMT tile
    z = GemmPlan.select(GemmDescriptor(m, n, 0, "bf16"), PREF)
    assert z.kernel_for(GemmArgs(row(m, 0, bfloat16), row(0, n, bfloat16),
                                 row(m, n, bfloat16)))[0].name == "gemm_simt"
    s = GemmPlan.select(GemmDescriptor(m, n, k, "f16"), tuned(PREF, tile="simt"))
    t, kn = s.kernel_for(GemmArgs(row(m, k, float16), b, c))
    assert t.name == "gemm_simt" and kn == SimtKnobs(dtype="f16", out="f16", act="none")


def test_raster_is_a_bijection():
    from baracuda_dsl.ops.gemm.specs.gemm import raster

    for tm in (1, 3, 8, 9, 17, 64):
        for tn in (1, 2, 7, 33):
            seen = {raster(b, tm, tn) for b in range(tm * tn)}
            assert seen == {(i, j) for i in range(tm) for j in range(tn)}


def test_routes_are_in_the_sku_space():
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.ops import get_template

    space = {t: set(get_template(t).skus("sm80")) for t in ("gemm_mma", "gemm_simt")}
    for dt in (float16, bfloat16):
        for m, n, k in ((1, 64, 64), (16, 8, 8), (64, 64, 64), (2048, 2048, 64), (8, 8, 0)):
            for out in (None, float32):
                for epi in ("identity", "bias_silu"):
                    p = GemmPlan.select(GemmDescriptor(m, n, k, dt, out_dtype=out,
                                                       epilogue=epi), PREF)
                    o = p.desc.out_dtype
                    bias = tv((n,), (1,), o) if epi != "identity" else None
                    for a in (row(m, k, dt), col(m, k, dt)):
                        for b in (row(k, n, dt), col(k, n, dt)):
                            t, kn = p.kernel_for(GemmArgs(a, b, row(m, n, o), bias))
                            assert freeze_knobs(kn) in space[t.name], kn


def test_sku_space():
    from baracuda_dsl.ops import get_template
    from baracuda_dsl.ops.gemm.specs import gemm as spec

    assert spec.GEMM_MMA.family == spec.GEMM_SIMT.family == "gemm"

    for arch in ("sm80", "sm89", "sm90a"):
        assert len(get_template("gemm_mma").skus(arch)) == 2 * 2 * 4 * (2 * 2 * 2 + 2)
        assert len(get_template("gemm_simt").skus(arch)) == 28
        assert len(get_template("gemm_splitk_reduce").skus(arch)) == 3 * 4
    assert spec.GEMM_SPLITK_REDUCE.family == "gemm"
    # the mma ABI: the batch offsets and k_last follow the original parameters
    assert [p.name for p in spec.GEMM_MMA.params][-5:] == ["za", "zb", "zc", "zbias", "k_last"]
    knobs = [dict(k) for k in get_template("gemm_mma").skus("sm90a")]
    assert {k["out"] for k in knobs if k["dtype"] == "bf16"} == {"bf16", "f32"}


SAMPLES = {
    bd.ArchSku.SM80: [("gemm_mma", dict(dtype="bf16", out="bf16", a_major="k", b_major="n",
                                         act="none", tile="128x128")),
                      ("gemm_mma", dict(dtype="f16", out="f32", a_major="k", b_major="k",
                                        act="none", tile="16x32")),
                      ("gemm_splitk_reduce", dict(out="f16", act="relu")),
                      ("gemm_simt", dict(dtype="f32", out="f32", act="gelu"))],
    bd.ArchSku.SM89: [("gemm_mma", dict(dtype="f16", out="f32", a_major="m", b_major="k",
                                         act="silu", tile="64x64")),
                      ("gemm_mma", dict(dtype="bf16", out="bf16", a_major="k", b_major="n",
                                         act="none", tile="16x32")),
                      ("gemm_simt", dict(dtype="bf16", out="bf16", act="relu"))],
    bd.ArchSku.SM90A: [("gemm_mma", dict(dtype="bf16", out="f32", a_major="m", b_major="n",
                                          act="gelu", tile="64x64")),
                       ("gemm_mma", dict(dtype="bf16", out="f32", a_major="k", b_major="k",
                                         act="none", tile="16x32")),
                       ("gemm_splitk_reduce", dict(out="bf16", act="silu")),
                       ("gemm_simt", dict(dtype="f64", out="f64", act="silu"))],
}


@pytest.mark.parametrize("arch", list(SAMPLES))
def test_cross_compile(arch, monkeypatch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku
    from baracuda_dsl.ops.gemm.specs import gemm as spec

    assert spec.GEMM_MMA.name == "gemm_mma"

    for name, knobs in SAMPLES[arch]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=600)
        assert cubin and meta["entry"]


# ------------------------------------------------------------------------------ split-K
SM90 = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def test_split_heuristic():
    from baracuda_dsl.ops.gemm import gemm as gm

    def sel(m, n, k, pref=SM90, **kw):
        return GemmPlan.select(GemmDescriptor(m, n, k, "bf16", **kw), pref)

    # the measured small-M shapes on an H100: 128 CTAs -> 4 splits (512 CTAs, 4 per SM)
    for m in (1, 16):
        p = sel(m, 4096, 4096)
        assert dict(p.sku().knobs)["tile"] == "16x32" and p.splits == 4
        assert p.workspace_size() == 4 * m * 4096 * 4
        assert p._ks == 1024
    # sm90a, m > 64, under one wave of 128x128 tiles: the narrow 128x64 wgmma tile, unsplit
    for m, n, k in ((128, 4096, 4096), (128, 4096, 14336), (200, 2000, 4160), (256, 4096, 4096)):
        p = sel(m, n, k)
        assert p.sku().template == "gemm_sm90" and dict(p.sku().knobs)["tile"] == "128x64"
        assert p.splits == 1 and p.workspace_size() == 0
    # 16 < m <= 64, under 64 tiles of 128x128, k >= 1024: the wgmma 128x128 SKU split over k
    # (m = 64, n = 4096: 32 tiles, 64 k blocks -> min(132 // 32, 64 // 16) = 4 splits of whole
    # 64-blocks; f32 partials)
    p = sel(64, 4096, 4096)
    assert p.sku().template == "gemm_sm90" and dict(p.sku().knobs)["tile"] == "128x128"
    assert dict(p.sku().knobs)["out"] == "f32" and p.splits == 4 and p._ks == 1024
    p = sel(32, 4096, 4160)                                        # 65 k blocks
    assert p.splits == 4 and p._ks == 17 * 64 and 4160 - 3 * 1088 == 896  # last: 14 blocks
    assert sel(64, 4096, 1000).sku().template == "gemm_mma"       # k < WG_SPLIT_MIN_K
    assert sel(64, 2048, 8192).splits == 8                         # 16 tiles, 128 k blocks
    # a forced split on a narrow-tile shape takes the split 128x128 route
    p = GemmPlan.select(GemmDescriptor(128, 4096, 4096, "bf16"), tuned(SM90, splits=2))
    assert dict(p.sku().knobs)["tile"] == "128x128" and p.splits == 2
    # on sm80 / sm89 the mma.sync 64x64 tile splits instead
    p = sel(128, 4096, 4096, PREF)
    assert dict(p.sku().knobs)["tile"] == "64x64" and p.splits == 324 // 128
    # enough CTAs (448 decode CTAs) or too little k: no split
    assert sel(16, 14336, 4096).splits == 1 and sel(16, 14336, 4096).workspace_size() == 0
    assert sel(16, 4096, 1023).splits == 1
    assert sel(16, 4096, 1024).splits == 2                 # each split >= 512 of k
    assert sel(1, 64, 1 << 20).splits == gm.SPLIT_MAX       # capped
    # sm80: 108 SMs x 3 CTAs; sm89: 84 x 2 (the 128-CTA decode grid is not split there)
    assert sel(16, 4096, 4096, PREF).splits == 324 // 128
    assert sel(16, 4096, 4096, bd.PlanPreference(arch=bd.ArchSku.SM89)).splits == 1
    assert sel(16, 2048, 4096, bd.PlanPreference(arch=bd.ArchSku.SM89)).splits == 2
    # residue: k not a multiple of the split: the last split is shorter
    p = sel(16, 4096, 4100)
    assert p.splits == 4 and p._ks == 1152 and 4100 - 3 * 1152 == 644
    # the workspace budget turns the default split off
    assert sel(16, 4096, 4096, bd.PlanPreference(arch=bd.ArchSku.SM90A,
                                                  max_workspace_bytes=1024)).splits == 1
    # wgmma / SIMT / tf32 / f64 routes are never split; empty problems neither
    assert sel(4096, 4096, 4096).splits == 1
    assert GemmPlan.select(GemmDescriptor(16, 64, 8192, "f32"), SM90).splits == 1
    assert GemmPlan.select(GemmDescriptor(16, 64, 8192, "f32", allow_tf32=True),
                           SM90).splits == 1
    assert sel(0, 64, 8192).splits == 1 and sel(16, 0, 8192).workspace_size() == 0
    assert sel(16, 64, 0).splits == 1
    # workspace rows are padded to 4 f32 (16-byte vectors)
    p = sel(3, 30, 4096)
    assert p.splits > 1 and p.workspace_size() == -(-p.splits * 3 * 32 * 4 // 256) * 256


def test_forced_splits():
    def sel(m, n, k, splits, **kw):
        return GemmPlan.select(GemmDescriptor(m, n, k, "bf16", **kw), tuned(SM90, splits=splits))

    for S in (2, 3, 8):
        for m in (1, 16, 128):
            for k in (64 * S + 8, 4096):
                p = sel(m, 256, k, S)
                assert p.splits == S, (m, k, S)
                ks = p._ks
                assert ks % 8 == 0 and 1 <= k - (S - 1) * ks <= ks + 8 * S
                assert p.workspace_size() == -(-S * m * 256 * 4 // 256) * 256
    assert sel(16, 4096, 4096, 1).splits == 1
    # the decode tile's bK (128) when k allows it, finer otherwise
    assert sel(16, 256, 4096, 3)._ks == 1408 and sel(16, 256, 520, 8)._ks == 72
    with pytest.raises(bd.InvalidProblemError):
        sel(16, 256, 20, 8)                               # k too short for 8 splits
    for bad in (0, -1, 1.0, True, "2"):
        with pytest.raises(bd.InvalidProblemError):
            sel(16, 256, 4096, bad)
    with pytest.raises(bd.UnsupportedError):
        sel(16, 256, 4096, 65)
    with pytest.raises(bd.UnsupportedError):
        GemmPlan.select(GemmDescriptor(16, 256, 4096, "f32"), tuned(SM90, splits=2))
    with pytest.raises(bd.UnsupportedError):
        GemmPlan.select(GemmDescriptor(16, 256, 4096, "bf16"), tuned(SM90, splits=2, tile="simt"))
    with pytest.raises(bd.UnsupportedError):
        GemmPlan.select(GemmDescriptor(4096, 4096, 4096, "bf16"), tuned(SM90, splits=2))   # wgmma
    with pytest.raises(bd.UnsupportedError):
        GemmPlan.select(GemmDescriptor(16, 256, 4096, "bf16"),
                        tuned(bd.PlanPreference(arch=bd.ArchSku.SM90A, max_workspace_bytes=100),
                              splits=2))
    # a forced mma tile on sm90a can be split
    assert GemmPlan.select(GemmDescriptor(4096, 4096, 4096, "bf16"),
                           tuned(SM90, splits=2, tile="128x128")).splits == 2


def _kernel_walk(kz: int, bk: int):
    """The k indices a gemm_mma CTA accumulates for a k extent ``kz`` (first tile partial)."""
    ktiles = -(-kz // bk)
    res = kz - bk * ktiles
    out = []
    for t in range(ktiles):
        out += [res + t * bk + i for i in range(bk) if 0 <= res + t * bk + i < kz]
    return out


@pytest.mark.parametrize("k,S", [(4096, 4), (4100, 4), (520, 8), (200, 3), (24, 3), (136, 2)])
def test_split_ranges_numpy(k, S):
    np = pytest.importorskip("numpy")
    from baracuda_dsl.ops.gemm.split_k import split_ranges
    from baracuda_dsl.ops.gemm.specs.gemm import TILES

    p = GemmPlan.select(GemmDescriptor(16, 64, k, "bf16"), tuned(SM90, splits=S))
    ks = p._ks
    bk = TILES[dict(p.sku().knobs)["tile"]][2]
    rng = np.random.default_rng(k)
    a = rng.standard_normal((5, k))
    b = rng.standard_normal((k, 7))
    ws = np.zeros((S, 5, 8))
    seen = []
    for s, (k0, k1) in enumerate(split_ranges(k, S, ks)):
        # what the kernel sees for batch index s: a + s*ks along k, k extent ks or k_last
        kz = ks if s < S - 1 else k - (S - 1) * ks
        assert k1 - k0 == kz >= 1
        idx = [k0 + i for i in _kernel_walk(kz, bk)]
        seen += idx
        ws[s, :, :7] = a[:, idx] @ b[idx, :]
    assert sorted(seen) == list(range(k))                 # every k exactly once
    c = np.zeros((5, 7))
    for s in range(S):                                     # the reduction's fixed order
        c += ws[s, :, :7]
    assert np.allclose(c, a @ b)


def test_split_launch_args(launches):
    from baracuda_dsl.vocabulary import Workspace

    m, n, k = 16, 4100, 4104
    p = GemmPlan.select(GemmDescriptor(m, n, k, "bf16", alpha=0.5, beta=2.0,
                                       epilogue="bias_silu"), SM90)
    S, ks = p.splits, p._ks
    assert S == 4
    a = row(m, k, bfloat16, ld=4112)
    b = col(k, n, bfloat16, ld=4112)               # k-major b
    c = tv((m, n), (1, 3 * m), bfloat16)           # strided c
    bias = tv((n,), (2,), bfloat16)
    ws_ptr = 1 << 30
    need = p.workspace_size()
    assert need == -(-S * m * 4100 * 4 // 256) * 256
    with pytest.raises(bd.WorkspaceTooSmallError):
        p.run(GemmArgs(a, b, c, bias), workspace=Workspace(ws_ptr, need - 1))
    with pytest.raises(bd.MisalignedOperandError):
        p.run(GemmArgs(a, b, c, bias), workspace=Workspace(ws_ptr + 8, need))
    assert launches == []
    p.run(GemmArgs(a, b, c, bias), stream=5, workspace=Workspace(ws_ptr, need))
    (t1, kn1, g1, a1, s1), (t2, kn2, g2, a2, s2) = launches
    assert t1 == "gemm_mma" and kn1["out"] == "f32" and kn1["act"] == "none"
    assert kn1["a_major"] == "k" and kn1["b_major"] == "k" and kn1["tile"] == "16x32"
    assert g1 == (1 * 129, S, 1) and s1 == s2 == 5
    assert a1 == [a.ptr, b.ptr, ws_ptr, ws_ptr, m, n, ks, 4112, 4112, 4100, 1, 0, 1.0, 0.0, 0,
                  ks, ks, m * 4100, 0, k - (S - 1) * ks]
    assert t2 == "gemm_splitk_reduce" and kn2 == dict(out="bf16", act="silu")
    assert g2 == (-(-(m * 4100 // 4) // 256), 1, 1)
    assert a2 == [ws_ptr, c.ptr, bias.ptr, m, n, S, 4100, 1, 3 * m, 2, 0.5, 2.0, 1]
    launches.clear()
    # m-major a: its split offset is ks leading dims (the decode tile falls back to 64x64)
    a = col(m, k, bfloat16, ld=24)
    p.run(GemmArgs(a, b, c, bias), workspace=Workspace(ws_ptr, need))
    kn1, g1, a1 = launches[0][1], launches[0][2], launches[0][3]
    assert kn1["a_major"] == "m" and kn1["b_major"] == "k" and kn1["tile"] == "64x64"
    assert a1[15:17] == [ks * 24, ks] and a1[7:9] == [24, 4112] and g1 == (65, S, 1)
    launches.clear()
    # unsplit: batch index 0 only, zero offsets, k_last = k
    q = GemmPlan.select(GemmDescriptor(m, n, k, "bf16"), tuned(SM90, splits=1))
    q.run(GemmArgs(row(m, k, bfloat16), col(k, n, bfloat16), row(m, n, bfloat16)))
    (t, kn, g, args, _), = launches
    assert t == "gemm_mma" and g == (129, 1, 1) and args[-5:] == [0, 0, 0, 0, k]
    launches.clear()
    # a SIMT-routed operand of a split plan: no split, workspace unused
    p.run(GemmArgs(row(m, k, bfloat16, off=2), col(k, n, bfloat16), c, bias),
          workspace=Workspace(ws_ptr, need))
    assert [x[0] for x in launches] == ["gemm_simt"]


def test_split_default_tiles():
    # the 128x128 tile (>= 96 CTAs) is not split by default, only when forced
    p = GemmPlan.select(GemmDescriptor(1024, 1536, 4096, "bf16"), PREF)
    assert dict(p.sku().knobs)["tile"] == "128x128" and p.splits == 1
    q = GemmPlan.select(GemmDescriptor(1024, 1536, 4096, "bf16"), tuned(PREF, splits=2))
    assert q.splits == 2 and q._ks == 2048 and q.workspace_size() == 2 * 1024 * 1536 * 4


def test_wgmma_split_launch_args(launches, monkeypatch, fake_tensor_maps):
    """sm90a small grid: the wgmma 128x128 f32 SKU over (tile, split) work units into the
    workspace (split triple S, k blocks per split, partial stride), then the reduction."""
    import baracuda_dsl.runtime.device as dev
    from baracuda_dsl.ops.gemm.specs import gemm_sm90 as spec90
    from baracuda_dsl.vocabulary import Workspace

    monkeypatch.setattr(dev, "sm_count", lambda ordinal=0: 132)
    m, n, k = 128, 4096, 4096
    p = GemmPlan.select(GemmDescriptor(m, n, k, "bf16", epilogue="bias_gelu", beta=0.5),
                        tuned(SM90, tile="wgmma128x128", splits=4))
    assert p.splits == 4 and p._ks == 1024
    a, b, c = row(m, k, bfloat16), col(k, n, bfloat16), row(m, n, bfloat16)
    bias = tv((n,), (1,), bfloat16)
    ws_ptr = 1 << 30
    p.run(GemmArgs(a, b, c, bias), stream=3, workspace=Workspace(ws_ptr, p.workspace_size()))
    (t1, kn1, g1, a1, s1), (t2, kn2, g2, a2, s2) = launches
    assert t1 == "gemm_sm90" and kn1["out"] == "f32" and kn1["tile"] == "128x128"
    assert g1 == (min(32 * 4, 132), 1, 1) and s1 == s2 == 3
    # c = the workspace (row stride n), no bias, alpha 1, beta 0, act none; split (4, 16, m·n)
    assert a1[2:] == [ws_ptr, ws_ptr, c.ptr, c.ptr, m, n, k, n, 1, 0, 0, 0, 1.0, 0.0, 0,
                      spec90.EPI_VEC, 4, 16, m * n]
    assert t2 == "gemm_splitk_reduce" and kn2 == dict(out="bf16", act="gelu")
    assert a2 == [ws_ptr, c.ptr, bias.ptr, m, n, 4, n, n, 1, 1, 1.0, 0.5, 1]


def test_wgmma_forced_split_is_exact():
    """A forced split count the wgmma kernel cannot make in whole 64-blocks is refused (also on
    the default small-grid route), never silently changed; the workspace cap refuses a forced
    split and turns a default one off."""
    d = GemmDescriptor(64, 4096, 1024, "bf16")            # 16 k blocks: 7 ways -> 6 splits
    with pytest.raises(bd.InvalidProblemError):
        GemmPlan.select(d, tuned(SM90, splits=7))
    assert GemmPlan.select(d, tuned(SM90, splits=8)).splits == 8
    cap = bd.PlanPreference(arch=bd.ArchSku.SM90A, max_workspace_bytes=1024)
    with pytest.raises(bd.UnsupportedError):
        GemmPlan.select(d, tuned(cap, splits=2))
    assert GemmPlan.select(d, cap).splits == 1
