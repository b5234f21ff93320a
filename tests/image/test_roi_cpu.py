"""RoI plans without a GPU: float64 numpy references of torchvision's roi_align / roi_pool
(forward and backward, written from torchvision's documented algorithm; the GPU tests import
them) checked against hand values and the adjoint identity, descriptor validation, the SKU space,
the exact launch arguments (recorded) and a cross-compile sample for sm80 / sm89 / sm90a."""

import math

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.ops.image.roi import (RoIAlignArgs, RoIAlignBackwardArgs, RoIAlignBackwardPlan,
                                        RoIAlignDescriptor, RoIAlignPlan, RoIPoolArgs,
                                        RoIPoolBackwardArgs, RoIPoolBackwardPlan,
                                        RoIPoolDescriptor, RoIPoolPlan)
from baracuda_dsl.ops.image.specs import roi as spec
from baracuda_dsl.tensor import TensorView

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)
FLT_MAX = 3.4028234663852886e38


# ------------------------------------------------------------------ float64 references
def _bilinear_taps(y, x, H, W):
    """torchvision's bilinear sample: None outside, else [(h, w, weight)] of the four taps."""
    if y < -1.0 or y > H or x < -1.0 or x > W:
        return None
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= H - 1:
        yl = yh = H - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= W - 1:
        xl = xh = W - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    hy, hx = 1.0 - ly, 1.0 - lx
    return [(yl, xl, hy * hx), (yl, xh, hy * lx), (yh, xl, ly * hx), (yh, xh, ly * lx)]


def _align_samples(box, ph, pw, PH, PW, scale, sr, aligned):
    """(list of (y, x) samples of bin (ph, pw), count) of roi_align."""
    off = 0.5 if aligned else 0.0
    sw, sh = box[1] * scale - off, box[2] * scale - off
    ew, eh = box[3] * scale - off, box[4] * scale - off
    rw, rh = ew - sw, eh - sh
    if not aligned:
        rw, rh = max(rw, 1.0), max(rh, 1.0)
    bh, bw = rh / PH, rw / PW
    gh = sr if sr > 0 else math.ceil(rh / PH)
    gw = sr if sr > 0 else math.ceil(rw / PW)
    cnt = max(gh * gw, 1)
    pts = [(sh + ph * bh + (iy + 0.5) * bh / gh, sw + pw * bw + (ix + 0.5) * bw / gw)
           for iy in range(max(gh, 0)) for ix in range(max(gw, 0))]
    return pts, cnt


def _batch(box, N):
    v = float(box[0])
    return int(v) if -1.0 < v < N else None


def roi_align_ref(x, boxes, output_size, scale=1.0, sr=-1, aligned=False):
    """float64 roi_align of numpy ``x`` (N, C, H, W) and ``boxes`` (K, 5)."""
    x = np.asarray(x, np.float64)
    boxes = np.asarray(boxes, np.float64)
    N, C, H, W = x.shape
    PH, PW = (output_size, output_size) if isinstance(output_size, int) else output_size
    y = np.zeros((boxes.shape[0], C, PH, PW))
    for k, box in enumerate(boxes):
        b = _batch(box, N)
        if b is None:
            continue
        for ph in range(PH):
            for pw in range(PW):
                pts, cnt = _align_samples(box, ph, pw, PH, PW, scale, sr, aligned)
                acc = np.zeros(C)
                for yy, xx in pts:
                    taps = _bilinear_taps(yy, xx, H, W)
                    if taps is not None:
                        acc += sum(w * x[b, :, h, ww] for h, ww, w in taps)
                y[k, :, ph, pw] = acc / cnt
    return y


def roi_align_backward_ref(dy, boxes, shape, scale=1.0, sr=-1, aligned=False):
    """float64 gradient of :func:`roi_align_ref` (the adjoint: dy scattered through the
    weights)."""
    dy = np.asarray(dy, np.float64)
    boxes = np.asarray(boxes, np.float64)
    N, C, H, W = shape
    PH, PW = dy.shape[2:]
    dx = np.zeros(shape)
    for k, box in enumerate(boxes):
        b = _batch(box, N)
        if b is None:
            continue
        for ph in range(PH):
            for pw in range(PW):
                pts, cnt = _align_samples(box, ph, pw, PH, PW, scale, sr, aligned)
                for yy, xx in pts:
                    taps = _bilinear_taps(yy, xx, H, W)
                    if taps is not None:
                        for h, ww, w in taps:
                            dx[b, :, h, ww] += dy[k, :, ph, pw] * w / cnt
    return dx


