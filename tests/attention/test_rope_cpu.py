"""Rotary embeddings without a GPU: descriptor / argument validation (one test per error class),
the SKU space, the host tables (:func:`rope_cos_sin` and every scaling variant against hand
computations and ``tests/_attention_ref.rope_tables``), the exact launches the plans make run
through a numpy mirror of the kernel over fake device memory (vector and scalar paths, in
place, varlen, position ids, per-sequence offsets, out-of-range positions, packed qkv views),
and a cross-compile sample per arch."""

import math

import numpy as np
import pytest

from baracuda_dsl import ArchSku, PlanPreference
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.errors import (BufferTooSmallError, DeviceMismatchError, InvalidProblemError,
                                 MisalignedOperandError, UnsupportedError)
from baracuda_dsl.ops.attention.rope import (RopeArgs, RopeBackwardArgs, RopeBackwardDescriptor,
                                             RopeBackwardPlan, RopeDescriptor, RopePlan,
                                             RopeScaling, rope_cos_sin)
from baracuda_dsl.ops.attention.specs import rope as spec
from baracuda_dsl.tensor import TensorView
from tests._attention_ref import rope as rope_ref, rope_backward as rope_bw_ref, rope_tables
from tests._attention_ref_rope import FakeHeap, numpy_dtype, rope_positions

PREF = PlanPreference(arch=ArchSku.SM90A)


