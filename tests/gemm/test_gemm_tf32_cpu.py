"""GemmPlan with ``allow_tf32`` without a GPU: validation, routing to gemm_tf32 / SIMT by operand
layout, SKU space, cross-compile samples (sm80, sm89) and every SKU for sm90a."""

import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import float32
from baracuda_dsl.ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan
from baracuda_dsl.tensor import TensorView
from _gemm_helpers import tuned

BASE = 1 << 20
ARCHS = (bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A)


def tv(shape, strides, off=0):
    return TensorView(BASE + off, shape, strides, float32, 0)


def row(m, k, ld=None, off=0):
    return tv((m, k), (k if ld is None else ld, 1), off)


def col(m, k, ld=None, off=0):
    return tv((m, k), (1, m if ld is None else ld), off)


def pref(arch):
    return bd.PlanPreference(arch=arch)


def test_descriptor():
    d = GemmDescriptor(4, 5, 6, "f32")
    assert d.allow_tf32 is False and not d.uses_tf32
    assert GemmDescriptor(4, 5, 6, "f32", allow_tf32=True).uses_tf32
    # meaningful for float32 only: other dtypes ignore it
    assert not GemmDescriptor(4, 5, 6, "bf16", allow_tf32=True).uses_tf32
    assert not GemmDescriptor(4, 5, 6, "f64", allow_tf32=True).uses_tf32
    with pytest.raises(bd.InvalidProblemError):
        GemmDescriptor(1, 1, 1, "f32", allow_tf32=1)
    assert GemmDescriptor(1, 1, 1, "f32") != GemmDescriptor(1, 1, 1, "f32", allow_tf32=True)


@pytest.mark.parametrize("arch", ARCHS)
def test_sku_choice(arch):
    p = GemmPlan.select(GemmDescriptor(4096, 4096, 512, "f32", allow_tf32=True), pref(arch))
    assert p.sku().template == "gemm_tf32" and dict(p.sku().knobs)["tile"] == "128x128"
    p = GemmPlan.select(GemmDescriptor(256, 256, 64, "f32", allow_tf32=True,
                                       epilogue="bias_gelu"), pref(arch))
    kn = dict(p.sku().knobs)
    assert p.sku().template == "gemm_tf32" and kn["tile"] == "64x64" and kn["act"] == "gelu"
    # strict f32 stays on SIMT
    p = GemmPlan.select(GemmDescriptor(4096, 4096, 512, "f32"), pref(arch))
    assert p.sku().template == "gemm_simt"
    # forced tiles
    p = GemmPlan.select(GemmDescriptor(8, 8, 8, "f32", allow_tf32=True),
                        tuned(pref(arch), tile="128x128"))
    assert dict(p.sku().knobs)["tile"] == "128x128"
    p = GemmPlan.select(GemmDescriptor(8, 8, 8, "f32", allow_tf32=True),
                        tuned(pref(arch), tile="simt"))
    assert p.sku().template == "gemm_simt"
    with pytest.raises(bd.UnsupportedError):
        GemmPlan.select(GemmDescriptor(8, 8, 8, "f32", allow_tf32=True),
                        tuned(pref(arch), tile="16x32"))


@pytest.mark.parametrize("am", ["row", "col"])
@pytest.mark.parametrize("bm", ["row", "col"])
def test_layout_routing(am, bm):
    m, n, k = 2048, 2048, 64
    p = GemmPlan.select(GemmDescriptor(m, n, k, "f32", allow_tf32=True), pref(ARCHS[0]))
    a = row(m, k) if am == "row" else col(m, k)
    b = row(k, n) if bm == "row" else col(k, n)
    t, kn = p.kernel_for(GemmArgs(a, b, row(m, n)))
    assert t.name == "gemm_tf32"
    assert kn.a_major == ("k" if am == "row" else "m")
    assert kn.b_major == ("n" if bm == "row" else "k")
    assert kn.tile == ("128x128" if am == "row" else "64x64")


def test_simt_fallbacks():
    m, n, k = 64, 64, 64
    p = GemmPlan.select(GemmDescriptor(m, n, k, "f32", allow_tf32=True), pref(ARCHS[0]))
    c = row(m, n)
    assert p.kernel_for(GemmArgs(row(m, k), row(k, n), c))[0].name == "gemm_tf32"
    # ld multiple of 4 (not 8) is fine for tf32
    assert p.kernel_for(GemmArgs(row(m, k, ld=68), row(k, n), c))[0].name == "gemm_tf32"
    # misaligned base, ld not a multiple of 4, contiguous extent not a multiple of 4, k = 0
    assert p.kernel_for(GemmArgs(row(m, k, off=4), row(k, n), c))[0].name == "gemm_simt"
    assert p.kernel_for(GemmArgs(row(m, k, ld=66), row(k, n), c))[0].name == "gemm_simt"
    p2 = GemmPlan.select(GemmDescriptor(m, n, 6, "f32", allow_tf32=True), pref(ARCHS[0]))
    assert p2.kernel_for(GemmArgs(row(m, 6), col(6, n), c))[0].name == "gemm_simt"
    p0 = GemmPlan.select(GemmDescriptor(m, n, 0, "f32", allow_tf32=True), pref(ARCHS[0]))
    assert p0.kernel_for(GemmArgs(row(m, 0), row(0, n), c))[0].name == "gemm_simt"
    # a strided (non-unit) operand
    assert p.kernel_for(GemmArgs(tv((m, k), (2 * k, 2)), row(k, n), c))[0].name == "gemm_simt"


def test_routes_are_in_the_sku_space():
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.ops import get_template

    space = {t: set(get_template(t).skus("sm90a")) for t in ("gemm_tf32", "gemm_simt")}
    for m, n, k in ((1, 64, 64), (16, 8, 8), (64, 64, 64), (2048, 2048, 64), (8, 8, 0)):
        for epi in ("identity", "bias_silu", "bias_relu"):
            p = GemmPlan.select(GemmDescriptor(m, n, k, "f32", allow_tf32=True, epilogue=epi),
                                pref(bd.ArchSku.SM90A))
            bias = tv((n,), (1,)) if epi != "identity" else None
            for a in (row(m, k), col(m, k)):
                for b in (row(k, n), col(k, n)):
                    t, kn = p.kernel_for(GemmArgs(a, b, row(m, n), bias))
                    assert freeze_knobs(kn) in space[t.name], kn


def test_sku_space():
    from baracuda_dsl.ops import get_template

    for arch in ("sm80", "sm89", "sm90a"):
        assert len(get_template("gemm_tf32").skus(arch)) == 24


SAMPLES = {
    bd.ArchSku.SM80: [dict(a_major="k", b_major="k", act="gelu", tile="128x128")],
    bd.ArchSku.SM89: [dict(a_major="m", b_major="n", act="silu", tile="64x64")],
}


@pytest.mark.parametrize("arch", list(SAMPLES) + [bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.ops import get_template
    from baracuda_dsl.jit.compiler import compile_sku

    if arch is bd.ArchSku.SM90A:
        todo = list(get_template("gemm_tf32").skus("sm90a"))    # every SKU (~1 s each)
    else:
        todo = [freeze_knobs(k) for k in SAMPLES[arch]]
    for knobs in todo:
        cubin, meta = compile_sku("gemm_tf32", knobs, arch, timeout=600)
        assert cubin and meta["entry"]