def _pool_bin(box, p, P, E, j0, j1, scale, ct):
    def rnd(v):                       # C round: half away from zero
        return int(math.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)
    s, e = rnd(box[j0] * scale), rnd(box[j1] * scale)
    size = max(e - s + 1, 1)
    bs = ct(size) / ct(P)                   # the bin edges in the kernel's compute type
    lo = min(max(int(math.floor(ct(p) * bs)) + s, 0), E)
    hi = min(max(int(math.ceil(ct(p + 1) * bs)) + s, 0), E)
    return lo, hi


def roi_pool_ref(x, boxes, output_size, scale=1.0, ct=np.float64):
    """float64 roi_pool: (values, int64 argmax ``h·W + w``, −1 for empty bins); the bin edges
    ``floor(p·size/P)`` are computed in ``ct`` (np.float32 for the f32 / f16 / bf16 kernels, like
    torchvision's float arithmetic: an edge may land one pixel off the float64 one)."""
    x = np.asarray(x, np.float64)
    boxes = np.asarray(boxes, np.float64)
    N, C, H, W = x.shape
    PH, PW = (output_size, output_size) if isinstance(output_size, int) else output_size
    K = boxes.shape[0]
    y = np.zeros((K, C, PH, PW))
    arg = np.full((K, C, PH, PW), -1, np.int64)
    for k, box in enumerate(boxes):
        b = _batch(box, N)
        if b is None:
            continue
        for ph in range(PH):
            hs, he = _pool_bin(box, ph, PH, H, 2, 4, scale, ct)
            for pw in range(PW):
                ws, we = _pool_bin(box, pw, PW, W, 1, 3, scale, ct)
                if he <= hs or we <= ws:
                    continue
                for c in range(C):
                    m, mi = -FLT_MAX, -1
                    for h in range(hs, he):
                        for w in range(ws, we):
                            if x[b, c, h, w] > m:
                                m, mi = x[b, c, h, w], h * W + w
                    y[k, c, ph, pw], arg[k, c, ph, pw] = m, mi
    return y, arg


def roi_pool_backward_ref(dy, boxes, argmax, shape):
    """float64 gradient of roi_pool: dy added at the saved argmax."""
    dy = np.asarray(dy, np.float64)
    N, C, H, W = shape
    dx = np.zeros((N, C, H * W))
    for k, box in enumerate(np.asarray(boxes, np.float64)):
        b = _batch(box, N)
        if b is None:
            continue
        for c in range(C):
            for ph in range(dy.shape[2]):
                for pw in range(dy.shape[3]):
                    a = int(argmax[k, c, ph, pw])
                    if 0 <= a < H * W:
                        dx[b, c, a] += dy[k, c, ph, pw]
    return dx.reshape(shape)


# ------------------------------------------------------------------ references, by hand
def test_align_reference_hand_values():
    # a linear ramp: bilinear sampling is exact, the mean of the samples is the bin centre's x
    H, W = 6, 8
    x = np.broadcast_to(np.arange(W, dtype=np.float64), (1, 1, H, W)).copy()
    box = np.array([[0, 1.0, 1.0, 5.0, 4.0]])
    y = roi_align_ref(x, box, (1, 2), 1.0, 2, True)           # x range [0.5, 4.5): bins of 2
    assert np.allclose(y[0, 0, 0], [1.5, 3.5])
    y = roi_align_ref(x, box, (1, 2), 1.0, -1, False)         # [1, 5): centres 2 and 4
    assert np.allclose(y[0, 0, 0], [2.0, 4.0])
    # a box entirely left of the image (x < -1) samples nothing
    assert roi_align_ref(x, np.array([[0, -9.0, 0, -3.0, 2.0]]), 2)[0].max() == 0.0
    # zero-size aligned box: ceil(0) = 0 samples, count 1 → 0
    assert roi_align_ref(x, np.array([[0, 2.0, 2.0, 2.0, 2.0]]), 2, 1.0, -1, True).max() == 0.0
    # an out-of-range batch index reads nothing
    assert roi_align_ref(x, np.array([[1, 0.0, 0.0, 3.0, 3.0]]), 2).max() == 0.0


