"""im2col / col2im (unfold / fold) plans without a GPU: descriptor validation and torch's block
formula, the SKU space, the exact launch arguments (recorded), the two kernels' index math
emulated in numpy against a brute-force numpy unfold / fold (1-, 2- and 3-D; fold checked as the
adjoint of unfold) and a cross-compile sample of both templates for sm80 / sm89 / sm90a."""

import itertools

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.ops.conv.im2col import (Col2ImArgs, Col2ImBackwardArgs, Col2ImBackwardPlan,
                                          Col2ImDescriptor, Col2ImPlan, Im2ColArgs,
                                          Im2ColBackwardArgs, Im2ColBackwardPlan,
                                          Im2ColDescriptor, Im2ColPlan, unfold_blocks)
from baracuda_dsl.ops.conv.specs import im2col as spec
from baracuda_dsl.tensor import TensorView, contiguous_strides

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


# ------------------------------------------------------------------------ numpy references
def np_unfold(x, kernel_size, dilation, padding, stride):
    """Brute-force unfold of an (N, C, *sp) array (any spatial rank), straight from the
    definition: cols[n, c·KK + κ, λ] = x[n, c, λ·S − P + κ·D] or 0."""
    N, C = x.shape[:2]
    sp = x.shape[2:]
    blocks = [unfold_blocks(*a) for a in zip(sp, kernel_size, dilation, padding, stride)]
    kk, ll = int(np.prod(kernel_size)), int(np.prod(blocks))
    cols = np.zeros((N, C * kk, ll), x.dtype)
    for ki, kap in enumerate(itertools.product(*(range(k) for k in kernel_size))):
        for li, lam in enumerate(itertools.product(*(range(b) for b in blocks))):
            z = tuple(lm * s - p + k * d for lm, s, p, k, d in
                      zip(lam, stride, padding, kap, dilation))
            if all(0 <= zz < n for zz, n in zip(z, sp)):
                for c in range(C):
                    cols[:, c * kk + ki, li] = x[(slice(None), c) + z]
    return cols


def np_fold(cols, output_size, kernel_size, dilation, padding, stride):
    """Brute-force fold: the scatter-add of each column entry onto its image element."""
    N = cols.shape[0]
    kk = int(np.prod(kernel_size))
    C = cols.shape[1] // kk
    blocks = [unfold_blocks(*a) for a in zip(output_size, kernel_size, dilation, padding, stride)]
    y = np.zeros((N, C) + tuple(output_size), cols.dtype)
    for ki, kap in enumerate(itertools.product(*(range(k) for k in kernel_size))):
        for li, lam in enumerate(itertools.product(*(range(b) for b in blocks))):
            z = tuple(lm * s - p + k * d for lm, s, p, k, d in
                      zip(lam, stride, padding, kap, dilation))
            if all(0 <= zz < n for zz, n in zip(z, output_size)):
                for c in range(C):
                    y[(slice(None), c) + z] += cols[:, c * kk + ki, li]
    return y


# ------------------------------------------------------------------ kernels, emulated
def _pad3(desc):
    k = desc.spatial
    p3 = lambda v, f: (f,) * (3 - k) + tuple(v)  # noqa: E731
    img = desc.image_shape
    return (p3(img[2:], 1), p3(desc.blocks, 1), p3(desc.kernel_size, 1), p3(desc.stride, 1),
            p3(desc.padding, 0), p3(desc.dilation, 1))


