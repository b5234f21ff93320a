"""Fp8GemmPlan without a GPU: validation (dtypes, k, arch, layouts, alignment, scales, bias),
SKU choice, SKU space, empty problems, cross-compile samples for sm89 and sm90a."""

import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import bfloat16, float8_e4m3, float8_e5m2, float16, float32, int8
from baracuda_dsl.jit import freeze_knobs
from baracuda_dsl.ops.gemm.gemm_fp8 import Fp8GemmArgs, Fp8GemmDescriptor, Fp8GemmPlan
from baracuda_dsl.tensor import TensorView
from _gemm_helpers import tuned

BASE = 1 << 20
PREF = bd.PlanPreference(arch=bd.ArchSku.SM89)
PREF90 = bd.PlanPreference(arch=bd.ArchSku.SM90A)
E4, E5 = float8_e4m3, float8_e5m2


def tv(shape, strides, dtype, off=0):
    return TensorView(BASE + off, shape, strides, dtype, 0)


def args(m, n, k, ad=E4, bd_=E4, out=bfloat16, lda=None, ldb=None, aoff=0, boff=0,
         sa=None, sb=None, bias=None):
    a = tv((m, k), (k if lda is None else lda, 1), ad, aoff)
    b = tv((k, n), (1, k if ldb is None else ldb), bd_, (1 << 22) + boff)
    c = tv((m, n), (n, 1), out, 1 << 24)
    sa = tv((1,), (1,), float32, 1 << 26) if sa is None else sa
    sb = tv((1,), (1,), float32, 1 << 27) if sb is None else sb
    return Fp8GemmArgs(a, b, c, sa, sb, bias)


def test_descriptor_validation():
    d = Fp8GemmDescriptor(4, 5, 16)
    assert (d.a_dtype, d.b_dtype, d.out_dtype, d.epilogue) == (E4, E4, bfloat16, "identity")
    d = Fp8GemmDescriptor(4, 5, 32, "float8_e5m2", "fp8e4m3", "f32", "bias")
    assert d.a_dtype is E5 and d.b_dtype is E4 and d.out_dtype is float32
    assert Fp8GemmDescriptor(1, 1, 16, "float8_e4m3fn").a_dtype is E4      # torch's spelling
    for bad in (dict(m=-1), dict(n=1.5), dict(m=True)):
        kw = dict(m=1, n=1, k=16)
        kw.update(bad)
        with pytest.raises(bd.InvalidProblemError):
            Fp8GemmDescriptor(**kw)
    for k in (0, 8, 24, 2 ** 31):
        with pytest.raises(bd.UnsupportedError):
            Fp8GemmDescriptor(1, 1, k)
    with pytest.raises(bd.UnsupportedError, match="float8_e4m3, float8_e5m2"):
        Fp8GemmDescriptor(1, 1, 16, "f16")
    with pytest.raises(bd.UnsupportedError):
        Fp8GemmDescriptor(1, 1, 16, E4, int8)
    with pytest.raises(bd.UnsupportedError, match="bfloat16"):
        Fp8GemmDescriptor(1, 1, 16, out_dtype="f64")
    with pytest.raises(bd.UnsupportedError, match="identity, bias"):
        Fp8GemmDescriptor(1, 1, 16, epilogue="bias_relu")


def test_select_arch_and_tile():
    with pytest.raises(bd.UnsupportedError, match="fp8 tensor cores need sm89 or sm90a"):
        Fp8GemmPlan.select(Fp8GemmDescriptor(16, 16, 16), bd.PlanPreference(arch=bd.ArchSku.SM80))
    with pytest.raises(bd.UnsupportedError, match="128x128, 64x64"):
        Fp8GemmPlan.select(Fp8GemmDescriptor(1, 1, 16), tuned(PREF, tile="16x32"))
    with pytest.raises(bd.InvalidProblemError):
        Fp8GemmPlan.select((1, 1, 16), PREF)
    with pytest.raises(bd.UnsupportedError, match="CTAs"):
        Fp8GemmPlan.select(Fp8GemmDescriptor(2 ** 31 - 1, 2 ** 31 - 1, 16), PREF)
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(8, 8, 16, "e5m2", out_dtype="f16"), PREF90)
    pg = p.precision_guarantee()
    assert pg.math_precision is E5 and pg.accumulator is float32
    assert p.sku().aux_element is float16 and p.sku().arch is bd.ArchSku.SM90A


