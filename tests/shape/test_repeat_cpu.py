"""Repeat / strided copy / repeat backward without a GPU: descriptor validation, SKU enumeration,
the host-side geometry (collapse + word widening) checked by emulating the kernel's index math in
numpy against ``np.tile``, and cross-compiling the templates for sm80 / sm89 / sm90a."""

import itertools

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.shape.repeat import (RepeatBackwardDescriptor, RepeatBackwardPlan,
                                           RepeatDescriptor, RepeatPlan, StridedCopyDescriptor,
                                           StridedCopyPlan, _bw_geometry, _copy_geometry,
                                           repeat_out_shape)
from baracuda_dsl.ops.shape.specs.repeat import CopyKnobs

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def test_select_validation():
    p = RepeatPlan.select(RepeatDescriptor((4, 6), (2, 3), "bf16"), PREF)
    assert p.sku().template == "strided_copy" and p.workspace_size() == 0
    assert p.precision_guarantee().deterministic
    assert RepeatDescriptor((4, 6), (5, 2, 3)).out_shape == (5, 8, 18)
    for dt in ("bool", "int8", "uint64", "complex64", "complex128", "float8_e4m3", "bf16"):
        RepeatPlan.select(RepeatDescriptor((3,), (2,), dt), PREF)
    with pytest.raises(bd.InvalidProblemError):  # fewer repeats than dims
        RepeatPlan.select(RepeatDescriptor((4, 6), (2,)), PREF)
    with pytest.raises(bd.InvalidProblemError):
        RepeatPlan.select(RepeatDescriptor((4, 6), (2, -1)), PREF)
    with pytest.raises(bd.InvalidProblemError):
        RepeatPlan.select(RepeatDescriptor((4, 6), (1,) * 9), PREF)
    with pytest.raises(bd.InvalidProblemError):
        RepeatPlan.select(RepeatDescriptor((1,) * 9, (1,) * 9), PREF)
    with pytest.raises(bd.InvalidProblemError):
        RepeatPlan.select(RepeatDescriptor((4, -6), (1, 1)), PREF)
    assert RepeatPlan.select(RepeatDescriptor((0, 6), (2, 2)), PREF).is_empty()
    assert RepeatPlan.select(RepeatDescriptor((3, 6), (0, 2)), PREF).is_empty()
    with pytest.raises(bd.UnsupportedError):
        RepeatBackwardDescriptor((4,), (2,), "int32")
    q = RepeatBackwardPlan.select(RepeatBackwardDescriptor((4, 6), (2, 3), "f16"), PREF)
    assert q.precision_guarantee().accumulator == bd.float32 and q.workspace_size() == 0
    with pytest.raises(bd.InvalidProblemError):
        RepeatBackwardPlan.select(RepeatBackwardDescriptor((4, 6), (3,), "f32"), PREF)
    s = StridedCopyPlan.select(StridedCopyDescriptor((7, 5), "complex128"), PREF)
    assert dict(s.sku().knobs)["itemsize"] == 16
    with pytest.raises(bd.InvalidProblemError):
        StridedCopyPlan.select(StridedCopyDescriptor((1,) * 9, "f32"), PREF)


def test_host_arrays_rejected_before_launch():
    p = RepeatPlan.select(RepeatDescriptor((4,), (2,), "f32"), PREF)
    from baracuda_dsl.ops.shape.repeat import RepeatArgs

    with pytest.raises(bd.DeviceMismatchError):
        p.run(RepeatArgs(np.zeros(4, np.float32), np.zeros(8, np.float32)))


def test_sku_space():
    from baracuda_dsl.ops import get_template

    copy = get_template("strided_copy").skus()
    bw = get_template("repeat_bw").skus()
    assert len(copy) == 5 * 5 * 2 and len(bw) == 4 * 4
    for shape, reps in [((4, 6), (2, 3)), ((1,), (1,)), ((2,) * 8, (2,) * 8), ((0, 3), (2, 2))]:
        knobs = RepeatPlan.select(RepeatDescriptor(shape, reps, "f16"), PREF).sku().knobs
        assert knobs in copy
        knobs = RepeatBackwardPlan.select(RepeatBackwardDescriptor(shape, reps, "f16"), PREF).sku().knobs
        assert knobs in bw


# ------------------------------------------------------------------ kernel emulation in numpy
def _emulate_copy(geo, words, base_word):
    o, e, s = geo.dims[0:8], geo.dims[8:16], geo.dims[16:24]
    r = geo.knobs.rank
    assert all(x == 1 for x in o[:8 - r]), "unused dims must be 1"
    idx = np.arange(geo.n)
    coords = np.unravel_index(idx, o[8 - r:]) if geo.n else [idx] * r
    off = np.zeros(geo.n, np.int64)
    for d in range(r):
        c = coords[d] % e[8 - r + d] if r == 8 else coords[d]
        off += c * s[8 - r + d]
    if geo.knobs.wide == 0:
        assert geo.n < 2**31 and (np.abs(off).max(initial=0) < 2**31)
    return words[base_word + off]


