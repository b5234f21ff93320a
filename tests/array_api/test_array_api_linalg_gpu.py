"""The namespace's linear algebra on the GPU against float64 numpy references: ``matmul`` (1-D /
2-D / N-D broadcasting, odd sizes 1 / 7 / 33 / 130, transposed and negative-stride views, every
float dtype, integers through the exact float64 path, complex through four real GEMMs), the
``@`` / ``@=`` operators, ``tensordot`` with several axes, ``vecdot``, ``outer``, ``linear``
with every activation, ``linalg.matrix_power``; ``BatchedGemmPlan`` with a stride-0 (shared)
operand and ``GroupedGemmPlan`` with different m (m = 0 included) on torch tensors.
Every element is checked (tests._checks via _gpu_helpers.assert_terms_close) against the float64
reference computed from the device operands' (rounded) values: half an ulp of the OUTPUT dtype
plus k + 4 roundings in the compute precision (float32 for the half types and float32, float64
for float64; complex: 2k, four real GEMMs) relative to |A|·|B| (the classical worst case; the
magnitude the accumulation error is relative to when A·B cancels), times the activation's
largest slope for fused epilogues.  Few distinct GEMM SKUs, to keep the file fast."""

import math

import numpy as np
import pytest

from _gpu_helpers import assert_terms_close

pytestmark = pytest.mark.gpu

#: roundings of an epilogue (alpha ·, + beta·c, + bias, the store's conversion)
EPILOGUE_TERMS = 4
#: roundings of the fused activations, and their largest slope |act'| (the amplification of the
#: pre-activation error: gelu' peaks at ≈ 1.129, silu' at ≈ 1.0998)
ACT_TERMS = {None: 0, "relu": 0, "gelu": 6, "silu": 4}
ACT_COND = {None: 1.0, "relu": 1.0, "gelu": 1.13, "silu": 1.1}


def _mods():
    import array_api as xp
    from array_api import _linear_algebra_functions as la
    from array_api import linalg

    return xp, la, linalg


def _dev(a, dtype):
    xp, _, _ = _mods()
    return xp.asarray(np.asarray(a), dtype=getattr(xp, dtype))


def _h(x):
    """Host float64 (complex128) copy of a device array (or torch tensor)."""
    if not hasattr(x, "to_numpy"):
        return x.detach().double().cpu().numpy()
    a = np.asarray(x.to_numpy())
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def _rand(rng, shape, dtype="float64"):
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a


def _check(out, ref, dtype, scale, k, act=None, products=1):
    """Every element of ``out`` within half an ulp of ``dtype`` plus ``products`` chained
    products of ``k``-term sums (k + EPILOGUE_TERMS roundings each, 2k for complex) relative to
    ``scale`` (|A|·|B|, from the exact operand values), times the activation's slope."""
    got = _h(out)
    assert got.shape == np.shape(ref), (got.shape, np.shape(ref))
    assert np.isfinite(got).all()
    kk = 2 * k if dtype.startswith("complex") else k
    terms = products * (kk + EPILOGUE_TERMS) + ACT_TERMS[act]
    assert_terms_close(got, ref, dtype, terms=terms, scale=ACT_COND[act] * np.asarray(scale),
                       what=f"{dtype} {got.shape} k={k} act={act}")


def _check_mm(out, ha, hb, dtype):
    """``out`` against ha @ hb (host float64 / complex128 operands, numpy matmul semantics)."""
    _check(out, np.matmul(ha, hb), dtype, np.matmul(np.abs(ha), np.abs(hb)), ha.shape[-1])


MATMUL_SHAPES = [((7,), (7,)), ((33,), (33, 130)), ((130, 33), (33,)), ((1, 7), (7, 1)),
                 ((7, 33), (33, 130)), ((130, 1), (1, 7)), ((3, 7, 33), (33, 130)),
                 ((2, 1, 33, 7), (3, 7, 1)), ((33,), (2, 33, 7)), ((4, 1, 7), (1, 1, 7, 33)),
                 ((0, 7, 33), (33, 7)), ((7, 0), (0, 33)), ((3, 130, 33), (3, 33, 7))]


