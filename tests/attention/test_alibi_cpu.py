"""ALiBi without a GPU: validation (one test per error class), the SKU spaces, the slope
sequence, the backward's chunking and workspace, the exact launches run through numpy mirrors of
the kernels over fake device memory (forward and both backward modes, vector and scalar paths,
both alignments, per-head and per-batch slopes), and a cross-compile sample per arch."""

import numpy as np
import pytest

from baracuda_dsl import ArchSku, PlanPreference
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.errors import (BufferTooSmallError, DeviceMismatchError, InvalidProblemError,
                                 MisalignedOperandError, UnsupportedError,
                                 WorkspaceTooSmallError)
from baracuda_dsl.ops.attention.alibi import (AlibiArgs, AlibiBackwardArgs,
                                              AlibiBackwardDescriptor, AlibiBackwardPlan,
                                              AlibiDescriptor, AlibiPlan, alibi_slopes)
from baracuda_dsl.ops.attention.specs import alibi as spec
from baracuda_dsl.tensor import TensorView
from baracuda_dsl.vocabulary import Workspace
from tests._attention_ref import _bias as bias_ref
from tests._attention_ref_rope import FakeHeap, alibi_dslopes, alibi_distance, numpy_dtype

PREF = PlanPreference(arch=ArchSku.SM90A)


