"""IntGemmPlan without a GPU: validation (dtypes, k, layouts, alignment, scales), SKU choice,
SKU space, cross-compile samples (sm80, sm89) and every SKU for sm90a."""

import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import float32, int8, int32, uint8
from baracuda_dsl.ops.gemm.gemm_int import IntGemmArgs, IntGemmDescriptor, IntGemmPlan
from baracuda_dsl.tensor import TensorView
from _gemm_helpers import tuned

BASE = 1 << 20
PREF = bd.PlanPreference(arch=bd.ArchSku.SM80)


def tv(shape, strides, dtype, off=0):
    return TensorView(BASE + off, shape, strides, dtype, 0)


def args(m, n, k, ad=int8, bd_=int8, out=int32, lda=None, ldb=None, aoff=0, sa=None, sb=None):
    a = tv((m, k), (k if lda is None else lda, 1), ad, aoff)
    b = tv((k, n), (1, k if ldb is None else ldb), bd_)
    c = tv((m, n), (n, 1), out, 1 << 24)
    return IntGemmArgs(a, b, c, sa, sb)


def test_descriptor_validation():
    d = IntGemmDescriptor(4, 5, 16)
    assert d.a_dtype is int8 and d.b_dtype is int8 and d.out_dtype is int32
    d = IntGemmDescriptor(4, 5, 32, "u8", "i8", dequant=True)
    assert d.a_dtype is uint8 and d.out_dtype is float32
    for bad in (dict(m=-1), dict(n=1.5), dict(m=True)):
        kw = dict(m=1, n=1, k=16)
        kw.update(bad)
        with pytest.raises(bd.InvalidProblemError):
            IntGemmDescriptor(**kw)
    for k in (0, 7, 24):
        with pytest.raises(bd.UnsupportedError):
            IntGemmDescriptor(1, 1, k)
    with pytest.raises(bd.UnsupportedError):
        IntGemmDescriptor(1, 1, 16, "f16")
    with pytest.raises(bd.UnsupportedError):
        IntGemmDescriptor(1, 1, 16, "i8", "i32")
    with pytest.raises(bd.InvalidProblemError):
        IntGemmDescriptor(1, 1, 16, dequant=1)
    with pytest.raises(bd.UnsupportedError):
        IntGemmPlan.select(IntGemmDescriptor(1, 1, 16), tuned(PREF, tile="16x32"))


def test_args_validation():
    m, n, k = 33, 40, 64
    p = IntGemmPlan.select(IntGemmDescriptor(m, n, k), PREF)
    p.can_implement(args(m, n, k))
    p.can_implement(args(m, n, k, lda=80, ldb=96))
    with pytest.raises(bd.MisalignedOperandError):
        p.can_implement(args(m, n, k, lda=72))
    with pytest.raises(bd.MisalignedOperandError):
        p.can_implement(args(m, n, k, aoff=4))
    with pytest.raises(bd.UnsupportedError):           # wrong dtypes (spine convention)
        p.can_implement(args(m, n, k, out=float32))
    with pytest.raises(bd.UnsupportedError):
        p.can_implement(args(m, n, k, ad=uint8))
    # column-major a / row-major b are not wired
    a_t = tv((m, k), (1, m), int8)
    with pytest.raises(bd.UnsupportedError, match="row-major a"):
        p.can_implement(IntGemmArgs(a_t, args(m, n, k).b, args(m, n, k).c))
    b_r = tv((k, n), (n, 1), int8)
    with pytest.raises(bd.UnsupportedError, match="column-major b"):
        p.can_implement(IntGemmArgs(args(m, n, k).a, b_r, args(m, n, k).c))
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement(args(m, n, k, sa=tv((m,), (1,), float32)))
    # M = 1 and N = 1: the leading dim of a single row / column is irrelevant
    p1 = IntGemmPlan.select(IntGemmDescriptor(1, 1, k), PREF)
    p1.can_implement(IntGemmArgs(tv((1, k), (k, 1), int8), tv((k, 1), (1, 1), int8),
                                 tv((1, 1), (1, 1), int32, 1 << 24)))


def test_dequant_scales():
    m, n, k = 8, 24, 32
    p = IntGemmPlan.select(IntGemmDescriptor(m, n, k, dequant=True), PREF)
    sa, sb = tv((m,), (1,), float32, 1 << 26), tv((n,), (1,), float32, 1 << 27)
    p.can_implement(args(m, n, k, out=float32, sa=sa, sb=sb))
    p.can_implement(args(m, n, k, out=float32, sa=tv((1,), (1,), float32, 1 << 26), sb=sb))
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement(args(m, n, k, out=float32, sa=sa))
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement(args(m, n, k, out=float32, sa=tv((m + 1,), (1,), float32, 1 << 26),
                             sb=sb))
    p0 = IntGemmPlan.select(IntGemmDescriptor(m, n, k), PREF)
    with pytest.raises(bd.InvalidProblemError):             # scales without dequant
        p0.can_implement(args(m, n, k, out=int32, sa=sa, sb=sb))


@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_sku_choice(arch):
    pref = bd.PlanPreference(arch=arch)
    p = IntGemmPlan.select(IntGemmDescriptor(4096, 4096, 4096, "u8", "i8"), pref)
    assert p.sku().template == "gemm_int8"
    assert dict(p.sku().knobs) == dict(a="u8", b="s8", out="i32", tile="128x128")
    p = IntGemmPlan.select(IntGemmDescriptor(1, 4096, 4096, dequant=True), pref)
    assert dict(p.sku().knobs) == dict(a="s8", b="s8", out="f32", tile="64x64")
    p = IntGemmPlan.select(IntGemmDescriptor(1, 16, 16), tuned(pref, tile="128x128"))
    assert dict(p.sku().knobs)["tile"] == "128x128"


def test_sku_space():
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.ops import get_template

    for arch in ("sm80", "sm89", "sm90a"):
        assert len(get_template("gemm_int8").skus(arch)) == 16
    space = set(get_template("gemm_int8").skus("sm90a"))
    for ad in ("i8", "u8"):
        for bd_ in ("i8", "u8"):
            for deq in (False, True):
                for m in (1, 4096):
                    p = IntGemmPlan.select(IntGemmDescriptor(m, 4096, 64, ad, bd_, deq), PREF)
                    assert freeze_knobs(p._knobs) in space


SAMPLES = {
    bd.ArchSku.SM80: [dict(a="s8", b="s8", out="i32", tile="128x128")],
    bd.ArchSku.SM89: [dict(a="u8", b="s8", out="f32", tile="64x64")],
}


@pytest.mark.parametrize("arch", list(SAMPLES) + [bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.ops import get_template
    from baracuda_dsl.jit.compiler import compile_sku

    if arch is bd.ArchSku.SM90A:
        todo = list(get_template("gemm_int8").skus("sm90a"))    # every SKU (~1 s each)
    else:
        todo = [freeze_knobs(k) for k in SAMPLES[arch]]
    for knobs in todo:
        cubin, meta = compile_sku("gemm_int8", knobs, arch, timeout=600)
        assert cubin and meta["entry"]
