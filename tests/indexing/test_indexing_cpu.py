"""Indexing family without a GPU: descriptor validation, SKU choice (word width, threads per row,
rank / wide), SKU space sizes, the host-side geometry checked by emulating the kernels' index
math in numpy (index_rows, gather_axis, one_hot), and cross-compiling samples for sm80 / sm89 /
sm90a."""

import numpy as np
import pytest

import baracuda_dsl as bd
import baracuda_dsl.ops.indexing.specs.indexing as spec
from baracuda_dsl.ops.indexing.indexing import (GatherAxisBackwardPlan, GatherAxisDescriptor,
                                                GatherAxisPlan, IndexSelectDescriptor,
                                                IndexSelectPlan, MaskedFillBackwardPlan,
                                                MaskedFillDescriptor, MaskedFillPlan, NonzeroPlan,
                                                OneHotDescriptor, OneHotPlan, ScatterAddPlan,
                                                ScatterAxisBackwardPlan, ScatterAxisDescriptor,
                                                ScatterAxisPlan, _axis_geometry, _rows_geometry,
                                                one_bits)
from baracuda_dsl.ops.scan.compaction import CompactPlan
from baracuda_dsl.tensor import contiguous_strides

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)
PREF80 = bd.PlanPreference(arch=bd.ArchSku.SM80)


# ---------------------------------------------------------------------------- validation
def test_index_select_validation():
    d = IndexSelectDescriptor((5, 6, 7), -2, 3, "bf16", "int32")
    assert d.axis == 1 and d.out_shape == (5, 3, 7) and d.index == bd.int32
    p = IndexSelectPlan.select(d, PREF)
    assert p.sku().template == "index_rows" and p.workspace_size() == 0
    assert p.precision_guarantee().deterministic
    for dt in ("bool", "int8", "uint64", "complex64", "complex128", "float8_e4m3", "f64"):
        IndexSelectPlan.select(IndexSelectDescriptor((3, 4), 0, 2, dt), PREF)
    with pytest.raises(bd.InvalidProblemError):
        IndexSelectDescriptor((5, 6), 2, 3, "f32")
    with pytest.raises(bd.InvalidProblemError):
        IndexSelectDescriptor((), 0, 3, "f32")
    with pytest.raises(bd.InvalidProblemError):
        IndexSelectDescriptor((5, 6), 0, -1, "f32")
    with pytest.raises(bd.InvalidProblemError):
        IndexSelectDescriptor((5, -6), 0, 1, "f32")
    with pytest.raises(bd.InvalidProblemError):
        IndexSelectDescriptor((1,) * 9, 0, 1, "f32")
    with pytest.raises(bd.UnsupportedError):
        IndexSelectDescriptor((5, 6), 0, 3, "f32", index="int16")
    assert IndexSelectPlan.select(IndexSelectDescriptor((5, 6), 0, 0, "f32"), PREF).is_empty()
    assert IndexSelectPlan.select(IndexSelectDescriptor((5, 0), 0, 3, "f32"), PREF).is_empty()