def test_matmul_broadcasting_f64():
    _, la, _ = _mods()
    rng = np.random.default_rng(0)
    for s1, s2 in MATMUL_SHAPES:
        a, b = _rand(rng, s1), _rand(rng, s2)
        r = la.matmul(_dev(a, "float64"), _dev(b, "float64"))
        ref = np.matmul(a, b)
        if r.size:
            _check_mm(r, a, b, "float64")
        else:
            assert r.shape == ref.shape
        if 0 in s1[-1:] and r.size:
            assert (_h(r) == 0).all()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_matmul_dtypes_and_views(dtype):
    _, la, _ = _mods()
    rng = np.random.default_rng(1)
    a = _dev(_rand(rng, (2, 130, 40)), dtype)
    b = _dev(_rand(rng, (40, 33)), dtype)
    r = la.matmul(a, b)
    assert r.dtype == a.dtype
    _check_mm(r, _h(a), _h(b), dtype)
    # transposed operands (views, no copies) and a batched b
    at = _dev(_rand(rng, (40, 136)), dtype).mT
    bt = _dev(_rand(rng, (3, 64, 40)), dtype).mT
    _check_mm(la.matmul(at, bt), _h(at), _h(bt), dtype)
    # negative strides / slices: no unit stride for the half types → dense copy
    c = _dev(_rand(rng, (66, 80)), dtype)
    v1, v2 = c[::-2, 1::2], c[:40, ::-1]
    _check_mm(la.matmul(v1, v2), _h(v1), _h(v2), dtype)
    # odd sizes, K = 1, M = 1
    for m, n, k in ((1, 7, 33), (7, 1, 130), (33, 130, 1), (130, 33, 7)):
        x, y = _dev(_rand(rng, (m, k)), dtype), _dev(_rand(rng, (k, n)), dtype)
        _check_mm(la.matmul(x, y), _h(x), _h(y), dtype)


def test_matmul_mixed_int_complex():
    xp, la, _ = _mods()
    rng = np.random.default_rng(2)
    r = la.matmul(_dev(_rand(rng, (7, 33)), "float32"), _dev(_rand(rng, (33, 5)), "bfloat16"))
    assert r.dtype == xp.float32
    i8 = rng.integers(-128, 128, (3, 33, 130)).astype(np.int8)
    u8 = rng.integers(0, 256, (130, 7)).astype(np.uint8)
    ri = la.matmul(xp.asarray(i8), xp.asarray(u8))
    assert ri.dtype == xp.int16
    np.testing.assert_array_equal(ri.to_numpy(), (i8.astype(np.int64) @ u8).astype(np.int16))
    w = rng.integers(-1000, 1000, (257, 256)).astype(np.int32)   # value-checked f64 GEMM
    r32 = la.matmul(xp.asarray(w), xp.asarray(w[:256].T.copy()))
    np.testing.assert_array_equal(r32.to_numpy(), (w.astype(np.int64) @ w[:256].T)
                                  .astype(np.int32))
    h1 = rng.integers(-2 ** 62, 2 ** 62, (2, 7, 33))               # elementwise exact path
    h2 = rng.integers(-2 ** 62, 2 ** 62, (33, 5))
    np.testing.assert_array_equal(la.matmul(xp.asarray(h1), xp.asarray(h2)).to_numpy(),
                                  h1 @ h2)                          # wraps like numpy
    big = np.full((257, 256), 2 ** 40, np.int64)
    with pytest.raises(xp.UnsupportedError):
        la.matmul(xp.asarray(big), xp.asarray(big[:256].T.copy()))
    for ct in ("complex64", "complex128"):
        a, b = _dev(_rand(rng, (2, 33, 7), ct), ct), _dev(_rand(rng, (7, 130), ct), ct)
        rc = la.matmul(a, b)
        assert rc.dtype == getattr(xp, ct)
        _check_mm(rc, _h(a), _h(b), ct)
        _check_mm(la.matmul(a[0].mT, a[1]), _h(a[0]).T, _h(a[1]), ct)


def test_operators():
    xp, la, _ = _mods()
    rng = np.random.default_rng(3)
    a, b = _dev(_rand(rng, (4, 33, 7)), "float32"), _dev(_rand(rng, (7, 7)), "float32")
    _check_mm(a @ b, _h(a), _h(b), "float32")
    # two chained products: the first one's error goes through the second (|B|·|A0ᵀ|·|A1|)
    hb, ha0t, ha1 = _h(b), _h(a[0]).T, _h(a[1])
    _check(b @ a[0].mT @ a[1], hb @ ha0t @ ha1, "float32",
           np.abs(hb) @ np.abs(ha0t) @ np.abs(ha1), 33, products=2)
    ha, hb = _h(a), _h(b)
    t = a
    a @= b
    assert a is t
    _check_mm(a, ha, hb, "float32")
    with pytest.raises(ValueError):
        a @= _dev(_rand(rng, (7, 3)), "float32")
    with pytest.raises(TypeError):
        a @= _dev(_rand(rng, (7, 7)), "float64")


TD = [((3, 4, 33), (4, 33, 7), 2), ((7, 33), (33, 130), 1), ((7,), (5,), 0),
      ((3, 4, 5), (5, 4, 2), ([1, 2], [1, 0])), ((33, 4, 5), (5, 33), ([0, 2], [1, 0])),
      ((3, 4, 5), (6, 4), ([-2], [-1])), ((2, 3), (2, 3), 2)]