# ------------------------------------------------------------------ numpy mirrors of the kernels
def emulate_fw(heap, launch):
    name, knobs, grid, args, _ = launch
    assert name == "alibi_fw"
    ps, pout, flags, total, upr, H, Sq, Sk, off, sb, sh, ob, oh, oi, oj = args
    T = numpy_dtype(as_dtype(knobs["dtype"]))
    CT = np.float64 if knobs["dtype"] == "f64" else np.float32
    isz = T.itemsize
    V = 16 // isz
    vec = bool(flags & spec.VEC)
    assert grid == (-(-total // spec.FW_THREADS), 1, 1)
    for item in range(total):
        row, u = divmod(item, upr)
        bh, i = divmod(row, Sq)
        b, h = divmod(bh, H)
        slope = CT(heap.load(ps + 4 * (b * sb + h * sh), np.float32))
        base = b * ob + h * oh + i * oi
        js = [u * V + e for e in range(V)] if vec else [u]
        if vec:
            assert (pout + isz * (base + js[0])) % 16 == 0
        for j in js:
            addr = pout + isz * (base + j) if vec else pout + isz * (base + j * oj)
            heap.store(addr, T, T.type(-(slope * CT(abs(i + off - j)))))


def emulate_bw(heap, launch):
    name, knobs, grid, args, _ = launch
    assert name == "alibi_bw"
    (pd, ppart, pds, mode, flags, nslopes, nchunks, rpc, nrows, upr, H, Sq, Sk, off, db, dh, di,
     dj, gb, gh) = args
    T = numpy_dtype(as_dtype(knobs["dtype"]))
    CT = np.float64 if knobs["dtype"] == "f64" else np.float32
    isz, csz = T.itemsize, np.dtype(CT).itemsize
    V = 16 // isz
    vec = bool(flags & spec.VEC)
    if mode == spec.FINISH:
        assert grid == (-(-nslopes // spec.BW_THREADS), 1, 1)
        for k in range(nslopes):
            acc = CT(0)
            for c in range(nchunks):
                acc = CT(acc + heap.load(ppart + csz * (k * nchunks + c), CT))
            bk, h = divmod(k, H)
            heap.store(pds + 4 * (bk * gb + h * gh), np.float32, np.float32(acc))
        return
    assert grid == (nslopes * nchunks, 1, 1)
    for blk in range(nslopes * nchunks):
        k, c = divmod(blk, nchunks)
        bk, h = divmod(k, H)
        r0 = c * rpc
        r1 = min(r0 + rpc, nrows)
        parts = [CT(0)] * spec.BW_THREADS
        for it in range((r1 - r0) * upr):
            rr, u = divmod(it, upr)
            bq, i = divmod(r0 + rr, Sq)
            base = (bk + bq) * db + h * dh + i * di
            js = [u * V + e for e in range(V)] if vec else [u]
            if vec:
                assert (pd + isz * (base + js[0])) % 16 == 0
            part = CT(0)
            for j in js:
                addr = pd + isz * (base + j) if vec else pd + isz * (base + j * dj)
                part = CT(part - CT(heap.load(addr, T)) * CT(abs(i + off - j)))
            t = it % spec.BW_THREADS
            parts[t] = CT(parts[t] + part)
        tot = CT(np.sum(np.asarray(parts, CT)))          # (the tree's order is not mirrored)
        if flags & spec.DIRECT:
            heap.store(pds + 4 * (bk * gb + h * gh), np.float32, np.float32(tot))
        else:
            heap.store(ppart + csz * (k * nchunks + c), CT, tot)


def run(plan, args, heap, launches, workspace=None, emulate=None):
    launches.clear()
    plan.run(args, workspace=workspace)
    for launch in launches:
        (emulate_fw if launch[0] == "alibi_fw" else emulate_bw)(heap, launch)
    return list(launches)


def _close(out, ref, tol, what=""):
    o = np.asarray(out, np.float64)
    assert o.shape == ref.shape
    assert not np.isnan(o).any(), what
    err = np.abs(o - ref)
    assert (err <= tol * (np.abs(ref) + 1e-30)).all(), (what, err.max())


TOL = {"f16": 1e-3, "bf16": 8e-3, "f32": 2e-7, "f64": 1e-15}


# ------------------------------------------------------------------------------- slopes
def test_alibi_slopes_paper_sequence():
    s8 = alibi_slopes(8)
    assert s8.dtype == np.float32
    assert np.array_equal(s8, np.float32([2.0 ** -k for k in range(1, 9)]))
    s16 = alibi_slopes(16)
    assert np.allclose(s16, [2.0 ** (-0.5 * k) for k in range(1, 17)], rtol=1e-7)
    # non-power of two: the 8 slopes of 8, then every other slope of 16
    s12 = alibi_slopes(12)
    assert np.array_equal(s12[:8], s8)
    assert np.array_equal(s12[8:], alibi_slopes(16)[0::2][:4])
    assert alibi_slopes(1)[0] == np.float32(2.0 ** -8)
    assert alibi_slopes(0).shape == (0,)
    assert len(alibi_slopes(40)) == 40 and (np.diff(alibi_slopes(32)) < 0).all()
    with pytest.raises(InvalidProblemError):
        alibi_slopes(-1)
    with pytest.raises(InvalidProblemError):
        alibi_slopes(2.0)


# --------------------------------------------------------------------------- validation
def _fw(heap):
    d = AlibiDescriptor((2, 3, 4, 8), "f16")
    sv, _ = heap.array((3,), "f32")
    bv, _ = heap.array(d.shape, "f16")
    plan = AlibiPlan.select(d, PREF)
    plan.can_implement(AlibiArgs(sv, bv))
    return d, plan, sv, bv


def test_unsupported_error():
    with pytest.raises(UnsupportedError):
        AlibiDescriptor((1, 2, 3, 4), "int8")
    with pytest.raises(UnsupportedError):
        AlibiBackwardDescriptor((1, 2, 3, 2**31), "f32")
    heap = FakeHeap()
    d, plan, sv, bv = _fw(heap)
    s16, _ = heap.array((3,), "f16")
    with pytest.raises(UnsupportedError):                   # slopes must be f32
        plan.can_implement(AlibiArgs(s16, bv))
    bw = AlibiBackwardPlan.select(AlibiBackwardDescriptor((2, 3, 4, 8), "f16"), PREF)
    dsv, _ = heap.array((3,), "f32")
    bw.can_implement(AlibiBackwardArgs(bv, dsv))
    ds16, _ = heap.array((3,), "f16")
    with pytest.raises(UnsupportedError):                   # dslopes must be f32
        bw.can_implement(AlibiBackwardArgs(bv, ds16))


def test_invalid_problem_error():
    for bad in (dict(shape=(2, 3, 4)), dict(shape=(1, 2, 3, -4)), dict(shape=(1, 2, 3, 4),
                                                                       align="center"),
                dict(shape=(1, 2, 3, 4), batched_slopes=1)):
        with pytest.raises(InvalidProblemError):
            AlibiDescriptor(**bad)
        with pytest.raises(InvalidProblemError):
            AlibiBackwardDescriptor(**bad)
    with pytest.raises(InvalidProblemError):
        AlibiPlan.select(AlibiBackwardDescriptor((1, 2, 3, 4)), PREF)
    assert AlibiDescriptor((2, 4, 3, 5)).slopes_shape == (4,)
    assert AlibiDescriptor((2, 4, 3, 5), batched_slopes=True).slopes_shape == (2, 4)
    heap = FakeHeap()
    d, plan, sv, bv = _fw(heap)
    s2, _ = heap.array((2, 3), "f32")
    with pytest.raises(InvalidProblemError):                # (B, Hq) slopes, per-head desc
        plan.can_implement(AlibiArgs(s2, bv))
    with pytest.raises(InvalidProblemError):                # bias over the slopes
        plan.can_implement(AlibiArgs(sv, TensorView(sv.ptr, d.shape, bv.strides, bv.dtype)))
    with pytest.raises(InvalidProblemError):                # broadcast output
        plan.can_implement(AlibiArgs(sv, bv.with_shape(d.shape, (0, 32, 8, 1))))
    bw = AlibiBackwardPlan.select(AlibiBackwardDescriptor((2, 3, 4, 8), "f16"), PREF)
    with pytest.raises(InvalidProblemError):                # dslopes over dbias
        bw.can_implement(AlibiBackwardArgs(bv, TensorView(bv.ptr, (3,), (1,), "f32")))


def test_device_mismatch_error():
    heap = FakeHeap()
    d, plan, sv, bv = _fw(heap)
    with pytest.raises(DeviceMismatchError):
        plan.can_implement(AlibiArgs(sv, TensorView(bv.ptr, d.shape, bv.strides, bv.dtype, 1)))


def test_misaligned_operand_error():
    heap = FakeHeap()
    d, plan, sv, bv = _fw(heap)
    with pytest.raises(MisalignedOperandError):
        plan.can_implement(AlibiArgs(sv, TensorView(bv.ptr + 1, d.shape, bv.strides,
                                                    bv.dtype)))


def test_buffer_too_small_error():
    heap = FakeHeap()
    d, plan, sv, bv = _fw(heap)
    with pytest.raises(BufferTooSmallError):
        plan.can_implement(AlibiArgs(sv, TensorView(bv.ptr, d.shape, bv.strides, bv.dtype, 0,
                                                    capacity_bytes=10)))


def test_workspace_too_small_error():
    big = AlibiBackwardPlan.select(AlibiBackwardDescriptor((4, 8, 1024, 1024), "bf16"), PREF)
    assert big.workspace_size() > 0
    heap = FakeHeap(1 << 12)
    args = AlibiBackwardArgs(TensorView(heap.BASE, (4, 8, 1024, 1024),
                                        (8 << 20, 1 << 20, 1024, 1), "bf16"),
                             TensorView(heap.BASE + (1 << 26), (8,), (1,), "f32"))
    with pytest.raises(WorkspaceTooSmallError):
        big.run(args)
    with pytest.raises(WorkspaceTooSmallError):
        big.run(args, workspace=Workspace(heap.BASE + (1 << 27), big.workspace_size() - 1))


def test_sku_spaces():
    from baracuda_dsl.ops import get_template

    for arch in ("sm80", "sm89", "sm90a"):
        assert len(get_template("alibi_fw").skus(arch)) == 4
        assert len(get_template("alibi_bw").skus(arch)) == 4
    for dt in ("f16", "bf16", "f32", "f64"):
        p = AlibiPlan.select(AlibiDescriptor((1, 2, 3, 4), dt), PREF)
        assert p.sku().knobs in get_template("alibi_fw").skus("sm90a")
        q = AlibiBackwardPlan.select(AlibiBackwardDescriptor((1, 2, 3, 4), dt), PREF)
        assert q.sku().knobs in get_template("alibi_bw").skus("sm90a")
        assert q.precision_guarantee().deterministic


def test_backward_chunking_and_workspace():
    small = AlibiBackwardPlan.select(AlibiBackwardDescriptor((2, 4, 16, 16)), PREF)
    assert small._nchunks == 1 and small.workspace_size() == 0
    big = AlibiBackwardPlan.select(AlibiBackwardDescriptor((4, 8, 1024, 1024), "bf16"), PREF)
    # per-head slopes: each slope has 4·1024 rows of 1024: 64 chunks of 64 rows
    assert (big._nrows, big._nchunks, big._rpc) == (4096, 64, 64)
    assert big.workspace_size() >= 8 * 64 * 4
    f64 = AlibiBackwardPlan.select(AlibiBackwardDescriptor((4, 8, 1024, 1024), "f64",
                                                           batched_slopes=True), PREF)
    assert (f64._nslopes, f64._nrows, f64._nchunks) == (32, 1024, 16)
    assert f64.workspace_size() >= 32 * 16 * 8
    # the chunking depends on the shape only, never on the arch
    p80 = AlibiBackwardPlan.select(AlibiBackwardDescriptor((4, 8, 1024, 1024), "bf16"),
                                   PlanPreference(arch=ArchSku.SM80))
    assert (p80._nchunks, p80._rpc) == (big._nchunks, big._rpc)
    assert AlibiPlan.select(AlibiDescriptor((2, 3, 0, 4)), PREF).is_empty()
    assert not AlibiBackwardPlan.select(AlibiBackwardDescriptor((2, 3, 0, 4)), PREF).is_empty()
    assert AlibiBackwardPlan.select(AlibiBackwardDescriptor((2, 0, 5, 4)), PREF).is_empty()


# --------------------------------------------------------------- emulated launches vs reference
FW_CASES = [((1, 4, 5, 16), "bf16", False, "bottom_right", None),
            ((2, 3, 7, 9), "f32", True, "top_left", None),          # odd Sk: scalar path
            ((2, 2, 6, 3), "f64", False, "bottom_right", None),     # Sq > Sk
            ((1, 2, 4, 16), "f16", False, "top_left", (200, 64, 16, 1)),    # padded strides
            ((2, 2, 3, 8), "f32", True, "bottom_right", (48, 1, 16, 2))]    # transposed


@pytest.mark.parametrize("shape,dt,batched,align,strides", FW_CASES)
def test_forward_emulated(shape, dt, batched, align, strides, launches):
    heap = FakeHeap()
    d = AlibiDescriptor(shape, dt, batched_slopes=batched, align=align)
    sv, sa = heap.array(d.slopes_shape, "f32")
    sa[...] = (alibi_slopes(shape[1])[None] * np.arange(1, shape[0] + 1)[:, None]
               if batched else alibi_slopes(shape[1]))
    bv, ba = heap.array(shape, dt, strides=strides, fill=np.nan)
    launched = run(AlibiPlan.select(d, PREF), AlibiArgs(sv, bv), heap, launches)
    ref = np.broadcast_to(bias_ref(shape[2], shape[3], np.asarray(sa, np.float64), align), shape)
    _close(ba, ref, TOL[dt], (shape, dt))
    v = 16 // as_dtype(dt).itemsize
    vec = shape[3] % v == 0 and (strides is None or (strides[3] == 1 and all(
        s % v == 0 for s in strides[:3])))
    assert bool(launched[0][3][2] & spec.VEC) == vec


BW_CASES = [((2, 3, 5, 16), "bf16", False, "bottom_right"),
            ((2, 3, 5, 7), "f32", True, "top_left"),
            ((3, 2, 9, 4), "f64", False, "top_left"),
            ((1, 2, 300, 300), "f16", False, "bottom_right"),     # two chunks: FINISH pass
            ((2, 1, 0, 5), "f32", False, "bottom_right")]          # empty sum: zeros


@pytest.mark.parametrize("shape,dt,batched,align", BW_CASES)
def test_backward_emulated(shape, dt, batched, align, launches):
    rng = np.random.default_rng(shape[2])
    heap = FakeHeap(1 << 23)
    d = AlibiBackwardDescriptor(shape, dt, batched_slopes=batched, align=align)
    plan = AlibiBackwardPlan.select(d, PREF)
    dbv, dba = heap.array(shape, dt)
    dba[...] = rng.standard_normal(shape)
    dsv, dsa = heap.array(d.slopes_shape, "f32", fill=np.nan)
    ws = None
    if plan.workspace_size():
        wsv, _ = heap.array((plan.workspace_size(),), "u8", fill=0xFF)
        ws = Workspace(wsv.ptr, plan.workspace_size())
    launched = run(plan, AlibiBackwardArgs(dbv, dsv), heap, launches, workspace=ws)
    assert len(launched) == (1 if plan._nchunks == 1 else 2)
    ref = alibi_dslopes(np.asarray(dba, np.float64), batched, align)
    terms = np.abs(np.asarray(dba, np.float64)) * alibi_distance(shape[2], shape[3], align)
    scale = terms.sum(axis=(2, 3))
    scale = scale if batched else scale.sum(axis=0)
    err = np.abs(np.asarray(dsa, np.float64) - ref)
    u = 2.0 ** -52 if dt == "f64" else 2.0 ** -23
    n = shape[2] * shape[3] * (1 if batched else shape[0])
    assert (err <= (n + 2) * u * scale + 2.0 ** -24 * np.abs(ref)).all(), err


def test_backward_distance_uses_both_alignments(launches):
    """A dbias of ones: dslope = −Σ|i + off − j| in closed form for both alignments."""
    heap = FakeHeap()
    for align in ("bottom_right", "top_left"):
        d = AlibiBackwardDescriptor((1, 1, 3, 5), "f32", align=align)
        dbv, dba = heap.array(d.shape, "f32", fill=1.0)
        dsv, dsa = heap.array((1,), "f32", fill=np.nan)
        run(AlibiBackwardPlan.select(d, PREF), AlibiBackwardArgs(dbv, dsv), heap, launches)
        want = -alibi_distance(3, 5, align).sum()
        assert dsa[0] == want, (align, dsa[0], want)
    # rows (2,1,0,1,2), (3,2,1,0,1), (4,3,2,1,0) and (0,1,2,3,4), (1,0,1,2,3), (2,1,0,1,2)
    assert alibi_distance(3, 5, "bottom_right").sum() == 23
    assert alibi_distance(3, 5, "top_left").sum() == 23
    assert alibi_distance(3, 5, "bottom_right")[0, 0] == 2
    assert alibi_distance(3, 5, "top_left")[0, 0] == 0


# ----------------------------------------------------------------------------- cross-compile
@pytest.mark.parametrize("arch", [ArchSku.SM80, ArchSku.SM89, ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")

    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku
    from baracuda_dsl.ops import get_template

    for name, knobs in (("alibi_fw", dict(dtype="bf16")), ("alibi_fw", dict(dtype="f64")),
                        ("alibi_bw", dict(dtype="f16")), ("alibi_bw", dict(dtype="f64"))):
        assert freeze_knobs(knobs) in get_template(name).skus(arch.value)
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=600)
        assert cubin[:4] == b"\x7fELF"
        assert meta["threads"] == (spec.FW_THREADS if name == "alibi_fw" else spec.BW_THREADS)