def test_gather_scatter_validation():
    d = GatherAxisDescriptor((4, 9), (3, 5), 1, "f32")
    assert d.axis == 1
    g = GatherAxisPlan.select(d, PREF)
    assert g.sku().template == "gather_axis" and g.precision_guarantee().deterministic
    with pytest.raises(bd.InvalidProblemError):  # index extent > x extent off the axis
        GatherAxisDescriptor((4, 9), (5, 5), 1, "f32")
    with pytest.raises(bd.InvalidProblemError):  # rank mismatch
        GatherAxisDescriptor((4, 9), (4,), 1, "f32")
    with pytest.raises(bd.InvalidProblemError):
        GatherAxisDescriptor((4, 9), (4, 9), 2, "f32")
    with pytest.raises(bd.InvalidProblemError):
        GatherAxisDescriptor((1,) * 9, (1,) * 9, 0, "f32")
    with pytest.raises(bd.UnsupportedError):
        GatherAxisDescriptor((4, 9), (4, 9), 0, "f32", index="uint8")
    # backward: atomics, non-deterministic for floats; bf16 add needs sm90a
    b = GatherAxisBackwardPlan.select(GatherAxisDescriptor((4, 9), (4, 3), 1, "bf16"), PREF)
    assert not b.precision_guarantee().deterministic
    with pytest.raises(bd.UnsupportedError, match="sm90a"):
        GatherAxisBackwardPlan.select(GatherAxisDescriptor((4, 9), (4, 3), 1, "bf16"), PREF80)
    with pytest.raises(bd.UnsupportedError):
        GatherAxisBackwardPlan.select(GatherAxisDescriptor((4, 9), (4, 3), 1, "int8"), PREF)
    # scatter reduces
    s = ScatterAxisPlan.select(ScatterAxisDescriptor((4, 9), (4, 3), 1, "complex128"), PREF)
    assert s.precision_guarantee().deterministic
    a = ScatterAddPlan.select(ScatterAxisDescriptor((4, 9), (4, 3), 1, "f32", reduce="add"),
                              PREF)
    assert not a.precision_guarantee().deterministic
    ai = ScatterAddPlan.select(ScatterAxisDescriptor((4, 9), (4, 3), 1, "int64", reduce="add"),
                               PREF)
    assert ai.precision_guarantee().deterministic
    with pytest.raises(bd.InvalidProblemError):  # ScatterAddPlan needs reduce add
        ScatterAddPlan.select(ScatterAxisDescriptor((4, 9), (4, 3), 1, "f32"), PREF)
    with pytest.raises(bd.UnsupportedError, match="wired"):
        ScatterAxisDescriptor((4, 9), (4, 3), 1, "f32", reduce="mul")
    with pytest.raises(bd.UnsupportedError, match="wired"):
        ScatterAxisDescriptor((4, 9), (4, 3), 1, "int8", reduce="add")
    with pytest.raises(bd.UnsupportedError):
        ScatterAxisDescriptor((4, 9), (4, 3), 1, "f64", reduce="amax")
    ScatterAxisDescriptor((4, 9), (4, 3), 1, "f32", reduce="amin")
    with pytest.raises(bd.UnsupportedError):
        ScatterAxisBackwardPlan.select(
            ScatterAxisDescriptor((4, 9), (4, 3), 1, "i32", reduce="amax"), PREF)
    ScatterAxisBackwardPlan.select(ScatterAxisDescriptor((4, 9), (4, 3), 1, "bf16"), PREF)