def test_args_validation():
    m, n, k = 33, 40, 64
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(m, n, k), PREF)
    p.can_implement(args(m, n, k))
    p.can_implement(args(m, n, k, lda=80, ldb=96))
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement((1, 2, 3))
    with pytest.raises(bd.MisalignedOperandError):
        p.can_implement(args(m, n, k, lda=72))
    with pytest.raises(bd.MisalignedOperandError):
        p.can_implement(args(m, n, k, ldb=68))
    with pytest.raises(bd.MisalignedOperandError):
        p.can_implement(args(m, n, k, aoff=4))
    with pytest.raises(bd.MisalignedOperandError):
        p.can_implement(args(m, n, k, boff=8))
    with pytest.raises(bd.UnsupportedError):            # wrong dtypes (spine convention)
        p.can_implement(args(m, n, k, out=float32))
    with pytest.raises(bd.UnsupportedError):
        p.can_implement(args(m, n, k, ad=E5))
    with pytest.raises(bd.InvalidProblemError):          # wrong shape
        p.can_implement(args(m + 1, n, k))
    ok = args(m, n, k)
    # column-major a / row-major b / negative leading dims are not wired
    with pytest.raises(bd.UnsupportedError, match="row-major a"):
        p.can_implement(Fp8GemmArgs(tv((m, k), (1, m), E4), ok.b, ok.c, ok.scale_a, ok.scale_b))
    with pytest.raises(bd.UnsupportedError, match="column-major b"):
        p.can_implement(Fp8GemmArgs(ok.a, tv((k, n), (n, 1), E4), ok.c, ok.scale_a, ok.scale_b))
    with pytest.raises(bd.UnsupportedError, match="row-major a"):
        p.can_implement(Fp8GemmArgs(tv((m, k), (-k, 1), E4, 1 << 16), ok.b, ok.c, ok.scale_a,
                                    ok.scale_b))
    # c: any strides (column-major, padded), but no broadcast
    p.can_implement(Fp8GemmArgs(ok.a, ok.b, tv((m, n), (1, m + 3), bfloat16, 1 << 24),
                                ok.scale_a, ok.scale_b))
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement(Fp8GemmArgs(ok.a, ok.b, tv((m, n), (0, 1), bfloat16, 1 << 24),
                                    ok.scale_a, ok.scale_b))
    with pytest.raises(bd.MisalignedOperandError):       # c misaligned for its dtype
        p.can_implement(Fp8GemmArgs(ok.a, ok.b, tv((m, n), (n, 1), bfloat16, (1 << 24) + 1),
                                    ok.scale_a, ok.scale_b))
    # M = 1 and N = 1: the leading dim of a single row / column is irrelevant
    p1 = Fp8GemmPlan.select(Fp8GemmDescriptor(1, 1, k), PREF)
    p1.can_implement(Fp8GemmArgs(tv((1, k), (k + 1, 1), E4), tv((k, 1), (1, 3), E4),
                                 tv((1, 1), (1, 1), bfloat16, 1 << 24), ok.scale_a, ok.scale_b))


def test_scales():
    m, n, k = 8, 24, 32
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(m, n, k, out_dtype=float32), PREF)

    def s(shape, strides, off=26):
        return tv(shape, strides, float32, 1 << off)

    good_a = [(s((1,), (1,)), 0), (s((1, 1), (1, 1)), 0), (s((m,), (1,)), 1),
              (s((m,), (2,)), 2), (s((m, 1), (1, 1)), 1), (s((m, 1), (3, 1)), 3)]
    good_b = [(s((1,), (1,), 27), 0), (s((1, 1), (1, 1), 27), 0), (s((n,), (1,), 27), 1),
              (s((1, n), (n, 1), 27), 1), (s((1, n), (1, 2), 27), 2)]
    for sa, sas in good_a:
        for sb, sbs in good_b:
            v = p._bind(args(m, n, k, out=float32, sa=sa, sb=sb))
            assert (v.sas, v.sbs) == (sas, sbs)
    sb = good_b[0][0]
    for bad in (s((m + 1,), (1,)), s((1, m), (m, 1)), s((m, 2), (2, 1)), s((m, 1, 1), (1, 1, 1)),
                s((), ())):
        with pytest.raises(bd.InvalidProblemError):
            p.can_implement(args(m, n, k, out=float32, sa=bad, sb=sb))
    with pytest.raises(bd.InvalidProblemError):           # (n, 1) is scale_a's shape, not b's
        p.can_implement(args(m, n, k, out=float32, sb=s((n, 1), (1, 1), 27)))
    with pytest.raises(bd.InvalidProblemError, match="float32"):
        p.can_implement(args(m, n, k, out=float32, sa=tv((1,), (1,), float16, 1 << 26)))
    with pytest.raises(bd.InvalidProblemError):            # scales are required
        p.can_implement(Fp8GemmArgs(args(m, n, k).a, args(m, n, k).b,
                                    args(m, n, k, out=float32).c, None, sb))
    with pytest.raises(bd.MisalignedOperandError):
        p.can_implement(args(m, n, k, out=float32, sa=tv((m,), (1,), float32, (1 << 26) + 2)))