def emulate_im2col(desc, x):
    """The im2col kernel's per-thread math on Python ints (dense cols)."""
    I, L, K, S, P, D = _pad3(desc)
    N, C = desc.image_shape[:2]
    x3 = x.reshape((N, C) + I)
    cols = np.full(desc.cols_shape, np.nan)
    flat = cols.reshape(-1)
    n = int(np.prod(desc.cols_shape))
    for i in range(n):
        r, l2 = divmod(i, L[2])
        r, l1 = divmod(r, L[1])
        r, l0 = divmod(r, L[0])
        r, k2 = divmod(r, K[2])
        r, k1 = divmod(r, K[1])
        r, k0 = divmod(r, K[0])
        b, c = divmod(r, C)
        z = [l * s - p + k * d for l, s, p, k, d in zip((l0, l1, l2), S, P, (k0, k1, k2), D)]
        inside = all(0 <= zz < ii for zz, ii in zip(z, I))
        row = ((c * K[0] + k0) * K[1] + k1) * K[2] + k2
        blk = (l0 * L[1] + l1) * L[2] + l2
        off = (b * desc.cols_shape[1] + row) * desc.cols_shape[2] + blk
        assert off == i                          # the thread order is the dense cols order
        flat[off] = x3[(b, c) + tuple(z)] if inside else 0.0
    return cols


def _block_range(z, L, K, S, P, D):
    a = z + P
    span = (K - 1) * D + 1
    lo = 0 if a < span else (a - span) // S + 1
    hi = min(a // S + 1, L)
    return lo, max(hi - lo, 0)


def emulate_col2im(desc, cols):
    """The col2im kernel's gather loops on Python ints."""
    I, L, K, S, P, D = _pad3(desc)
    N, C = desc.image_shape[:2]
    kk = int(np.prod(K))
    y = np.full((N, C) + I, np.nan)
    for b, c, z0, z1, z2 in itertools.product(range(N), range(C), *(range(i) for i in I)):
        rng = [_block_range(z, L[j], K[j], S[j], P[j], D[j]) for j, z in enumerate((z0, z1, z2))]
        acc = 0.0
        for j0, j1, j2 in itertools.product(*(range(cn) for _, cn in rng)):
            lam = (rng[0][0] + j0, rng[1][0] + j1, rng[2][0] + j2)
            t = [a + p - lm * s for a, p, lm, s in zip((z0, z1, z2), P, lam, S)]
            m = [divmod(tt, d) for tt, d in zip(t, D)]
            assert all(tt >= 0 for tt in t)
            if all(r == 0 for _, r in m):
                kap = [q for q, _ in m]
                assert all(0 <= q < k for q, k in zip(kap, K))
                row = (kap[0] * K[1] + kap[1]) * K[2] + kap[2]
                blk = (lam[0] * L[1] + lam[1]) * L[2] + lam[2]
                acc += cols[b, c * kk + row, blk]
        y[b, c, z0, z1, z2] = acc
    return y.reshape(desc.image_shape)


def _random_desc(rng):
    for _ in range(100):
        k = int(rng.integers(1, 4))
        sp = tuple(int(v) for v in rng.integers(1, 8, k))
        ks = tuple(int(v) for v in rng.integers(1, 4, k))
        dl = tuple(int(v) for v in rng.integers(1, 3, k))
        pd = tuple(int(v) for v in rng.integers(0, 3, k))
        st = tuple(int(v) for v in rng.integers(1, 4, k))
        try:
            return Im2ColDescriptor(k, (2, 3) + sp, ks, dl, pd, st, "f64")
        except bd.InvalidProblemError:
            continue
    raise AssertionError("no valid descriptor drawn")


def test_kernel_math_emulated():
    rng = np.random.default_rng(11)
    for _ in range(40):
        d = _random_desc(rng)
        x = rng.standard_normal(d.shape)
        args = (d.kernel_size, d.dilation, d.padding, d.stride)
        ref = np_unfold(x, *args)
        np.testing.assert_array_equal(emulate_im2col(d, x), ref, err_msg=str(d))
        f = d.to_col2im()
        cols = rng.standard_normal(f.shape)
        yref = np_fold(cols, f.output_size, *args)
        np.testing.assert_allclose(emulate_col2im(f, cols), yref, rtol=1e-13, atol=1e-13,
                                   err_msg=str(d))
        # fold is the adjoint of unfold: <unfold(x), cols> == <x, fold(cols)>
        assert np.isclose(np.vdot(ref, cols), np.vdot(x, yref), rtol=1e-12, atol=1e-12)


def test_reference_matches_torch_known_values():
    """torch.nn.functional.unfold / fold values worked by hand (2-D, padding and stride)."""
    x = np.arange(1.0, 10.0).reshape(1, 1, 3, 3)
    cols = np_unfold(x, (2, 2), (1, 1), (0, 0), (1, 1))
    assert cols.tolist() == [[[1, 2, 4, 5], [2, 3, 5, 6], [4, 5, 7, 8], [5, 6, 8, 9]]]
    # fold(unfold(x)) multiplies each element by the number of blocks covering it
    y = np_fold(cols, (3, 3), (2, 2), (1, 1), (0, 0), (1, 1))
    assert y.tolist() == (x * np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]])).tolist()
    cols = np_unfold(x, (2, 2), (1, 1), (1, 1), (2, 2))
    assert cols.shape == (1, 4, 4)
    assert cols[0, 0].tolist() == [0, 0, 0, 5] and cols[0, 3].tolist() == [1, 3, 7, 9]
    c1 = np_unfold(np.arange(1.0, 6.0).reshape(1, 1, 5), (2,), (2,), (0,), (1,))
    assert c1.tolist() == [[[1, 2, 3], [3, 4, 5]]]


