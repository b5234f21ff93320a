"""max_unpool without a GPU: descriptor validation and torch's output-size rule, the kernels'
zero / scatter / gather index math emulated in numpy against max_pool's indices, the SKU space,
the exact launch arguments (recorded: two forward stages, the status word) and a cross-compile
sample for sm80 / sm89 / sm90a."""

import itertools

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.ops.pooling import (MaxUnpoolArgs, MaxUnpoolBackwardArgs,
                                      MaxUnpoolBackwardPlan, MaxUnpoolDescriptor, MaxUnpoolPlan,
                                      pool_dense_strides, unpool_output_size)
from baracuda_dsl.ops.pooling.specs import unpool as spec
from baracuda_dsl.tensor import TensorView

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def _tv(ptr, shape, strides, dt):
    return TensorView(ptr, shape, strides, as_dtype(dt), device=0)


def test_descriptor_sizes_and_validation():
    assert unpool_output_size(4, 2, 2, 0) == 8 and unpool_output_size(5, 3, 2, 1) == 9
    d = MaxUnpoolDescriptor(2, (1, 2, 4, 5), 2)
    assert d.out_shape == (1, 2, 8, 10) and d.stride == (2, 2)
    d = MaxUnpoolDescriptor(2, (1, 2, 4, 5), 3, 2, 1, output_size=(1, 2, 8, 10))
    assert d.output_size == (8, 10)                       # default (7, 9); within stride
    assert MaxUnpoolDescriptor(1, (1, 1, 3), 2, output_size=[7]).out_shape == (1, 1, 7)
    assert MaxUnpoolDescriptor(3, (0, 1, 2, 2, 2), 2).out_shape == (0, 1, 4, 4, 4)
    bad = [dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, output_size=(10, 8)),  # 10 ≥ 8+2
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, output_size=(6, 8)),   # 6 ≤ 8−2
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, output_size=(8,)),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, output_size=8),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=0),
           dict(spatial=2, shape=(1, 1, 4, 4), kernel_size=2, padding=-1),
           dict(spatial=2, shape=(1, 1, 1, 1), kernel_size=1, padding=1),             # out < 1
           dict(spatial=4, shape=(1, 1, 2, 2, 2, 2), kernel_size=1)]
    for kw in bad:
        with pytest.raises(bd.InvalidProblemError):
            MaxUnpoolDescriptor(**kw)


def _maxpool_indices(x, k):
    """2-D max_pool (stride k) values and flattened-plane argmax indices (first max)."""
    N, C, H, W = x.shape
    oh, ow = H // k, W // k
    v = np.zeros((N, C, oh, ow))
    idx = np.zeros((N, C, oh, ow), np.int64)
    for b, c, i, j in itertools.product(range(N), range(C), range(oh), range(ow)):
        blk = x[b, c, i * k:(i + 1) * k, j * k:(j + 1) * k]
        a = int(np.argmax(blk))
        v[b, c, i, j] = blk.flat[a]
        idx[b, c, i, j] = (i * k + a // k) * W + j * k + a % k
    return v, idx


def _emulate(desc, x, idx):
    """Stage 0 (zeros) then stage 1 (scatter, skip out-of-range) and the backward gather."""
    N, C = desc.shape[:2]
    m = int(np.prod(desc.output_size))
    y = np.zeros(desc.out_shape).reshape(N, C, m)
    bad = False
    for b, c in itertools.product(range(N), range(C)):
        for i, j in zip(x[b, c].ravel(), idx[b, c].ravel()):
            if 0 <= j < m:
                y[b, c, j] = i
            else:
                bad = True
    return y.reshape(desc.out_shape), bad


def _emulate_bw(desc, dy, idx):
    N, C = desc.shape[:2]
    flat = dy.reshape(N, C, -1)
    m = flat.shape[-1]
    ok = (idx >= 0) & (idx < m)
    g = np.take_along_axis(flat, np.where(ok, idx, 0).reshape(N, C, -1), 2).reshape(idx.shape)
    return np.where(ok, g, 0.0), not ok.all()


def test_unpool_inverts_max_pool_in_emulation():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 8, 10))
    v, idx = _maxpool_indices(x, 2)
    desc = MaxUnpoolDescriptor(2, v.shape, 2, dtype="f64")
    y, bad = _emulate(desc, v, idx)
    assert not bad and y.shape == x.shape
    mask = y != 0
    assert np.array_equal(y[mask], x[mask]) and mask.sum() == v.size
    dy = rng.standard_normal(y.shape)
    g, bad = _emulate_bw(desc, dy, idx)
    assert not bad and np.array_equal(g.ravel(), np.array(
        [dy[b, c].ravel()[j] for b, c in itertools.product(range(2), range(3))
         for j in idx[b, c].ravel()]))
    idx[0, 0, 0, 0] = 80
    assert _emulate(desc, v, idx)[1] and _emulate_bw(desc, dy, idx)[1]