def test_bias():
    m, n, k = 8, 24, 32
    p0 = Fp8GemmPlan.select(Fp8GemmDescriptor(m, n, k), PREF)
    bias = tv((n,), (1,), bfloat16, 1 << 28)
    with pytest.raises(bd.InvalidProblemError, match="identity"):
        p0.can_implement(args(m, n, k, bias=bias))
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(m, n, k, epilogue="bias"), PREF)
    p.can_implement(args(m, n, k, bias=bias))
    p.can_implement(args(m, n, k, bias=tv((n,), (3,), bfloat16, 1 << 28)))
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement(args(m, n, k))                      # bias required
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement(args(m, n, k, bias=tv((n + 1,), (1,), bfloat16, 1 << 28)))
    with pytest.raises(bd.UnsupportedError):
        p.can_implement(args(m, n, k, bias=tv((n,), (1,), float32, 1 << 28)))


def test_empty_problems_return_before_launch():
    for m, n in ((0, 8), (8, 0), (0, 0)):
        p = Fp8GemmPlan.select(Fp8GemmDescriptor(m, n, 16), PREF)
        assert p.is_empty()
        p.run(args(m, n, 16))               # checks, then returns: no device needed
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(0, 8, 16), PREF)
    with pytest.raises(bd.InvalidProblemError):
        p.run(args(0, 8, 16, bias=tv((8,), (1,), bfloat16, 1 << 28)))


@pytest.mark.parametrize("pref", [PREF, PREF90])
def test_sku_choice(pref):
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(4096, 4096, 4096, "e5m2", "e5m2", "f16"), pref)
    assert p.sku().template == "gemm_fp8" and p.sku().op == "fp8_gemm"
    assert dict(p.sku().knobs) == dict(a="e5m2", b="e5m2", out="f16", tile="128x128")
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(1, 4096, 4096, b_dtype="e5m2", out_dtype="f32",
                                             epilogue="bias"), tuned(pref, tile="64x64"))
    assert dict(p.sku().knobs) == dict(a="e4m3", b="e5m2", out="f32", tile="64x64")
    assert p.sku().epilogue == "bias"
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(1, 16, 16), tuned(pref, tile="128x128"))
    assert dict(p.sku().knobs)["tile"] == "128x128"
    tmpl, knobs = p.kernel_for(args(1, 16, 16))
    assert tmpl.name == "gemm_fp8" and freeze_knobs(knobs) == p.sku().knobs


def test_sm90a_wgmma_route():
    """sm90a: m > 16 and a type pair wgmma takes → the gemm_sm90 fp8 SKUs (128x256 from one
    wave of tiles on), decode shapes and e5m2 · e5m2 → mma.sync; sm89 never wgmma."""
    from baracuda_dsl.ops import get_template

    p = Fp8GemmPlan.select(Fp8GemmDescriptor(4096, 4096, 4096, "e5m2", "e4m3", "f16"), PREF90)
    assert p.sku().template == "gemm_sm90"
    assert dict(p.sku().knobs) == dict(dtype="e5m2", b="e4m3", out="f16", a_major="k",
                                       b_major="k", tile="128x256", cluster=1)
    assert freeze_knobs(dict(p.sku().knobs)) in set(get_template("gemm_sm90").skus("sm90a"))
    tmpl, knobs = p.kernel_for(args(4096, 4096, 4096, E5, E4, out=float16))
    assert tmpl.name == "gemm_sm90" and knobs.tile == "128x256"
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(128, 4096, 4096), PREF90)
    assert dict(p.sku().knobs)["tile"] == "128x128"
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(16, 4096, 4096), PREF90)     # decode: wgmma too
    assert p.sku().template == "gemm_sm90" and p.splits == 4
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(16, 4096, 4096), tuned(PREF90, tile="64x64"))
    assert p.sku().template == "gemm_fp8"
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(16, 4096, 4096, "e5m2", "e5m2"), PREF90)
    assert p.sku().template == "gemm_fp8"
    with pytest.raises(bd.UnsupportedError):
        Fp8GemmPlan.select(Fp8GemmDescriptor(64, 64, 64), tuned(PREF, tile="wgmma128x128"))
    with pytest.raises(bd.UnsupportedError):
        Fp8GemmPlan.select(Fp8GemmDescriptor(64, 64, 64, "e5m2", "e5m2"),
                           tuned(PREF90, tile="wgmma128x128"))