def test_align_reference_adjoint():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 9))
    boxes = np.array([[0, 0.3, 1.2, 6.1, 5.9], [1, -2.0, -1.5, 3.0, 2.0], [1, 4.0, 2.0, 11.0, 9.0],
                      [0, 2.0, 2.0, 2.0, 2.0]])
    for sr, al in ((-1, False), (2, True), (-1, True), (3, False)):
        y = roi_align_ref(x, boxes, (3, 2), 0.75, sr, al)
        dy = rng.standard_normal(y.shape)
        dx = roi_align_backward_ref(dy, boxes, x.shape, 0.75, sr, al)
        assert np.isclose((y * dy).sum(), (x * dx).sum())


def test_pool_reference_hand_values():
    x = np.arange(20, dtype=np.float64).reshape(1, 1, 4, 5)
    y, a = roi_pool_ref(x, np.array([[0, 0.0, 0.0, 4.0, 3.0]]), (2, 2))
    assert y[0, 0].tolist() == [[7.0, 9.0], [17.0, 19.0]]
    assert np.array_equal(roi_pool_ref(x, np.array([[0, 0.0, 0.0, 4.0, 3.0]]), (2, 2), 1.0,
                                       np.float32)[1], a)
    assert a[0, 0].tolist() == [[7, 9], [17, 19]]
    # a box past the image: bins clipped, empty bins 0 / −1
    y, a = roi_pool_ref(x, np.array([[0, 3.0, 2.0, 9.0, 9.0]]), (2, 2))
    assert a[0, 0, 1].tolist() == [-1, -1] and y[0, 0, 1].tolist() == [0.0, 0.0]
    assert a[0, 0, 0, 0] == 19
    dx = roi_pool_backward_ref(np.ones((1, 1, 2, 2)), np.array([[0, 0.0, 0, 4, 3]]),
                               np.array([[[[7, 9], [17, 19]]]]), (1, 1, 4, 5))
    assert dx.sum() == 4 and dx[0, 0, 1, 2] == 1


# --------------------------------------------------------------------------- validation
def test_descriptor_validation():
    d = RoIAlignDescriptor((2, 3, 7, 9), 4, 5, 0.5, 2, True, "bf16")
    assert d.out_shape == (4, 3, 5, 5) and d.output_size == (5, 5) and d.dtype is bd.bfloat16
    assert RoIPoolDescriptor((2, 3, 7, 9), 0, (2, 3)).out_shape == (0, 3, 2, 3)
    assert RoIAlignDescriptor((0, 3, 7, 9), 2, [4]).output_size == (4, 4)
    for bad in [dict(shape=(3, 7, 9)), dict(shape=(1, 3, 0, 9)), dict(num_rois=-1),
                dict(num_rois=True), dict(output_size=0), dict(output_size=(2, 3, 4)),
                dict(output_size=(2.0, 3)), dict(spatial_scale=float("nan")),
                dict(sampling_ratio=1.5)]:
        kw = dict(shape=(1, 3, 7, 9), num_rois=2, output_size=2)
        kw.update(bad)
        with pytest.raises(bd.InvalidProblemError):
            RoIAlignDescriptor(**kw)
    with pytest.raises(bd.InvalidProblemError):
        RoIPoolDescriptor((1, 3, 7, 9), 2, 2, float("inf"))
    with pytest.raises((bd.UnsupportedError, bd.InvalidProblemError)):
        RoIPoolDescriptor((1, 3, 7, 9), 2, 2, dtype="int32")
    with pytest.raises(bd.InvalidProblemError):
        RoIPoolPlan.select(RoIAlignDescriptor((1, 3, 7, 9), 2, 2), PREF)