# ------------------------------------------------------------------ numpy mirror of the kernel
def emulate(heap: FakeHeap, launch) -> None:
    """Run one recorded ``rope`` launch over ``heap`` as kernels/rope.py does: per work item,
    every load before any store; vector units assert the alignment the kernel assumes."""
    name, knobs, grid, args, _stream = launch
    assert name == "rope"
    (px, pout, pcos, psin, ppos, pst, flags, total, upr, urot, H, S, half, rdim, D, stab,
     xb, xs, xh, ob, os_, oh, cs, ss, pb, ps, off) = args
    T = numpy_dtype(as_dtype(knobs["dtype"]))
    TT = numpy_dtype(as_dtype(knobs["table"]))
    CT = np.float64 if knobs["dtype"] == "f64" else np.float32
    isz, tsz = T.itemsize, TT.itemsize
    V = 16 // isz
    is_half = knobs["layout"] == "half"
    TV = V if is_half else V // 2
    ta = min(16, TV * tsz)
    assert grid == (-(-total // spec.THREADS), 1, 1)
    vec = bool(flags & spec.VEC)
    sgn = CT(-1.0) if flags & spec.BACKWARD else CT(1.0)
    mode = (flags >> spec.POS_SHIFT) & 3
    for item in range(total):
        row, u = divmod(item, upr)
        tok, h = divmod(row, H)
        b, s = divmod(tok, S)
        xrow = b * xb + s * xs + h * xh
        orow = b * ob + s * os_ + h * oh
        if u >= urot:  # pass-through
            n = V if vec else 1
            e0 = rdim + (u - urot) * n
            if vec:
                assert (px + isz * (xrow + e0)) % 16 == 0 and (pout + isz * (orow + e0)) % 16 == 0
            vals = [heap.load(px + isz * (xrow + e0 + e), T) for e in range(n)]
            for e in range(n):
                heap.store(pout + isz * (orow + e0 + e), T, vals[e])
            continue
        p = s + off
        if mode == spec.POS_OFFSETS:
            p = s + int(heap.load(ppos + 4 * b * pb, np.int32))
        elif mode == spec.POS_IDS32:
            p = int(heap.load(ppos + 4 * (b * pb + s * ps), np.int32))
        elif mode == spec.POS_IDS64:
            p = int(heap.load(ppos + 8 * (b * pb + s * ps), np.int64))
        bad = not 0 <= p < stab
        if bad and flags & spec.HAS_STATUS:
            heap.store(pst, np.int32, 1)
        if vec:
            e0 = u * V
            if is_half:
                pairs = [(e0 + e, half + e0 + e, u * TV + e) for e in range(V)]
            else:
                pairs = [(e0 + 2 * k, e0 + 2 * k + 1, u * TV + k) for k in range(V // 2)]
            starts = [xrow + e0] + ([xrow + half + e0] if is_half else [])
            for st in starts:
                assert (px + isz * st) % 16 == 0
                assert (pout + isz * (st - xrow + orow)) % 16 == 0
            if not bad:
                assert (pcos + tsz * (p * cs + u * TV)) % ta == 0
                assert (psin + tsz * (p * ss + u * TV)) % ta == 0
        else:
            i1, i2 = (u, u + half) if is_half else (2 * u, 2 * u + 1)
            pairs = [(i1, i2, u)]
        res = []
        for i1, i2, ti in pairs:
            if bad:
                res.append((CT(np.nan), CT(np.nan)))
                continue
            x1 = CT(heap.load(px + isz * (xrow + i1), T))
            x2 = CT(heap.load(px + isz * (xrow + i2), T))
            c = CT(heap.load(pcos + tsz * (p * cs + ti), TT))
            sn = CT(heap.load(psin + tsz * (p * ss + ti), TT)) * sgn
            res.append((x1 * c - x2 * sn, x2 * c + x1 * sn))
        for (i1, i2, _), (y1, y2) in zip(pairs, res):
            heap.store(pout + isz * (orow + i1), T, T.type(y1))
            heap.store(pout + isz * (orow + i2), T, T.type(y2))


def run(plan, args, heap, launches):
    launches.clear()
    plan.run(args)
    for launch in launches:
        emulate(heap, launch)
    return list(launches)


def _tol(dt: str) -> float:
    return {"f16": 2e-3, "bf16": 1.6e-2, "f32": 1e-6, "f64": 1e-14}[dt]


def _tables(heap, stab, r, tdt, rng, shift=0):
    cos, sin = rope_cos_sin(stab, r) if r else (np.zeros((stab, 0)), np.zeros((stab, 0)))
    cv, ca = heap.array((stab, r // 2), tdt, shift=shift)
    sv, sa = heap.array((stab, r // 2), tdt, shift=shift)
    ca[...] = cos
    sa[...] = sin
    return cv, ca, sv, sa


def _check(out, ref, dt, what=""):
    o = np.asarray(out, np.float64)
    assert o.shape == ref.shape
    assert np.array_equal(np.isnan(o), np.isnan(ref)), what
    m = ~np.isnan(ref)
    err = np.abs(o[m] - ref[m])
    assert (err <= _tol(dt) * (np.abs(ref[m]) + 1.0)).all(), (what, err.max())


# --------------------------------------------------------------------------- validation
def _good(heap, shape=(2, 3, 2, 16), dt="f32", r=None, **kw):
    d = RopeDescriptor(shape, dt, rotary_dim=r, **kw)
    xv, xa = heap.array(shape, dt, fill=1.0)
    ov, _ = heap.array(shape, dt)
    rr = d.rotary_dim
    cv, _, sv, _ = _tables(heap, 8, rr, d.table_dtype, None)
    return d, RopeArgs(xv, cv, sv, ov)


def test_unsupported_error():
    """Unwired dtypes, table dtypes, layouts of the operands: UnsupportedError."""
    with pytest.raises(UnsupportedError):
        RopeDescriptor((2, 3, 2, 16), "int32")
    with pytest.raises(UnsupportedError):          # bf16 tables with f16 x: not wired
        RopeDescriptor((2, 3, 2, 16), "f16", table_dtype="bf16")
    with pytest.raises(UnsupportedError):
        RopeDescriptor((2, 3, 2, 2**31), "f32")
    heap = FakeHeap()
    d, a = _good(heap)
    plan = RopePlan.select(d, PREF)
    plan.can_implement(a)
    xv, _ = heap.array((2, 3, 2, 32), "f32")
    strided = xv.with_shape((2, 3, 2, 16), (192, 64, 32, 2))   # non-unit last stride
    with pytest.raises(UnsupportedError):
        plan.can_implement(RopeArgs(strided, a.cos, a.sin, a.out))
    pid, _ = heap.array((2, 3), "f32")
    with pytest.raises(UnsupportedError):
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, a.out, position_ids=pid))
    offs, _ = heap.array((2,), "i64")
    with pytest.raises(UnsupportedError):
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, a.out, seqlen_offset=offs))
    c64, _ = heap.array((8, 8), "f64")
    with pytest.raises(UnsupportedError):                        # table dtype != descriptor's
        plan.can_implement(RopeArgs(a.x, c64, a.sin, a.out))


def test_invalid_problem_error():
    for bad in (dict(rotary_dim=3), dict(rotary_dim=18), dict(rotary_dim=-2),
                dict(layout="neox"), dict(rotary_dim=4.0)):
        with pytest.raises(InvalidProblemError):
            RopeDescriptor((2, 3, 2, 16), "f32", **bad)
    for shape in ((3, 16), (1, 2, 3, 4, 16), (2, -1, 2, 16)):
        with pytest.raises(InvalidProblemError):
            RopeDescriptor(shape)
    with pytest.raises(InvalidProblemError):
        RopePlan.select(RopeBackwardDescriptor((2, 3, 2, 16)), PREF)
    d = RopeDescriptor((2, 3, 2, 16), "f64")
    assert d.rotary_dim == 16 and d.table_dtype.name == "float64" and not d.varlen
    assert RopeDescriptor((5, 2, 16), "bf16").table_dtype.name == "float32"
    assert RopeDescriptor((5, 2, 16), "bf16").varlen
    heap = FakeHeap()
    d, a = _good(heap)
    plan = RopePlan.select(d, PREF)
    bad_cos, _ = heap.array((8, 4), "f32")
    with pytest.raises(InvalidProblemError):                     # (S_tab, r/2) mismatch
        plan.can_implement(RopeArgs(a.x, bad_cos, a.sin, a.out))
    short, _ = heap.array((7, 8), "f32")
    with pytest.raises(InvalidProblemError):                     # cos / sin lengths differ
        plan.can_implement(RopeArgs(a.x, a.cos, short, a.out))
    with pytest.raises(InvalidProblemError):                     # 3 + 6 > 8 table rows
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, a.out, seqlen_offset=6))
    with pytest.raises(InvalidProblemError):
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, a.out, seqlen_offset=-1))
    with pytest.raises(InvalidProblemError):
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, a.out, seqlen_offset=1.0))
    pid, _ = heap.array((2, 3), "i32")
    with pytest.raises(InvalidProblemError):                     # ids and an offset
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, a.out, position_ids=pid,
                                    seqlen_offset=2))
    pid_bad, _ = heap.array((3, 2), "i32")
    with pytest.raises(InvalidProblemError):
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, a.out, position_ids=pid_bad))
    pid_one, _ = heap.array((1, 3), "i32")                       # one row for every sequence
    plan.can_implement(RopeArgs(a.x, a.cos, a.sin, a.out, position_ids=pid_one))
    offs, _ = heap.array((3,), "i32")
    with pytest.raises(InvalidProblemError):
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, a.out, seqlen_offset=offs))
    # out partially overlapping x (shifted by one row), out overlapping the tables
    shifted = TensorView(a.x.ptr + 64, a.x.shape, a.x.strides, a.x.dtype, 0)
    with pytest.raises(InvalidProblemError):
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, shifted))
    as_table = TensorView(a.cos.ptr, d.shape, a.x.strides, a.x.dtype, 0)
    with pytest.raises(InvalidProblemError):
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, as_table))
    with pytest.raises(InvalidProblemError):                     # a broadcast output
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, a.x.with_shape(d.shape,
                                                                      (0, 32, 16, 1))))
    st, _ = heap.array((0,), "i32")
    with pytest.raises(InvalidProblemError):
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, a.out, status=st))
    # varlen needs position ids
    dv = RopeDescriptor((6, 2, 16), "f32")
    xv, _ = heap.array((6, 2, 16), "f32")
    ov, _ = heap.array((6, 2, 16), "f32")
    with pytest.raises(InvalidProblemError):
        RopePlan.select(dv, PREF).can_implement(RopeArgs(xv, a.cos, a.sin, ov))