def test_sku_space():
    from baracuda_dsl.ops import get_template

    t = get_template("gemm_fp8")
    assert len(t.skus("sm89")) == 24 and len(t.skus("sm90a")) == 24
    assert len(t.skus("sm80")) == 0
    space = set(t.skus("sm90a"))
    for ad in ("e4m3", "e5m2"):
        for bd_ in ("e4m3", "e5m2"):
            for out in ("bf16", "f16", "f32"):
                for m in (1, 4096):
                    p = Fp8GemmPlan.select(Fp8GemmDescriptor(m, 4096, 64, ad, bd_, out), PREF)
                    assert freeze_knobs(p._knobs) in space


def test_torch_fp8_dtypes_map():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.tensor import _torch_dtype

    assert _torch_dtype(torch.float8_e4m3fn) is E4 and _torch_dtype(torch.float8_e5m2) is E5
    assert Fp8GemmDescriptor(1, 1, 16, torch.float8_e4m3fn, torch.float8_e5m2).b_dtype is E5


SAMPLES = {
    bd.ArchSku.SM89: [dict(a="e4m3", b="e4m3", out="bf16", tile="128x128"),
                      dict(a="e5m2", b="e4m3", out="f32", tile="64x64")],
    bd.ArchSku.SM90A: [dict(a="e4m3", b="e5m2", out="f16", tile="64x64"),
                       dict(a="e5m2", b="e5m2", out="bf16", tile="128x128")],
}


@pytest.mark.parametrize("arch", list(SAMPLES))
def test_cross_compile(arch, monkeypatch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.ops import get_template
    from baracuda_dsl.jit.compiler import compile_sku, shutdown

    shutdown(arch)
    for knobs in SAMPLES[arch]:
        fk = freeze_knobs(knobs)
        assert fk in get_template("gemm_fp8").skus(arch.value)
        cubin, meta = compile_sku("gemm_fp8", fk, arch, timeout=600)
        assert len(cubin) > 1000 and meta["entry"] and meta["threads"] == 128
        assert meta["ptx_target"] == arch.cute_arch


def test_sm90a_split_k():
    """Small sm90a grids split k over the wgmma 128x128 kernel (f32 partial SKU + workspace);
    forced splits; the sm89 / mma.sync routes refuse splits."""
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(64, 4096, 4096), PREF90)
    assert p.splits == 4 and p.workspace_size() == 4 * 64 * 4096 * 4
    assert dict(p.sku().knobs)["out"] == "f32" and dict(p.sku().knobs)["tile"] == "128x128"
    assert Fp8GemmPlan.select(Fp8GemmDescriptor(128, 4096, 4096), PREF90).splits == 1
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(128, 4096, 14336), PREF90)
    assert p.splits == 3 and p._kps == 38
    assert Fp8GemmPlan.select(Fp8GemmDescriptor(128, 14336, 4096), PREF90).splits == 1
    assert Fp8GemmPlan.select(Fp8GemmDescriptor(4096, 4096, 4096), PREF90).workspace_size() == 0
    p = Fp8GemmPlan.select(Fp8GemmDescriptor(16, 4096, 4096),
                           tuned(PREF90, tile="wgmma128x128", splits=4))
    assert p.splits == 4 and p._kps == 8
    with pytest.raises(bd.UnsupportedError):
        Fp8GemmPlan.select(Fp8GemmDescriptor(128, 4096, 4096), tuned(PREF, splits=2))
    with pytest.raises(bd.UnsupportedError):
        Fp8GemmPlan.select(Fp8GemmDescriptor(128, 4096, 4096),
                           tuned(PREF90, tile="64x64", splits=2))
    with pytest.raises(bd.InvalidProblemError):
        Fp8GemmPlan.select(Fp8GemmDescriptor(128, 4096, 4096), tuned(PREF90, splits=0))
    assert Fp8GemmPlan.select(Fp8GemmDescriptor(64, 4096, 4096), bd.PlanPreference(
        arch=bd.ArchSku.SM90A, max_workspace_bytes=1024)).splits == 1


def test_sm90a_forced_split_is_exact():
    d = Fp8GemmDescriptor(64, 4096, 2048)                  # 16 k blocks of 128
    with pytest.raises(bd.InvalidProblemError):
        Fp8GemmPlan.select(d, tuned(PREF90, splits=7))
    assert Fp8GemmPlan.select(d, tuned(PREF90, splits=8)).splits == 8