def test_plan_skus():
    for plan, desc, name, tmpl, det, ws in [
            (RoIAlignPlan, RoIAlignDescriptor((2, 3, 7, 9), 4, 2, dtype="bf16"), "roi_align",
             "roi_fw", True, 0),
            (RoIAlignBackwardPlan, RoIAlignDescriptor((2, 3, 7, 9), 4, 2, dtype="f16"),
             "roi_align_backward", "roi_bw", False, 2 * 3 * 7 * 9 * 4),
            (RoIAlignBackwardPlan, RoIAlignDescriptor((2, 3, 7, 9), 4, 2, dtype="f64"),
             "roi_align_backward", "roi_bw", False, 0),
            (RoIPoolPlan, RoIPoolDescriptor((2, 3, 7, 9), 4, 2), "roi_pool", "roi_fw", True, 0),
            (RoIPoolBackwardPlan, RoIPoolDescriptor((2, 3, 7, 9), 4, 2, dtype="bf16"),
             "roi_pool_backward", "roi_bw", False, 2 * 3 * 7 * 9 * 4)]:
        p = plan.select(desc, PREF)
        sku = p.sku()
        assert sku.category is bd.OpCategory.IMAGE and sku.op == name and sku.template == tmpl
        assert dict(sku.knobs) == {"dtype": desc.dtype.short, "op": name.split("_")[1]}
        pg = p.precision_guarantee()
        assert pg.deterministic is det and pg.bit_stable_on_same_hardware is det
        assert pg.accumulator == (bd.float64 if desc.dtype is bd.float64 else bd.float32)
        assert p.workspace_size() == ws
    assert RoIAlignPlan.select(RoIAlignDescriptor((2, 3, 7, 9), 0, 2), PREF).is_empty()
    # no boxes: the backward still writes dx (zeros)
    assert not RoIAlignBackwardPlan.select(RoIAlignDescriptor((2, 3, 7, 9), 0, 2),
                                           PREF).is_empty()
    assert RoIPoolBackwardPlan.select(RoIPoolDescriptor((0, 3, 7, 9), 2, 2), PREF).is_empty()


def test_sku_space():
    for t in (spec.ROI_FW, spec.ROI_BW):
        ks = list(t.space())
        assert len(ks) == len(set(ks)) == 8 <= 16
        assert {k.dtype for k in ks} == {"f32", "f16", "bf16", "f64"}
        assert {k.op for k in ks} == {"align", "pool"}
    assert sum(1 for _ in spec.ROI_FW.params) == 5 + sum(spec.FW_GROUPS) + 1
    assert sum(1 for _ in spec.ROI_BW.params) == 7 + sum(spec.BW_GROUPS) + 1


# ----------------------------------------------------------------------- recorded launches
def _tv(ptr, shape, strides, dt):
    return TensorView(ptr, shape, strides, as_dtype(dt), device=0)


def _dense(shape):
    s, acc = [], 1
    for n in reversed(shape):
        s.append(acc)
        acc *= n
    return tuple(reversed(s))