@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
def test_tensordot(dtype):
    _, la, _ = _mods()
    rng = np.random.default_rng(4)
    for s1, s2, axes in TD:
        a, b = _dev(_rand(rng, s1), dtype), _dev(_rand(rng, s2), dtype)
        ha, hb = _h(a), _h(b)
        ref = np.tensordot(ha, hb, axes=axes)
        k = round(math.sqrt(ha.size * hb.size / ref.size))     # the contracted size
        _check(la.tensordot(a, b, axes=axes), ref, dtype,
               np.tensordot(np.abs(ha), np.abs(hb), axes=axes), k)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "complex64"])
def test_vecdot(dtype):
    _, la, _ = _mods()
    rng = np.random.default_rng(5)
    for s1, s2, axis in (((130,), (130,), -1), ((7, 33), (33,), -1), ((2, 33, 7), (33, 7), -2),
                         ((1, 4, 1000), (3, 1, 1000), -1), ((4, 5), (4, 5), 0)):
        a, b = _dev(_rand(rng, s1, dtype), dtype), _dev(_rand(rng, s2, dtype), dtype)
        ha, hb = _h(a), _h(b)
        n = min(len(s1), len(s2))
        ax = axis - n if axis >= 0 else axis
        prods = np.conj(np.moveaxis(ha, ax, -1)) * np.moveaxis(hb, ax, -1)
        r = la.vecdot(a, b, axis=axis)
        assert r.dtype == a.dtype
        _check(r, np.sum(prods, axis=-1), dtype, np.sum(np.abs(prods), axis=-1), prods.shape[-1])


def test_vecdot_outer_ints():
    xp, la, linalg = _mods()
    rng = np.random.default_rng(6)
    a = rng.integers(-100, 100, (7, 33)).astype(np.int32)
    r = la.vecdot(xp.asarray(a), xp.asarray(a[0]))
    np.testing.assert_array_equal(r.to_numpy(), (a.astype(np.int64) * a[0]).sum(-1))
    x, y = rng.integers(-9, 9, 7).astype(np.int16), rng.integers(0, 9, 130).astype(np.uint8)
    o = linalg.outer(xp.asarray(x), xp.asarray(y))
    assert o.dtype == xp.int16
    np.testing.assert_array_equal(o.to_numpy(), np.outer(x, y))
    f, g = _dev(_rand(rng, (33,)), "float32"), _dev(_rand(rng, (7,)), "float32")
    ref = np.outer(_h(f)[::-1], _h(g))
    _check(linalg.outer(f[::-1], g), ref, "float32", np.abs(ref), 1)


def _act(name, t):
    if name == "relu":
        return np.maximum(t, 0)
    if name == "gelu":
        return 0.5 * t * (1 + np.vectorize(math.erf)(t / math.sqrt(2)))
    if name == "silu":
        return t / (1 + np.exp(-t))
    return t


@pytest.mark.parametrize("activation", [None, "relu", "gelu", "silu"])
def test_linear(activation):
    from array_api import _gemm_extensions as gx

    rng = np.random.default_rng(7)
    for dtype in ("float32", "bfloat16"):
        x = _dev(_rand(rng, (2, 65, 40)), dtype)
        w = _dev(_rand(rng, (33, 40)), dtype)
        bias = _dev(_rand(rng, (33,)), dtype)
        ref = _h(x) @ _h(w).T
        mag = np.abs(_h(x)) @ np.abs(_h(w)).T
        _check(gx.linear(x, w, bias, activation=activation), _act(activation, ref + _h(bias)),
               dtype, mag + np.abs(_h(bias)), 40, activation)
        _check(gx.linear(x, w, activation=activation), _act(activation, ref), dtype, mag, 40,
               activation)
    xs = _dev(_rand(rng, (5, 7, 40)), "float32")[:, ::2]                # leading dims copied
    w = _dev(_rand(rng, (33, 40)), "float32")
    _check(gx.linear(xs, w, activation=activation), _act(activation, _h(xs) @ _h(w).T),
           "float32", np.abs(_h(xs)) @ np.abs(_h(w)).T, 40, activation)