def _case(rng, dtype, shape, reps, step_signs, pad_front):
    """A strided view of a host buffer + repeat; returns emulated and expected outputs."""
    isz = np.dtype(dtype).itemsize
    big = tuple(n * abs(st) + 2 for n, st in zip(shape, step_signs))
    buf = np.zeros(pad_front * 16 // isz + int(np.prod(big)) + 64, dtype)
    buf[:] = rng.integers(0, 100, buf.size).astype(dtype)
    start = pad_front * 16 // isz + (1 if rng.random() < 0.5 else 0)
    base = buf[start:start + int(np.prod(big))].reshape(big)
    sl = tuple(slice(None, None, st) if st > 0 else slice(n * -st - 1, None, st)
               for n, st in zip(shape, step_signs))
    x = base[sl + (Ellipsis,)][tuple(slice(0, n) for n in shape) + (Ellipsis,)]
    assert x.shape == tuple(shape)
    off_el = (x.__array_interface__["data"][0] - buf.__array_interface__["data"][0]) // isz
    strides = tuple(st // isz for st in x.strides)
    geo = _copy_geometry(tuple(shape), strides, tuple(reps), isz, (off_el * isz) % 16, 0)
    w = geo.width
    assert (off_el * isz) % w == 0
    words = buf.view(np.dtype(f"V{w}")) if w != isz else buf
    got = _emulate_copy(geo, words, off_el * isz // w)
    got = np.frombuffer(got.tobytes(), dtype).reshape(repeat_out_shape(shape, reps))
    return got, np.tile(x, reps)


@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.float32, np.int64, np.complex128])
def test_copy_geometry_emulated(dtype):
    rng = np.random.default_rng(0)
    cases = [((7,), (3,)), ((4, 6), (2, 3)), ((3, 1, 5), (1, 4, 1)), ((2, 3), (2, 1, 1, 2)),
             ((33,), (1,)), ((0, 3), (2, 2)), ((2, 2, 2, 2, 2), (2, 1, 2, 1, 2)),
             ((2,) * 8, (2,) * 8), ((8, 16), (1, 1)), ((1,), (1,)), ((), (3, 2))]
    for shape, reps in cases:
        for signs in itertools.islice(itertools.product((1, -1, 2), repeat=len(shape)), 6):
            got, ref = _case(rng, dtype, shape, reps, signs, pad_front=1)
            np.testing.assert_array_equal(got, ref)


def test_widening_and_rank():
    # contiguous bf16 rows repeated along a new leading dim: one rank-2 16-byte-word copy
    g = _copy_geometry((4, 64), (64, 1), (3, 1, 1), 2, 0, 0)
    assert g.knobs == CopyKnobs(itemsize=16, rank=2, wide=0) or g.knobs.rank <= 2
    assert g.width == 16
    # misaligned source: no widening
    assert _copy_geometry((4, 64), (64, 1), (3, 1, 1), 2, 2, 0).width == 2
    # rank-8 input repeated everywhere: broadcast form is rank 16 → generic mod SKU
    assert _copy_geometry((2,) * 8, (1,) * 8, (2,) * 8, 4, 0, 0).knobs.rank == 8
    # > 2^31 elements → Int64 index math
    assert _copy_geometry((2**16, 2**16), (2**16, 1), (1, 1), 1, 1, 0).knobs.wide == 1


def _emulate_bw(shape, reps, dy):
    rank, dims = _bw_geometry(tuple(shape), tuple(reps), tuple(s // dy.itemsize for s in dy.strides))
    k, ks, r, rs = dims[0:8], dims[8:16], dims[16:24], dims[24:32]
    n = int(np.prod(shape))
    base = dy
    while base.base is not None:
        base = base.base
    words = base.reshape(-1) if base.flags.c_contiguous else None
    off0 = (dy.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // dy.itemsize
    out = np.zeros(n, np.float64)
    idx = np.arange(n)
    coords = np.unravel_index(idx, k[8 - rank:]) if n else [idx] * rank
    off = np.full(n, off0, np.int64)
    for d in range(rank):
        off += coords[d] * ks[8 - rank + d]
    for t in itertools.product(*[range(x) for x in r]):
        out += words[off + sum(a * b for a, b in zip(t, rs))]
    return out.reshape(shape)


def test_bw_geometry_emulated():
    rng = np.random.default_rng(1)
    for shape, reps in [((4, 6), (2, 3)), ((5,), (3, 2)), ((3, 1, 4), (1, 5, 2)), ((7,), (1,)),
                        ((2, 3), (0, 2)), ((), (4,))]:
        out_shape = repeat_out_shape(shape, reps)
        big = np.asarray(rng.standard_normal([n * 2 + 1 for n in out_shape]))
        dy = big[tuple(slice(None, None, -2) for _ in out_shape)][tuple(slice(0, n) for n in out_shape)]
        assert dy.shape == out_shape
        ref = np.zeros(shape, np.float64)
        pad = (1,) * (len(reps) - len(shape)) + tuple(shape)
        for t in itertools.product(*[range(r) for r in reps]):
            sl = tuple(slice(a * n, (a + 1) * n) for a, n in zip(t, pad))
            ref += dy[sl].reshape(shape)
        np.testing.assert_allclose(_emulate_bw(shape, reps, dy), ref, rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs in [("strided_copy", dict(itemsize=16, rank=2, wide=0)),
                        ("strided_copy", dict(itemsize=1, rank=8, wide=1)),
                        ("repeat_bw", dict(dtype="bf16", rank=2))]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == 256