# ----------------------------------------------------------------------- validation
def test_blocks_and_validation():
    assert unfold_blocks(5, 3, 1, 0, 1) == 3 and unfold_blocks(5, 3, 2, 1, 2) == 2
    d = Im2ColDescriptor(2, (2, 3, 7, 9), (3, 2), 1, (1, 0), 2)
    assert d.blocks == (4, 4) and d.out_shape == (2, 18, 16) and d.kernel_size == (3, 2)
    assert d.padding == (1, 0) and d.stride == (2, 2) and d.dilation == (1, 1)
    assert d.to_col2im() == Col2ImDescriptor(2, (2, 18, 16), (7, 9), (3, 2), 1, (1, 0), 2)
    assert d.to_col2im().to_im2col() == d
    assert Im2ColDescriptor(1, (2, 3, 8), [2]).out_shape == (2, 6, 7)
    assert Im2ColDescriptor(3, (1, 2, 4, 5, 6), 2, padding=3).blocks == (9, 10, 11)  # pad > k/2
    assert Im2ColDescriptor(2, (0, 3, 4, 4), 2).out_shape == (0, 12, 9)               # empty N
    f = Col2ImDescriptor(2, (2, 12, 9), 4, 2, dtype="bf16")
    assert f.out_shape == (2, 3, 4, 4) and f.output_size == (4, 4) and f.dtype is bd.bfloat16
    bad = [dict(spatial=4, shape=(1, 1, 2, 2, 2, 2), kernel_size=1),
           dict(spatial=True, shape=(1, 1, 4), kernel_size=1),
           dict(spatial=2, shape=(1, 1, 4), kernel_size=1),                 # rank mismatch
           dict(spatial=2, shape=(1, 1, 0, 4), kernel_size=1),              # empty spatial
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=0),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, stride=0),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, dilation=0),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, padding=-1),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=(2, 2, 2)),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2.0),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=True),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=5),              # no block
           dict(spatial=1, shape=(1, 1, 4), kernel_size=3, dilation=2)]     # 4 - 5 + 1 = 0
    for kw in bad:
        with pytest.raises(bd.InvalidProblemError):
            Im2ColDescriptor(**kw)
    for dt in ("int32", "complex64", "float8_e4m3"):
        with pytest.raises(bd.UnsupportedError):
            Im2ColDescriptor(2, (1, 1, 4, 4), 2, dtype=dt)
        with pytest.raises(bd.UnsupportedError):
            Col2ImDescriptor(2, (1, 4, 9), 4, 2, dtype=dt)
    badf = [dict(shape=(1, 5, 9)),                        # 5 not divisible by 4
            dict(shape=(1, 4, 8)),                        # 8 != 9 blocks
            dict(shape=(4, 9)),                           # unbatched
            dict(output_size=0), dict(output_size=(4, 4, 4)), dict(output_size=1),
            dict(stride=0), dict(spatial=0)]
    for kw in badf:
        args = dict(spatial=2, shape=(1, 4, 9), output_size=4, kernel_size=2)
        args.update(kw)
        with pytest.raises(bd.InvalidProblemError):
            Col2ImDescriptor(**args)
    with pytest.raises(bd.InvalidProblemError):
        Im2ColPlan.select(Col2ImDescriptor(2, (1, 4, 9), 4, 2), PREF)
    with pytest.raises(bd.InvalidProblemError):
        Col2ImPlan.select(Im2ColDescriptor(2, (1, 1, 4, 4), 2), PREF)