def test_masked_fill_one_hot_validation():
    p = MaskedFillPlan.select(MaskedFillDescriptor((4, 5), (5,), "f32", 1.5), PREF)
    assert p.sku().op == "where"
    MaskedFillBackwardPlan.select(MaskedFillDescriptor((4, 5), (4, 1), "bf16"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        MaskedFillDescriptor((4, 5), (3,), "f32", 0)
    with pytest.raises(bd.InvalidProblemError):  # not representable
        MaskedFillDescriptor((4, 5), (5,), "int8", 300)
    with pytest.raises(bd.InvalidProblemError):
        MaskedFillDescriptor((4, 5), (5,), "int32", 1.5)
    o = OneHotPlan.select(OneHotDescriptor((3, 4), 10), PREF)
    assert o.sku().template == "one_hot" and dict(o.sku().knobs)["itemsize"] == 8
    assert OneHotDescriptor((3, 4), 10).out_shape == (3, 4, 10)
    with pytest.raises(bd.InvalidProblemError):
        OneHotDescriptor((1,) * 8, 3)
    with pytest.raises(bd.InvalidProblemError):
        OneHotDescriptor((3,), -1)
    with pytest.raises(bd.UnsupportedError):
        OneHotDescriptor((3,), 4, dtype="complex128")
    assert OneHotPlan.select(OneHotDescriptor((3, 0), 4), PREF).is_empty()
    assert issubclass(NonzeroPlan, CompactPlan)


def test_one_bits():
    assert np.array(one_bits(bd.float32), np.uint32).view(np.float32) == 1.0
    assert np.array(one_bits(bd.float64), np.uint64).view(np.float64) == 1.0
    assert np.array(one_bits(bd.float16), np.uint16).view(np.float16) == 1.0
    assert np.array(one_bits(bd.bfloat16) << 16, np.uint32).view(np.float32) == 1.0
    assert np.array(one_bits(bd.complex64), np.uint64).view(np.complex64) == 1 + 0j


def test_host_arrays_rejected_before_launch():
    from baracuda_dsl.ops.indexing.indexing import IndexSelectArgs

    p = IndexSelectPlan.select(IndexSelectDescriptor((4, 3), 0, 2, "f32"), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(IndexSelectArgs(np.zeros((4, 3), np.float32), np.zeros(2, np.int64),
                              np.zeros((2, 3), np.float32)))


# ------------------------------------------------------------------------------ SKU choice
def test_row_geometry_choice():
    # embedding: vocab 128k × 4096 bf16, 16k tokens → 16-byte words, CTA per row
    g = _rows_geometry((131072, 4096), 0, 16384, (4096, 1), (4096, 1), 2, 0, 0)
    word, tpr, rows, rlen, st = g
    assert (word, tpr, rows, rlen) == (16, 128, 16384, 512) and st[1] == 512
    # index_select along the last axis: one element per row, thread per row
    g = _rows_geometry((64, 1000), 1, 7, (1000, 1), (7, 1), 4, 0, 0)
    assert g[0] == 4 and g[1] == 1 and g[2] == 64 * 7 and g[3] == 1
    # misaligned pointer: narrower word
    g = _rows_geometry((10, 64), 0, 3, (64, 1), (64, 1), 4, 8, 0)
    assert g[0] == 8 and g[3] == 32 and g[1] == 8
    # non-unit row stride (transposed x): element words
    g = _rows_geometry((10, 64), 0, 3, (1, 10), (64, 1), 4, 0, 0)
    assert g[0] == 4 and g[3] == 64 and g[1] == 32
    # outer dims that do not collapse → generic path
    assert _rows_geometry((3, 4, 5, 6), 2, 2, (1000, 100, 6, 1), (48, 12, 6, 1), 4, 0, 0) is None
    assert spec.tpr_for(1) == 1 and spec.tpr_for(5) == 8 and spec.tpr_for(129) == 128
    assert spec.tpr_for(10**6) == 128
    # grid split: tpr 1 → THREADS·ILP rows per group, one word per chunk
    assert spec.rows_grid(1, 1000, 3) == (-(-1000 // (spec.ROW_THREADS * spec.ROW_ILP)), 3)
    assert spec.rows_grid(128, 16384, 512) == (16384, 1)
    assert spec.rows_grid(8, 100, 20) == (-(-100 // (spec.ROW_THREADS // 8)), 1)
    assert spec.rows_grid(128, 3, 1500) == (3, 3)


def test_axis_geometry_choice():
    rank, wide, n, dims = _axis_geometry((64, 7), (1000, 0), (7, 1), (7, 1))
    assert (rank, wide, n) == (2, 0, 448)
    rank, wide, n, dims = _axis_geometry((2, 3, 4, 5, 6), (0, 1, 2, 3, 4), (1, 2, 3, 4, 5),
                                         (5, 4, 3, 2, 1))
    assert rank == 8 and wide == 0
    rank, wide, n, _ = _axis_geometry((2**16, 2**16), (2**16, 0), (2**16, 1), (2**16, 1))
    assert wide == 1 and rank == 8


def test_sku_space():
    from baracuda_dsl.ops import get_template

    assert len(get_template("index_rows").skus("sm90a")) == 40
    ga = get_template("gather_axis")
    assert len(ga.skus("sm90a")) == 270 and len(ga.skus("sm80")) == 260
    assert len(ga.skus("sm89")) == 260
    assert len(get_template("one_hot").skus("sm90a")) == 32
    # every plan-chosen knob set is in the space
    space = set(ga.skus("sm90a"))
    p = ScatterAddPlan.select(ScatterAxisDescriptor((4, 9), (4, 3), 1, "bf16", reduce="add"), PREF)
    assert p.sku().knobs in space
    rows = set(get_template("index_rows").skus("sm90a"))
    q = IndexSelectPlan.select(IndexSelectDescriptor((131072, 4096), 0, 16384, "bf16"), PREF)
    assert q.sku().knobs in rows


# ------------------------------------------------------------------------ numpy emulation
def _strided(base, shape, strides, off):
    isz = base.itemsize
    return np.lib.stride_tricks.as_strided(base[off:], shape, [s * isz for s in strides])


def _emulate_rows(xw, iv, ow, geo, nidx, m, xis):
    """The index_rows kernel in numpy on word buffers (views of the operands' bytes)."""
    word, tpr, rows, rlen, (xso, xsm, xsr, oso, osi, osr) = geo
    status = 0
    for row in range(rows):
        o, i = divmod(row, nidx)
        j = int(iv[i * xis])
        j = j + m if j < 0 else j
        ok = 0 <= j < m
        status |= not ok
        for r in range(rlen):
            ow[o * oso + i * osi + r * osr] = xw[o * xso + j * xsm + r * xsr] if ok else bytes(word)
    return status


@pytest.mark.parametrize("case", [
    ((6, 8), 0, (8, 1), 2, "f16"),             # widened rows
    ((3, 5, 4), 1, (20, 4, 1), 4, "f32"),      # outer × rows
    ((3, 5, 4), 2, (20, 4, 1), 3, "i64"),      # last axis, element words
    ((5, 4), 0, (1, 5), 3, "i8"),              # transposed x
])
def test_emulate_index_rows(case):
    shape, axis, xst, nidx, dt = case
    rng = np.random.default_rng(0)
    npdt = {"f16": np.float16, "f32": np.float32, "i64": np.int64, "i8": np.int8}[dt]
    m = shape[axis]
    size = sum((n - 1) * s for n, s in zip(shape, xst)) + 1
    isz = np.dtype(npdt).itemsize
    size = -(-size * isz // 16) * 16 // isz
    xbase = rng.integers(1, 100, size).astype(npdt)
    x = _strided(xbase, shape, xst, 0)
    idx = np.array([m - 1, -1, m + 2, -m - 1, 0][:nidx] + [1] * max(0, nidx - 5), np.int64)
    out_shape = shape[:axis] + (nidx,) + shape[axis + 1:]
    out = np.full(out_shape, 77, npdt)
    geo = _rows_geometry(shape, axis, nidx, xst, contiguous_strides(out_shape), x.itemsize, 0, 0)
    vw = np.dtype(f"V{geo[0]}")
    st = _emulate_rows(xbase.view(vw), idx, out.reshape(-1).view(vw), geo, nidx, m, 1)
    good = (idx >= -m) & (idx < m)
    ref = np.take(x, np.where(good, idx, 0), axis=axis)
    bad = [slice(None)] * len(shape)
    bad[axis] = ~good
    ref[tuple(bad)] = 0
    np.testing.assert_array_equal(out, ref)
    assert st == int((~good).any())


def _emulate_axis(mode, a_flat, i_flat, b_flat, rank, n, m, asa, dims):
    ext = dims[8 - rank:8]
    sa, si, sb = dims[16 - rank:16], dims[24 - rank:24], dims[32 - rank:32]
    status = 0
    for e in range(n):
        c = np.unravel_index(e, ext) if rank > 1 else (e,)
        oa = sum(int(ci) * s for ci, s in zip(c, sa))
        oi = sum(int(ci) * s for ci, s in zip(c, si))
        ob = sum(int(ci) * s for ci, s in zip(c, sb))
        j = int(i_flat[oi])
        j = j + m if j < 0 else j
        if 0 <= j < m:
            if mode == "gather":
                b_flat[ob] = a_flat[oa + j * asa]
            else:
                a_flat[oa + j * asa] += b_flat[ob]
        else:
            status = 1
            if mode == "gather":
                b_flat[ob] = 0
    return status


def test_emulate_gather_scatter_axis():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6, 5))
    idx = rng.integers(-6, 6, (3, 4, 5))
    idx[0, 0, 0] = 9                       # bad
    xt = np.ascontiguousarray(x.transpose(2, 0, 1)).transpose(1, 2, 0)  # strided x
    axis = 1
    out = np.zeros(idx.shape)
    a_str = tuple(0 if k == axis else s // 8 for k, s in enumerate(xt.strides))
    rank, wide, n, dims = _axis_geometry(idx.shape, a_str, tuple(s // 8 for s in idx.strides),
                                         contiguous_strides(idx.shape))
    base = xt.transpose(2, 0, 1).reshape(-1)
    st = _emulate_axis("gather", base, idx.reshape(-1), out.reshape(-1), rank, n, 6,
                       xt.strides[axis] // 8, dims)
    good = (idx >= -6) & (idx < 6)
    ref = np.take_along_axis(x[:3], np.where(good, idx, 0) % 6, axis=1)
    ref[~good] = 0
    np.testing.assert_array_equal(out, ref)
    assert st == 1
    # scatter_add into a dense out
    acc = np.zeros((4, 6, 5))
    src = rng.standard_normal(idx.shape)
    rank, wide, n, dims = _axis_geometry(idx.shape, (30, 0, 1), contiguous_strides(idx.shape),
                                         contiguous_strides(idx.shape))
    _emulate_axis("add", acc.reshape(-1), idx.reshape(-1), src.reshape(-1), rank, n, 6, 5, dims)
    ref = np.zeros((4, 6, 5))
    for c in np.ndindex(*idx.shape):
        j = idx[c]
        if -6 <= j < 6:
            ref[c[0], j % 6, c[2]] += src[c]
    np.testing.assert_allclose(acc, ref)


# --------------------------------------------------------------------------- cross compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    samples = [("index_rows", dict(itemsize=16, index="i64", tpr=128)),
               ("gather_axis", dict(mode="gather", itemsize=2, dtype="any", rank=2, wide=0,
                                    index="i64")),
               ("gather_axis", dict(mode="add", itemsize=4, dtype="f32", rank=2, wide=0,
                                    index="i64")),
               ("one_hot", dict(itemsize=8, index="i64", rank=2))]
    if arch is bd.ArchSku.SM90A:
        samples.append(("gather_axis", dict(mode="add", itemsize=2, dtype="bf16", rank=1,
                                            wide=0, index="i32")))
    for name, knobs in samples:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=600)
        assert len(cubin) > 1000
