"""NMSPlan without a GPU: a float64 numpy reference of torchvision's nms / batched_nms (the GPU
tests import it), the kernels' mask + sweep algorithm emulated on Python ints against it,
descriptor validation, the workspace layout, the exact launch arguments (recorded) and a
cross-compile sample for sm80 / sm89 / sm90a."""

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.ops.image.nms import NMSArgs, NMSDescriptor, NMSPlan
from baracuda_dsl.ops.image.specs import nms as spec
from baracuda_dsl.tensor import TensorView

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


# ------------------------------------------------------------------ float64 reference
def sorted_order(scores):
    """Stable descending order of ``scores``, NaNs first (torch.sort(descending=True, stable))."""
    s = np.asarray(scores, np.float64)
    nan = np.isnan(s)
    key = np.where(nan, np.inf, s)
    return np.argsort(-key, kind="stable")


def iou(a, b):
    """torchvision's IoU of two x1y1x2y2 boxes (float64; 0/0 gives NaN)."""
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0)
    inter = w * h
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.float64(inter) / np.float64(area_a + area_b - inter)


def nms_ref(boxes, scores, thr, idxs=None):
    """Kept indices (int64, by decreasing score) of greedy nms; ``idxs``: per-category
    (torchvision's algorithm; IoU in float64, vectorised over the kept boxes)."""
    boxes = np.asarray(boxes, np.float64)
    order = sorted_order(scores)
    keep = []
    kb = np.zeros((0, 4))
    kc = np.zeros(0, np.int64)
    for i in order:
        a = boxes[i]
        w = np.maximum(np.minimum(a[2], kb[:, 2]) - np.maximum(a[0], kb[:, 0]), 0.0)
        h = np.maximum(np.minimum(a[3], kb[:, 3]) - np.maximum(a[1], kb[:, 1]), 0.0)
        inter = w * h
        union = (a[2] - a[0]) * (a[3] - a[1]) + (kb[:, 2] - kb[:, 0]) * (kb[:, 3] - kb[:, 1]) \
            - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            sup = inter / union > thr
        if idxs is not None:
            sup &= kc == idxs[i]
        if not sup.any():
            keep.append(int(i))
            kb = np.vstack([kb, a[None]])
            kc = np.append(kc, 0 if idxs is None else idxs[i])
    return np.array(keep, np.int64)


def nms_emulated(boxes, scores, thr, idxs=None):
    """The kernels' algorithm on Python ints: the 64-bit mask words of nms_mask (upper blocks
    only, bits of later boxes), then nms_sweep's block walk with the removed words."""
    B = spec.BLOCK
    boxes = np.asarray(boxes, np.float64)
    order = sorted_order(scores)
    k = len(order)
    cb = -(-k // B)
    mask = {}
    for r in range(cb):
        for c in range(r, cb):
            for t in range(min(B, k - r * B)):
                i = r * B + t
                bits = 0
                for j in range(t + 1 if r == c else 0, min(B, k - c * B)):
                    a, b = order[i], order[c * B + j]
                    if iou(boxes[a], boxes[b]) > thr and (idxs is None or idxs[a] == idxs[b]):
                        bits |= 1 << j
                mask[i, c] = bits
    removed = [0] * cb
    keep = []
    for nb in range(cb):
        rv = removed[nb]
        for ib in range(min(B, k - nb * B)):
            i = nb * B + ib
            if not (rv >> ib) & 1:
                keep.append(int(order[i]))
                for j in range(nb + 1, cb):
                    removed[j] |= mask[i, j]
                rv |= mask[i, nb]
    return np.array(keep, np.int64)


def random_boxes(rng, k, extent=100.0, size=20.0):
    xy = rng.uniform(0, extent, (k, 2))
    wh = rng.uniform(0, size, (k, 2))
    return np.concatenate([xy, xy + wh], axis=1)


def test_reference_hand_values():
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [0, 0, 10, 10.0]])
    scores = np.array([0.9, 0.8, 0.7, 0.95])
    assert nms_ref(boxes, scores, 0.5).tolist() == [3, 2]
    assert nms_ref(boxes, scores, 0.99).tolist() == [3, 1, 2]      # identical boxes: IoU 1
    assert nms_ref(boxes, scores, 1.0).tolist() == [3, 0, 1, 2]    # IoU > 1 never
    assert nms_ref(boxes, scores, 0.5, np.array([0, 1, 0, 1])).tolist() == [3, 0, 2]
    # equal scores: lower index first; NaN scores first
    assert nms_ref(boxes[:3], np.array([0.5, 0.5, 0.5]), 0.5).tolist() == [0, 2]
    assert nms_ref(boxes[:3], np.array([0.5, np.nan, 0.6]), 0.5).tolist() == [1, 2]
    # empty boxes: 0/0 IoU never suppresses
    z = np.zeros((2, 4))
    assert nms_ref(z, np.array([1.0, 2.0]), 0.0).tolist() == [1, 0]


@pytest.mark.parametrize("k", [1, 63, 64, 65, 130])
def test_mask_sweep_algorithm_matches_greedy(k):
    rng = np.random.default_rng(k)
    boxes = random_boxes(rng, k, 60.0)
    scores = rng.integers(0, 5, k).astype(np.float64)              # many ties
    for thr in (0.0, 0.3, 0.7):
        assert np.array_equal(nms_emulated(boxes, scores, thr), nms_ref(boxes, scores, thr))
    idxs = rng.integers(0, 3, k)
    assert np.array_equal(nms_emulated(boxes, scores, 0.3, idxs),
                          nms_ref(boxes, scores, 0.3, idxs))