def test_matrix_power_and_linalg_errors():
    xp, la, linalg = _mods()
    rng = np.random.default_rng(8)
    m = _dev(_rand(rng, (3, 7, 7)) / 3, "float64")
    hm = _h(m)
    for n in (0, 1, 2, 5):
        # n − 1 chained 7-term products at most, relative to |m|^n (0 and 1: exact)
        _check(linalg.matrix_power(m, n), np.linalg.matrix_power(hm, n), "float64",
               np.linalg.matrix_power(np.abs(hm), n), 7, products=max(n - 1, 0))
    # negative powers go through inv (issue 20): m⁻² against numpy, relative to ‖m⁻²‖·cond²
    got = _h(linalg.matrix_power(m, -2))
    ref = np.linalg.matrix_power(hm, -2)
    cond = np.linalg.cond(hm).max()
    assert np.abs(got - ref).max() <= 1e-13 * cond ** 2 * np.abs(ref).max()
    with pytest.raises(TypeError):
        linalg.inv(_dev(np.eye(3), "int32"))


def test_batched_plan_stride0_broadcast():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.gemm.gemm_batched import (BatchedGemmArgs, BatchedGemmDescriptor,
                                                    BatchedGemmPlan)

    gen = torch.Generator(device="cuda").manual_seed(0)
    B, m, n, k = 5, 130, 33, 64
    for dtype in ("bfloat16", "float32"):
        tdt = getattr(torch, dtype)
        a = torch.randn((B, m, k), generator=gen, device="cuda").to(tdt)
        w = torch.randn((k, n), generator=gen, device="cuda").to(tdt)
        b = w.expand(B, k, n)                                  # batch stride 0: shared
        assert b.stride(0) == 0
        c = torch.full((B, m, n), float("nan"), device="cuda", dtype=tdt)
        bias = torch.randn((B, n), generator=gen, device="cuda").to(tdt)
        plan = BatchedGemmPlan.select(BatchedGemmDescriptor(B, m, n, k, dtype,
                                                            epilogue="bias_relu"))
        plan.run(BatchedGemmArgs(a, b, c, bias))
        torch.cuda.synchronize()
        ref = torch.relu(a.double() @ w.double() + bias.double()[:, None, :])
        mag = a.double().abs() @ w.double().abs() + bias.double().abs()[:, None, :]
        _check(c, ref.cpu().numpy(), dtype, mag.cpu().numpy(), k, "relu")
        # a shared instead (stride 0), b per entry, alpha / beta
        a1 = torch.randn((m, k), generator=gen, device="cuda").to(tdt)
        bb = torch.randn((B, n, k), generator=gen, device="cuda").to(tdt).transpose(1, 2)
        c2 = torch.randn((B, m, n), generator=gen, device="cuda").to(tdt)
        old = c2.double().clone()
        plan2 = BatchedGemmPlan.select(BatchedGemmDescriptor(B, m, n, k, dtype, alpha=0.5,
                                                             beta=-1.0))
        plan2.run(BatchedGemmArgs(a1.expand(B, m, k), bb, c2))
        torch.cuda.synchronize()
        ref2 = 0.5 * (a1.double() @ bb.double()) - old
        mag2 = 0.5 * (a1.double().abs() @ bb.double().abs()) + old.abs()
        _check(c2, ref2.cpu().numpy(), dtype, mag2.cpu().numpy(), k)


def test_grouped_plan_moe():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.gemm.gemm_batched import (GroupedGemmArgs, GroupedGemmDescriptor,
                                                    GroupedGemmPlan)

    gen = torch.Generator(device="cuda").manual_seed(1)
    n, k = 64, 128
    ms = [130, 0, 7, 1, 33, 256]
    tokens = torch.randn((sum(ms), k), generator=gen, device="cuda").to(torch.bfloat16)
    experts = torch.randn((len(ms), n, k), generator=gen, device="cuda").to(torch.bfloat16)
    out = torch.full((sum(ms), n), float("nan"), device="cuda", dtype=torch.bfloat16)
    bias = torch.randn((len(ms), n), generator=gen, device="cuda").to(torch.bfloat16)
    offs = [sum(ms[:g]) for g in range(len(ms))]
    a_l = [tokens[o:o + m] for o, m in zip(offs, ms)]
    b_l = [experts[g].t() for g in range(len(ms))]
    c_l = [out[o:o + m] for o, m in zip(offs, ms)]
    plan = GroupedGemmPlan.select(GroupedGemmDescriptor([(m, n, k) for m in ms], "bfloat16",
                                                        epilogue="bias_silu"))
    plan.run(GroupedGemmArgs(a_l, b_l, c_l, list(bias)))
    torch.cuda.synchronize()
    for g, m in enumerate(ms):
        if not m:
            continue
        r = a_l[g].double() @ b_l[g].double() + bias[g].double()
        ref = r * torch.sigmoid(r)
        mag = a_l[g].double().abs() @ b_l[g].double().abs() + bias[g].double().abs()
        _check(c_l[g], ref.cpu().numpy(), "bfloat16", mag.cpu().numpy(), k, "silu")
    assert torch.isfinite(out).all()