def test_launch_arguments(launches):
    d = RoIAlignDescriptor((2, 3, 7, 9), 4, (3, 2), 0.25, 2, True, "f32")
    x = _tv(0x10000, d.shape, (400, 100, 10, 1), "f32")             # strided input
    b = _tv(0x20000, (4, 5), (1, 4), "f32")                          # column-major boxes
    y = _tv(0x30000, d.out_shape, _dense(d.out_shape), "f32")
    RoIAlignPlan.select(d, PREF).run(RoIAlignArgs(x, b, y))
    name, knobs, grid, args, _ = launches[-1]
    n = 4 * 3 * 3 * 2
    assert name == "roi_fw" and knobs == {"dtype": "f32", "op": "align"}
    assert grid == ((n + 255) // 256, 1, 1)
    assert len(args) == 5 + sum(spec.FW_GROUPS) + 1
    assert args[:5] == [0x10000, 0x20000, 0x30000, 0x30000, n]
    assert args[5:13] == [2, 3, 7, 9, 3, 2, 2, 1]
    assert args[13:17] == [400, 100, 10, 1] and args[17:19] == [1, 4]
    assert args[19:] == [0, 0.25]
    # roi_pool with argmax
    p = RoIPoolDescriptor((2, 3, 7, 9), 4, 2, 0.5, "bf16")
    yb = _tv(0x30000, p.out_shape, _dense(p.out_shape), "bf16")
    ab = _tv(0x40000, p.out_shape, _dense(p.out_shape), "int64")
    RoIPoolPlan.select(p, PREF).run(RoIPoolArgs(_tv(0x10000, p.shape, _dense(p.shape), "bf16"),
                                                _tv(0x20000, (4, 5), (5, 1), "bf16"), yb, ab))
    name, knobs, grid, args, _ = launches[-1]
    assert knobs == {"dtype": "bf16", "op": "pool"} and args[3] == 0x40000
    assert args[5:13] == [2, 3, 7, 9, 2, 2, 0, 0] and args[19:] == [1, 0.5]
    with pytest.raises(bd.UnsupportedError):              # y not dense
        RoIPoolPlan.select(p, PREF).run(RoIPoolArgs(
            _tv(0x10000, p.shape, _dense(p.shape), "bf16"), _tv(0x20000, (4, 5), (5, 1), "bf16"),
            _tv(0x30000, p.out_shape, (24, 8, 1, 2), "bf16")))
    with pytest.raises(bd.UnsupportedError):              # boxes of another dtype
        RoIPoolPlan.select(p, PREF).run(RoIPoolArgs(
            _tv(0x10000, p.shape, _dense(p.shape), "bf16"), _tv(0x20000, (4, 5), (5, 1), "f32"),
            yb))
    with pytest.raises(bd.InvalidProblemError):           # boxes (K, 4)
        RoIPoolPlan.select(p, PREF).run(RoIPoolArgs(
            _tv(0x10000, p.shape, _dense(p.shape), "bf16"), _tv(0x20000, (4, 4), (4, 1), "bf16"),
            yb))


def test_backward_launches(launches):
    # f32: zero dx, scatter into dx (no workspace)
    d = RoIAlignDescriptor((2, 3, 7, 9), 4, (3, 2), 0.5, -1, False, "f32")
    dy = _tv(0x10000, d.out_shape, (1, 4, 12, 2), "f32")
    b = _tv(0x20000, (4, 5), (5, 1), "f32")
    dx = _tv(0x30000, d.shape, _dense(d.shape), "f32")
    n_in, n_out = 2 * 3 * 7 * 9, 4 * 3 * 3 * 2
    RoIAlignBackwardPlan.select(d, PREF).run(RoIAlignBackwardArgs(dy, b, dx))
    assert [(a[0], a[3][5], a[3][6], a[2]) for a in launches] == [
        ("roi_bw", n_in, 0, ((n_in + 255) // 256, 1, 1)), ("roi_bw", n_out, 1, (1, 1, 1))]
    args = launches[-1][3]
    assert args[:5] == [0x10000, 0x20000, 0x10000, 0x30000, 0x30000]
    assert len(args) == 7 + sum(spec.BW_GROUPS) + 1
    assert args[7:15] == [2, 3, 7, 9, 3, 2, -1, 0] and args[15:19] == [1, 4, 12, 2]
    assert args[19:21] == [5, 1] and args[21:25] == [0, 0, 0, 0] and args[25] == 0.5
    # bf16 roi_pool: zero the f32 workspace, scatter into it, cast into dx
    launches.clear()
    p = RoIPoolDescriptor((2, 3, 7, 9), 4, (3, 2), 1.0, "bf16")
    plan = RoIPoolBackwardPlan.select(p, PREF)
    dyb = _tv(0x10000, p.out_shape, _dense(p.out_shape), "bf16")
    bb = _tv(0x20000, (4, 5), (5, 1), "bf16")
    ab = _tv(0x40000, p.out_shape, (1, 4, 12, 2), "int64")
    dxb = _tv(0x30000, p.shape, _dense(p.shape), "bf16")
    with pytest.raises(bd.WorkspaceTooSmallError):
        plan.run(RoIPoolBackwardArgs(dyb, bb, ab, dxb))
    ws = bd.Workspace(0x800000, plan.workspace_size())
    plan.run(RoIPoolBackwardArgs(dyb, bb, ab, dxb), workspace=ws)
    assert [(a[3][5], a[3][6]) for a in launches] == [(n_in, 0), (n_out, 1), (n_in, 2)]
    assert all(a[3][:5] == [0x10000, 0x20000, 0x40000, 0x800000, 0x30000] for a in launches)
    assert launches[-1][3][21:25] == [1, 4, 12, 2]
    with pytest.raises(bd.UnsupportedError):              # dx must be dense
        plan.run(RoIPoolBackwardArgs(dyb, bb, ab, _tv(0x30000, p.shape, (1, 2, 6, 42), "bf16")),
                 workspace=ws)


def test_host_arrays_rejected_before_launch():
    p = RoIAlignPlan.select(RoIAlignDescriptor((1, 1, 4, 4), 1, 2), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(RoIAlignArgs(np.zeros((1, 1, 4, 4), np.float32), np.zeros((1, 5), np.float32),
                           np.zeros((1, 1, 2, 2), np.float32)))


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs in [("roi_fw", dict(dtype="bf16", op="align")),
                        ("roi_bw", dict(dtype="f32", op="pool"))]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == spec.THREADS