def test_plan_skus():
    d = Im2ColDescriptor(2, (2, 3, 7, 9), 3, dtype="bf16")
    f = Col2ImDescriptor(3, (1, 8, 8), 3, 2, dtype="f64")
    for plan, desc, name, tmpl in [(Im2ColPlan, d, "im2col", "im2col"),
                                   (Im2ColBackwardPlan, d, "im2col_backward", "col2im"),
                                   (Col2ImPlan, f, "col2im", "col2im"),
                                   (Col2ImBackwardPlan, f, "col2im_backward", "im2col")]:
        p = plan.select(desc, PREF)
        sku = p.sku()
        assert sku.category is bd.OpCategory.CONV and sku.op == name and sku.template == tmpl
        assert sku.backend is bd.BackendKind.CUTE_DSL
        assert dict(sku.knobs) == {"dtype": desc.dtype.short}
        pg = p.precision_guarantee()
        assert pg.deterministic and pg.bit_stable_on_same_hardware
        if tmpl == "col2im":
            assert pg.accumulator == (bd.float64 if desc.dtype is bd.float64 else bd.float32)
        assert p.workspace_size() == 0 and not p.is_empty()
    for plan in (Im2ColPlan, Im2ColBackwardPlan):
        assert plan.select(Im2ColDescriptor(2, (0, 3, 4, 4), 2), PREF).is_empty()
        assert plan.select(Im2ColDescriptor(2, (2, 0, 4, 4), 2), PREF).is_empty()
    for plan in (Col2ImPlan, Col2ImBackwardPlan):
        assert plan.select(Col2ImDescriptor(2, (0, 4, 9), 4, 2), PREF).is_empty()


def test_sku_space():
    for t in (spec.IM2COL, spec.COL2IM):
        ks = list(t.space())
        assert len(ks) == len(set(ks)) == 4 <= 16
        assert {k.dtype for k in ks} == {"f32", "f16", "bf16", "f64"}
        assert t.family == "conv"
        assert sum(1 for _ in t.params) == 3 + spec.N_SCALARS


# ----------------------------------------------------------------------- recorded launches
def _tv(ptr, shape, strides, dt):
    return TensorView(ptr, shape, strides, as_dtype(dt), device=0)