def test_device_mismatch_error():
    heap = FakeHeap()
    d, a = _good(heap, dt="f16")
    plan = RopePlan.select(d, PREF)
    other = TensorView(a.cos.ptr, a.cos.shape, a.cos.strides, a.cos.dtype, 1)
    with pytest.raises(DeviceMismatchError):
        plan.can_implement(RopeArgs(a.x, other, a.sin, a.out))
    with pytest.raises(DeviceMismatchError):
        plan.can_implement(RopeArgs(a.x, a.cos, a.sin, TensorView(
            a.out.ptr, a.out.shape, a.out.strides, a.out.dtype, 1)))


def test_misaligned_operand_error():
    heap = FakeHeap()
    d, a = _good(heap, dt="f16")
    plan = RopePlan.select(d, PREF)
    odd = TensorView(a.x.ptr + 1, a.x.shape, a.x.strides, a.x.dtype, 0)
    with pytest.raises(MisalignedOperandError):
        plan.can_implement(RopeArgs(odd, a.cos, a.sin, a.out))


def test_buffer_too_small_error():
    heap = FakeHeap()
    d, a = _good(heap, dt="f16")
    plan = RopePlan.select(d, PREF)
    small = TensorView(a.x.ptr, a.x.shape, a.x.strides, a.x.dtype, 0, capacity_bytes=64)
    with pytest.raises(BufferTooSmallError):
        plan.can_implement(RopeArgs(small, a.cos, a.sin, a.out))