def test_sku_space():
    ks = list(spec.MAX_UNPOOL.space())
    assert len(ks) == 8 and {k.direction for k in ks} == {"fw", "bw"}


def test_launch_arguments(launches):
    d = MaxUnpoolDescriptor(2, (2, 3, 4, 5), 2, dtype="f16", layout="NHWC")
    out = d.out_shape
    x = _tv(0x10000, d.shape, (60, 1, 15, 3), "f16")
    ix = _tv(0x20000, d.shape, (60, 20, 5, 1), "int64")
    y = _tv(0x80000, out, pool_dense_strides(out, "NHWC"), "f16")
    st = _tv(0x90000, (1,), (1,), "int32")
    MaxUnpoolPlan.select(d, PREF).run(MaxUnpoolArgs(x, ix, y, st))
    (n0, k0, g0, a0, _), (n1, k1, g1, a1, _) = launches
    m, n = int(np.prod(out)), int(np.prod(d.shape))
    assert n0 == n1 == "max_unpool" and k0 == {"dtype": "f16"}
    assert a0[:5] == [0x10000, 0x80000, 0x20000, 0x90000, m] and g0 == ((m + 255) // 256, 1, 1)
    assert a1[:5] == [0x10000, 0x80000, 0x20000, 0x90000, n]
    assert a0[5:13] == [2, 3, 1, 4, 5, 1, 8, 10]
    assert a0[13:18] == [60, 1, 0, 15, 3] and a0[18:23] == [240, 1, 0, 30, 3]
    assert a0[23:28] == [60, 20, 0, 5, 1]
    assert a0[28:] == [1, 0, 1] and a1[28:] == [1, 1, 1]
    del launches[:]
    bd_ = MaxUnpoolDescriptor(1, (2, 3, 4), 2, dtype="f32")
    MaxUnpoolBackwardPlan.select(bd_, PREF).run(MaxUnpoolBackwardArgs(
        _tv(0x30000, bd_.out_shape, (24, 8, 1), "f32"), _tv(0x20000, bd_.shape, (12, 4, 1),
                                                             "int64"),
        _tv(0x40000, bd_.shape, (12, 4, 1), "f32")))
    (name, knobs, grid, args, _), = launches
    assert knobs == {"dtype": "f32", "direction": "bw"}
    assert args[:5] == [0x40000, 0x30000, 0x20000, 0x20000, 24] and args[28:] == [0, 0, 0]
    assert args[5:13] == [2, 3, 1, 1, 4, 1, 1, 8]
    with pytest.raises(bd.UnsupportedError):                # indices dtype
        MaxUnpoolPlan.select(d, PREF).run(MaxUnpoolArgs(x, _tv(0x20000, d.shape, (60, 20, 5, 1),
                                                               "int32"), y))


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for knobs in (dict(dtype="bf16", direction="fw"), dict(dtype="f32", direction="bw")):
        cubin, meta = compile_sku("max_unpool", freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == 256