def test_launch_arguments(launches):
    d = Im2ColDescriptor(2, (2, 3, 7, 9), (3, 2), (1, 2), (1, 0), (2, 1), "f32")
    L = d.blocks
    x = _tv(0x10000, d.shape, (1, 2, 60, 6), "f32")                     # NHWC-like strides
    cols = _tv(0x80000, d.out_shape, contiguous_strides(d.out_shape), "f32")
    Im2ColPlan.select(d, PREF).run(Im2ColArgs(x, cols))
    name, knobs, grid, args, _ = launches[-1]
    n = int(np.prod(d.out_shape))
    assert name == "im2col" and knobs == {"dtype": "f32"}
    assert grid == ((n + 255) // 256, 1, 1) and len(args) == 3 + spec.N_SCALARS
    assert args[:3] == [0x10000, 0x80000, n]
    assert args[3:11] == [3, 1, 7, 9, 1, *L, 0]
    assert args[11:19] == [1, 3, 2, 1, 2, 1, 0, 0]
    assert args[19:27] == [0, 1, 0, 1, 1, 2, 0, 0]
    assert args[27:] == [1, 2, 0, 60, 6, *contiguous_strides(d.out_shape)]
    # backward: dcols any strides → dx (a channels-last output is fine)
    dcols = _tv(0x20000, d.out_shape, (1, 2 * 2, 2 * 2 * 18), "f32")
    dx = _tv(0x30000, d.shape, (189, 1, 27, 3), "f32")
    Im2ColBackwardPlan.select(d, PREF).run(Im2ColBackwardArgs(dcols, dx))
    name, knobs, grid, args, _ = launches[-1]
    assert name == "col2im" and args[:3] == [0x20000, 0x30000, int(np.prod(d.shape))]
    assert args[27:] == [189, 1, 0, 27, 3, 1, 4, 72]
    # 1-D fold: padded in front with unit dims
    f = Col2ImDescriptor(1, (2, 6, 7), 9, 3, 1, 0, 1, "f16")
    cv = _tv(0x40000, f.shape, contiguous_strides(f.shape), "f16")
    y = _tv(0x50000, f.out_shape, contiguous_strides(f.out_shape), "f16")
    Col2ImPlan.select(f, PREF).run(Col2ImArgs(cv, y))
    name, knobs, grid, args, _ = launches[-1]
    assert name == "col2im" and knobs == {"dtype": "f16"}
    assert args[2:] == [2 * 2 * 9, 2, 1, 1, 9, 1, 1, 7, 0, 1, 1, 3, 1, 1, 1, 0, 0,
                        0, 0, 0, 1, 1, 1, 0, 0, 18, 9, 0, 0, 1, 42, 7, 1]
    Col2ImBackwardPlan.select(f, PREF).run(Col2ImBackwardArgs(y, cv))
    assert launches[-1][0] == "im2col" and launches[-1][3][:3] == [0x50000, 0x40000, 42 * 2]
    # empty: nothing launched
    before = len(launches)
    e = Im2ColDescriptor(2, (0, 3, 4, 4), 2)
    Im2ColPlan.select(e, PREF).run(Im2ColArgs(_tv(0x10000, e.shape, (48, 16, 4, 1), "f32"),
                                              _tv(0x20000, e.out_shape, (108, 9, 1), "f32")))
    assert len(launches) == before


def test_bad_operands_rejected_before_launch(launches):
    d = Im2ColDescriptor(2, (2, 3, 7, 9), 3)
    p = Im2ColPlan.select(d, PREF)
    x = _tv(0x10000, d.shape, contiguous_strides(d.shape), "f32")
    dense = contiguous_strides(d.out_shape)
    with pytest.raises(bd.InvalidProblemError):          # broadcast output
        p.run(Im2ColArgs(x, _tv(0x80000, d.out_shape, (0, dense[1], 1), "f32")))
    with pytest.raises(bd.UnsupportedError):             # self-overlapping output
        p.run(Im2ColArgs(x, _tv(0x80000, d.out_shape, (dense[0], 1, 1), "f32")))
    with pytest.raises(bd.InvalidProblemError):          # wrong shape
        p.run(Im2ColArgs(x, _tv(0x80000, (2, 27, 34), contiguous_strides((2, 27, 34)), "f32")))
    with pytest.raises(bd.UnsupportedError):             # wrong dtype
        p.run(Im2ColArgs(x, _tv(0x80000, d.out_shape, dense, "f16")))
    with pytest.raises(bd.InvalidProblemError):          # missing operand
        p.run(Im2ColArgs(x, None))
    with pytest.raises(bd.DeviceMismatchError):
        p.run(Im2ColArgs(np.zeros(d.shape, np.float32), np.zeros(d.out_shape, np.float32)))
    assert not launches
    # a permuted but non-overlapping output is accepted
    p.run(Im2ColArgs(x, _tv(0x80000, d.out_shape, (dense[0], 1, d.out_shape[1]), "f32")))
    assert launches[-1][3][-3:] == [dense[0], 1, d.out_shape[1]]


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs in [("im2col", dict(dtype="bf16")), ("col2im", dict(dtype="f32"))]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == spec.THREADS