def test_sku_space_and_choice():
    from baracuda_dsl.ops import get_template

    t = get_template("rope")
    for arch in ("sm80", "sm89", "sm90a"):
        assert len(t.skus(arch)) == 14
    for dt in ("f16", "bf16", "f32", "f64"):
        for lay in ("half", "interleaved"):
            for tb in spec.TABLES[dt]:
                p = RopePlan.select(RopeDescriptor((1, 2, 1, 8), dt, layout=lay,
                                                   table_dtype=tb), PREF)
                assert p.sku().knobs in t.skus("sm90a")
                assert p.sku().template == "rope" and p.workspace_size() == 0
                q = RopeBackwardPlan.select(RopeBackwardDescriptor((1, 2, 1, 8), dt, layout=lay,
                                                                   table_dtype=tb), PREF)
                assert q.sku().knobs == p.sku().knobs and q.sku().op == "rope_backward"
    assert RopePlan.select(RopeDescriptor((2, 0, 3, 8)), PREF).is_empty()
    assert RopePlan.select(RopeDescriptor((0, 3, 8)), PREF).is_empty()


# --------------------------------------------------------------- emulated launches vs reference
CASES = [
    # shape, dtype, rotary_dim, layout, table dtype
    ((2, 5, 3, 64), "bf16", None, "half", None),
    ((2, 5, 3, 64), "f16", 32, "interleaved", "f16"),
    ((1, 17, 2, 32), "f32", 24, "half", None),
    ((2, 3, 2, 16), "f64", 8, "interleaved", "f32"),
    ((2, 4, 3, 10), "f32", 6, "half", None),          # odd vector counts: scalar path
    ((1, 1, 1, 8), "f16", 0, "half", None),           # rotary_dim 0: a copy
]