# --------------------------------------------------------------------------- plans
def test_descriptor_validation():
    d = NMSDescriptor(10, 0.5, "bf16")
    assert d.dtype is bd.bfloat16 and d.iou_threshold == 0.5 and not d.batched
    for bad in [dict(num_boxes=-1), dict(num_boxes=2.0), dict(iou_threshold=float("nan")),
                dict(iou_threshold="x")]:
        kw = dict(num_boxes=3, iou_threshold=0.5)
        kw.update(bad)
        with pytest.raises(bd.InvalidProblemError):
            NMSDescriptor(**kw)
    with pytest.raises((bd.UnsupportedError, bd.InvalidProblemError)):
        NMSDescriptor(3, 0.5, "int32")
    with pytest.raises(bd.UnsupportedError):
        NMSPlan.select(NMSDescriptor(65535 * 64 + 1, 0.5), PREF)


def test_plan_sku_and_workspace():
    for k in (0, 1, 64, 100, 5000):
        p = NMSPlan.select(NMSDescriptor(k, 0.5, "f16"), PREF)
        cb = -(-k // 64)
        sort_ws = p._sortp.workspace_size() if k else 0
        assert p.workspace_size() == (-(-8 * k // 256) * 256 + -(-8 * k * cb // 256) * 256
                                      + 256 * max(1, -(-8 * cb // 256)) + sort_ws)
        sku = p.sku()
        assert sku.category is bd.OpCategory.IMAGE and sku.op == "nms"
        assert sku.template == "nms_mask" and dict(sku.knobs) == {"dtype": "f16"}
        assert p.precision_guarantee().deterministic
        assert not p.is_empty()                                     # K = 0 writes count 0
    assert NMSPlan.select(NMSDescriptor(3, 0.5, batched=True), PREF).sku().op == "batched_nms"


def test_sku_space():
    ks = list(spec.NMS_MASK.space())
    assert len(ks) == len(set(ks)) == 4 and {k.dtype for k in ks} == {"f32", "f16", "bf16", "f64"}
    assert len(list(spec.NMS_SWEEP.space())) == 1


def _tv(ptr, shape, strides, dt):
    return TensorView(ptr, shape, strides, as_dtype(dt), device=0)


def test_launch_arguments(launches):
    k = 100
    d = NMSDescriptor(k, 0.25, "f32", batched=True)
    plan = NMSPlan.select(d, PREF)
    boxes = _tv(0x10000, (k, 4), (1, k), "f32")                     # column-major boxes
    scores = _tv(0x20000, (k,), (2,), "f32")                        # strided scores
    keep = _tv(0x30000, (k,), (1,), "int64")
    cnt = _tv(0x40000, (1,), (1,), "int64")
    idxs = _tv(0x50000, (k,), (3,), "int64")
    with pytest.raises(bd.InvalidProblemError):                     # batched needs idxs
        plan.run(NMSArgs(boxes, scores, keep, cnt), workspace=bd.Workspace(0x900000, 1 << 30))
    ws = bd.Workspace(0x900000, plan.workspace_size())
    plan.run(NMSArgs(boxes, scores, keep, cnt, idxs), workspace=ws)
    names = [a[0] for a in launches]
    assert names[-2:] == ["nms_mask", "nms_sweep"] and len(names) >= 3   # argsort first
    _, knobs, grid, args, _ = launches[-2]
    assert knobs == {"dtype": "f32"} and grid == (2, 2, 1)
    mask_off = 1024
    assert args == [0x10000, 0x900000, 0x50000, 0x900000 + mask_off, k, 2, 1, k, 3, 1, 0.25]
    _, knobs, grid, args, _ = launches[-1]
    rem_off = mask_off + -(-8 * k * 2 // 256) * 256
    assert grid == (1, 1, 1)
    assert args == [0x900000 + mask_off, 0x900000, 0x900000 + rem_off, 0x30000, 0x40000, k, 2]
    # not batched: no idxs (idxs given is an error); K = 0 launches only the sweep
    p2 = NMSPlan.select(NMSDescriptor(k, 0.25, "f32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        p2.run(NMSArgs(boxes, scores, keep, cnt, idxs), workspace=ws)
    launches.clear()
    p0 = NMSPlan.select(NMSDescriptor(0, 0.25, "f32"), PREF)
    p0.run(NMSArgs(_tv(0x10000, (0, 4), (4, 1), "f32"), _tv(0x20000, (0,), (1,), "f32"),
                   _tv(0x30000, (0,), (1,), "int64"), cnt),
           workspace=bd.Workspace(0x900000, p0.workspace_size()))
    assert [a[0] for a in launches] == ["nms_sweep"] and launches[0][3][5:] == [0, 0]
    with pytest.raises(bd.InvalidProblemError):                     # count holds one value
        p2.run(NMSArgs(boxes, scores, keep, _tv(0x40000, (2,), (1,), "int64")), workspace=ws)


@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs, threads in [("nms_mask", dict(dtype="bf16"), spec.BLOCK),
                                 ("nms_sweep", {}, spec.SWEEP_THREADS)]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == threads