@pytest.mark.parametrize("shape,dt,r,layout,tdt", CASES)
@pytest.mark.parametrize("backward", [False, True])
def test_emulated_matches_reference(shape, dt, r, layout, tdt, backward, launches):
    rng = np.random.default_rng(len(shape) + shape[-1])
    heap = FakeHeap()
    desc_t = RopeBackwardDescriptor if backward else RopeDescriptor
    d = desc_t(shape, dt, rotary_dim=r, layout=layout, table_dtype=tdt)
    rr = d.rotary_dim
    xv, xa = heap.array(shape, dt)
    xa[...] = rng.standard_normal(shape)
    ov, oa = heap.array(shape, dt, fill=np.nan)
    stab = shape[1] + 3
    cv, ca, sv, sa = _tables(heap, stab, rr, d.table_dtype, rng)
    plan = (RopeBackwardPlan if backward else RopePlan).select(d, PREF)
    args = (RopeBackwardArgs if backward else RopeArgs)(xv, cv, sv, ov, seqlen_offset=2)
    launched = run(plan, args, heap, launches)
    pos = rope_positions(shape[0], shape[1], seqlen_offset=2)
    fn = rope_bw_ref if backward else rope_ref
    ref = fn(np.asarray(xa, np.float64), np.asarray(ca, np.float64), np.asarray(sa, np.float64),
             rotary_dim=rr, layout=layout, position_ids=pos)
    _check(oa, ref, dt, (shape, dt, layout))
    assert len(launched) == 1 and launched[0][1] == dict(
        (k, v) for k, v in plan.sku().knobs)
    flags = launched[0][3][6]
    assert bool(flags & spec.BACKWARD) == backward
    v = 16 // as_dtype(dt).itemsize
    vec_expected = shape[-1] % v == 0 and (rr // 2 if layout == "half" else rr) % v == 0
    assert bool(flags & spec.VEC) == vec_expected, flags


def test_in_place_and_packed_qkv(launches):
    """q and k as slices of one packed qkv (B, S, 3, H, D) tensor, rotated in place; v and the
    pass-through features of q / k untouched."""
    rng = np.random.default_rng(3)
    heap = FakeHeap()
    b, s, h, dd, r = 2, 7, 2, 32, 16
    qv, qkv = heap.array((b, s, 3, h, dd), "bf16")
    qkv[...] = rng.standard_normal(qkv.shape)
    before = np.asarray(qkv, np.float64).copy()
    cv, ca, sv, sa = _tables(heap, 16, r, "f32", rng)
    pid_v, pid = heap.array((b, s), "i64")
    pid[...] = rng.integers(0, 16, (b, s))
    plan = RopePlan.select(RopeDescriptor((b, s, h, dd), "bf16", rotary_dim=r), PREF)
    for part in (0, 1):
        view = heap.view(qkv[:, :, part], "bf16")
        launched = run(plan, RopeArgs(view, cv, sv, view, position_ids=pid_v), heap, launches)
        assert launched[0][3][8] == launched[0][3][9]           # upr == urot: no pass units
        assert launched[0][3][6] & spec.VEC
        assert (launched[0][3][6] >> spec.POS_SHIFT) & 3 == spec.POS_IDS64
    got = np.asarray(qkv, np.float64)
    for part in (0, 1):
        ref = rope_ref(before[:, :, part], np.asarray(ca, np.float64),
                       np.asarray(sa, np.float64), rotary_dim=r, position_ids=pid)
        _check(got[:, :, part], ref, "bf16")
        assert np.array_equal(got[:, :, part, :, r:], before[:, :, part, :, r:])
    assert np.array_equal(got[:, :, 2], before[:, :, 2])


def test_varlen_position_ids_and_offsets(launches):
    rng = np.random.default_rng(4)
    heap = FakeHeap()
    t, h, dd = 9, 3, 16
    xv, xa = heap.array((t, h, dd), "f16")
    xa[...] = rng.standard_normal(xa.shape)
    ov, oa = heap.array((t, h, dd), "f16", fill=np.nan)
    cv, ca, sv, sa = _tables(heap, 12, dd, "f32", rng)
    pid_v, pid = heap.array((t,), "i32")
    pid[...] = [0, 1, 2, 0, 1, 0, 1, 2, 11]
    plan = RopePlan.select(RopeDescriptor((t, h, dd), "f16", layout="interleaved"), PREF)
    launched = run(plan, RopeArgs(xv, cv, sv, ov, position_ids=pid_v), heap, launches)
    assert (launched[0][3][6] >> spec.POS_SHIFT) & 3 == spec.POS_IDS32
    ref = rope_ref(np.asarray(xa, np.float64), np.asarray(ca, np.float64),
                   np.asarray(sa, np.float64), layout="interleaved", position_ids=pid)
    _check(oa, ref, "f16")
    # per-sequence offsets (decoding): (B,) int32 device tensor
    b, s = 3, 2
    xv, xa = heap.array((b, s, h, dd), "f32")
    xa[...] = rng.standard_normal(xa.shape)
    ov, oa = heap.array((b, s, h, dd), "f32", fill=np.nan)
    offs_v, offs = heap.array((b,), "i32")
    offs[...] = [0, 5, 10]
    cv, ca, sv, sa = _tables(heap, 12, dd, "f32", rng)
    plan = RopePlan.select(RopeDescriptor((b, s, h, dd), "f32"), PREF)
    launched = run(plan, RopeArgs(xv, cv, sv, ov, seqlen_offset=offs_v), heap, launches)
    assert (launched[0][3][6] >> spec.POS_SHIFT) & 3 == spec.POS_OFFSETS
    ref = rope_ref(np.asarray(xa, np.float64), np.asarray(ca, np.float64),
                   np.asarray(sa, np.float64),
                   position_ids=rope_positions(b, s, seqlen_offset=offs))
    _check(oa, ref, "f32")
    # (1, S) position ids: one row for every sequence
    pid_v, pid = heap.array((1, s), "i64")
    pid[...] = [[7, 2]]
    oa[...] = np.nan
    launched = run(plan, RopeArgs(xv, cv, sv, ov, position_ids=pid_v), heap, launches)
    assert launched[0][3][24] == 0                  # pb: the batch stride of the ids
    ref = rope_ref(np.asarray(xa, np.float64), np.asarray(ca, np.float64),
                   np.asarray(sa, np.float64), position_ids=np.repeat(pid, b, axis=0))
    _check(oa, ref, "f32")


def test_out_of_range_positions_nan_rows_and_status(launches):
    rng = np.random.default_rng(5)
    heap = FakeHeap()
    b, s, h, dd, r = 2, 3, 2, 16, 8
    xv, xa = heap.array((b, s, h, dd), "f32")
    xa[...] = rng.standard_normal(xa.shape)
    ov, oa = heap.array((b, s, h, dd), "f32", fill=7.0)
    cv, ca, sv, sa = _tables(heap, 4, r, "f32", rng)
    pid_v, pid = heap.array((b, s), "i64")
    pid[...] = [[0, 4, 1], [-1, 3, 2**40]]
    st_v, st = heap.array((1,), "i32", fill=0)
    plan = RopePlan.select(RopeDescriptor((b, s, h, dd), "f32", rotary_dim=r), PREF)
    run(plan, RopeArgs(xv, cv, sv, ov, position_ids=pid_v, status=st_v), heap, launches)
    assert st[0] == 1
    good = (pid >= 0) & (pid < 4)
    ref = rope_ref(np.asarray(xa, np.float64), np.asarray(ca, np.float64),
                   np.asarray(sa, np.float64), rotary_dim=r,
                   position_ids=np.where(good, pid, 0))
    ref[..., :r] = np.where(good[:, :, None, None], ref[..., :r], np.nan)
    _check(oa, ref, "f32")
    # all positions valid: status stays 0
    st[0] = 0
    pid[...] = [[0, 1, 2], [3, 2, 1]]
    run(plan, RopeArgs(xv, cv, sv, ov, position_ids=pid_v, status=st_v), heap, launches)
    assert st[0] == 0 and not np.isnan(np.asarray(oa, np.float64)).any()


def test_misaligned_tables_take_scalar_path(launches):
    rng = np.random.default_rng(6)
    heap = FakeHeap()
    shape = (1, 4, 2, 32)
    xv, xa = heap.array(shape, "bf16")
    xa[...] = rng.standard_normal(shape)
    ov, oa = heap.array(shape, "bf16", fill=np.nan)
    cv, ca, sv, sa = _tables(heap, 4, 32, "f32", rng, shift=4)    # 4-byte aligned tables
    plan = RopePlan.select(RopeDescriptor(shape, "bf16"), PREF)
    launched = run(plan, RopeArgs(xv, cv, sv, ov), heap, launches)
    assert not launched[0][3][6] & spec.VEC and launched[0][3][9] == 16
    ref = rope_ref(np.asarray(xa, np.float64), np.asarray(ca, np.float64),
                   np.asarray(sa, np.float64), position_ids=rope_positions(1, 4))
    _check(oa, ref, "bf16")
    # x 2 bytes off a 16-byte boundary; then a head stride that is not a multiple of 8
    cv, ca, sv, sa = _tables(heap, 4, 32, "f32", rng)
    for kw in (dict(shift=2), dict(strides=(4 * 2 * 36, 2 * 36, 36, 1))):
        xv, xa = heap.array(shape, "f16", **kw)
        xa[...] = rng.standard_normal(shape)
        ov, oa = heap.array(shape, "f16", fill=np.nan)
        plan = RopePlan.select(RopeDescriptor(shape, "f16"), PREF)
        launched = run(plan, RopeArgs(xv, cv, sv, ov), heap, launches)
        assert not launched[0][3][6] & spec.VEC, kw
        ref = rope_ref(np.asarray(xa, np.float64), np.asarray(ca, np.float64),
                       np.asarray(sa, np.float64), position_ids=rope_positions(1, 4))
        _check(oa, ref, "f16")


def test_empty_problems_launch_nothing(launches):
    heap = FakeHeap()
    for shape in ((0, 3, 2, 8), (2, 0, 2, 8), (2, 3, 0, 8), (4, 0, 8)):
        xv, _ = heap.array(shape, "f32")
        ov, _ = heap.array(shape, "f32")
        cv, _, sv, _ = _tables(heap, 4, 8, "f32", None)
        pid = heap.array(shape[:1], "i32")[0] if len(shape) == 3 else None
        RopePlan.select(RopeDescriptor(shape), PREF).run(
            RopeArgs(xv, cv, sv, ov, position_ids=pid))
    assert launches == []


# ----------------------------------------------------------------------------- host tables
def test_rope_cos_sin_none_and_linear_match_reference():
    for r in (2, 8, 64):
        c, s = rope_cos_sin(33, r, dtype=np.float64)
        rc, rs = rope_tables(np.arange(33), r)
        assert c.shape == (33, r // 2) and np.allclose(c, rc, rtol=0, atol=1e-15)
        assert np.allclose(s, rs, rtol=0, atol=1e-15)
        c, s = rope_cos_sin(33, r, base=500.0, scaling=RopeScaling("linear", factor=4.0),
                            dtype="float64")
        rc, rs = rope_tables(np.arange(33), r, base=500.0, linear_scale=4.0)
        assert np.allclose(c, rc, atol=1e-15) and np.allclose(s, rs, atol=1e-15)
    pos = [3, 0, 17]
    c, s = rope_cos_sin(pos, 4)
    assert c.dtype == np.float32 and c.shape == (3, 2)
    assert abs(float(c[0, 1]) - math.cos(3 * 10000 ** -0.5)) < 1e-7
    assert rope_cos_sin(5, 4, dtype="bfloat16")[0].dtype.name == "bfloat16"
    assert rope_cos_sin(5, 4, dtype="f16")[1].dtype == np.float16
    assert rope_cos_sin(0, 4)[0].shape == (0, 2)


def test_rope_cos_sin_dynamic_ntk_by_hand():
    r, base, omp, f = 8, 10000.0, 16, 2.0
    short = rope_cos_sin(16, r, scaling=RopeScaling("dynamic_ntk", f, omp), dtype=np.float64)
    plain = rope_cos_sin(16, r, dtype=np.float64)
    assert np.array_equal(short[0], plain[0])         # L <= original: unchanged
    c, s = rope_cos_sin(40, r, scaling=RopeScaling("dynamic_ntk", f, omp), dtype=np.float64)
    grown = base * (f * 40 / omp - (f - 1)) ** (r / (r - 2))
    for p in (0, 7, 39):
        for i in range(r // 2):
            ang = p * grown ** (-2 * i / r)
            assert abs(c[p, i] - math.cos(ang)) < 1e-12 and abs(s[p, i] - math.sin(ang)) < 1e-12


def test_rope_cos_sin_llama3_by_hand():
    r, base = 128, 500000.0
    sc = RopeScaling("llama3", factor=8.0, original_max_position=8192, low_freq_factor=1.0,
                     high_freq_factor=4.0)
    c, s = rope_cos_sin([1, 1000], r, base=base, scaling=sc, dtype=np.float64)
    for i in range(r // 2):
        theta = base ** (-2 * i / r)
        wl = 2 * math.pi / theta
        if wl < 8192 / 4.0:
            th = theta
        elif wl > 8192 / 1.0:
            th = theta / 8.0
        else:
            w = (8192 / wl - 1.0) / (4.0 - 1.0)
            th = (1 - w) * theta / 8.0 + w * theta
        for row, p in enumerate((1, 1000)):
            assert abs(c[row, i] - math.cos(p * th)) < 1e-12
            assert abs(s[row, i] - math.sin(p * th)) < 1e-12
    # the three regimes all occur at this size
    wls = 2 * math.pi / base ** (-np.arange(0, r, 2) / r)
    assert (wls < 2048).any() and (wls > 8192).any() and ((wls >= 2048) & (wls <= 8192)).any()


def test_rope_scaling_validation():
    with pytest.raises(InvalidProblemError):
        RopeScaling("yarn")
    with pytest.raises(InvalidProblemError):
        RopeScaling("linear", factor=0.0)
    with pytest.raises(InvalidProblemError):
        RopeScaling("dynamic_ntk", 2.0)                  # needs original_max_position
    with pytest.raises(InvalidProblemError):
        RopeScaling("llama3", 8.0, 8192, low_freq_factor=4.0, high_freq_factor=1.0)
    with pytest.raises(InvalidProblemError):
        rope_cos_sin(4, 3)
    with pytest.raises(InvalidProblemError):
        rope_cos_sin(-1, 4)
    with pytest.raises(InvalidProblemError):
        rope_cos_sin(4, 4, base=-1.0)
    with pytest.raises(UnsupportedError):
        rope_cos_sin(4, 4, dtype="int32")
    assert RopeScaling() == RopeScaling("none", 1.0)


# ----------------------------------------------------------------------------- cross-compile
SAMPLES = [
    dict(dtype="bf16", table="f32", layout="half"),
    dict(dtype="f16", table="f16", layout="interleaved"),
    dict(dtype="f64", table="f32", layout="interleaved"),
]


@pytest.mark.parametrize("arch", [ArchSku.SM80, ArchSku.SM89, ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")

    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku
    from baracuda_dsl.ops import get_template

    for knobs in SAMPLES:
        assert freeze_knobs(knobs) in get_template("rope").skus(arch.value), knobs
        cubin, meta = compile_sku("rope", freeze_knobs(knobs), arch, timeout=600)
        assert cubin[:4] == b"\x7fELF" and meta["threads"] == spec.THREADS
