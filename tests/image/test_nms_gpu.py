"""NMSPlan and the namespace nms / batched_nms on the GPU against the float64 greedy reference
of test_nms_cpu.py (torchvision's algorithm, stable descending score order): many overlapping
boxes on an integer grid (so f32 and float64 IoUs compare alike against the threshold), equal
scores, NaN scores, K = 0, K not a multiple of 64, K = 5000, strided boxes and scores,
categories, poisoned outputs and bit-identical reruns."""

import numpy as np
import pytest

from tests._checks import poison_, to_numpy
from tests.image.test_nms_cpu import nms_ref

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "float16", "bfloat16", "float64"]


def _problem(torch, k, dtype, seed, extent=200, size=50, strided=True):
    """Integer-grid boxes (exact in every dtype: < 256) and tied integer scores."""
    rng = np.random.default_rng(seed)
    xy = rng.integers(0, extent, (k, 2))
    wh = rng.integers(0, size, (k, 2))
    b = np.concatenate([xy, xy + wh], axis=1).astype(np.float64)
    s = rng.integers(0, 20, k).astype(np.float64)
    dt = getattr(torch, dtype)
    if strided:
        bb = torch.zeros((k, 8), dtype=dt, device="cuda")
        bb[:, ::2] = torch.from_numpy(b).to(dt).cuda()
        sb = torch.zeros((2 * k,), dtype=dt, device="cuda")
        sb[::2] = torch.from_numpy(s).to(dt).cuda()
        return bb[:, ::2], sb[::2]
    return torch.from_numpy(b).to(dt).cuda(), torch.from_numpy(s).to(dt).cuda()


def _run(torch, boxes, scores, thr, dtype, idxs=None):
    from baracuda_dsl.ops.image.nms import NMSArgs, NMSDescriptor, NMSPlan

    k = boxes.shape[0]
    plan = NMSPlan.select(NMSDescriptor(k, thr, dtype, idxs is not None))
    ws = torch.empty(plan.workspace_size(), dtype=torch.uint8, device="cuda")
    keep = poison_(torch, torch.empty((k,), dtype=torch.int64, device="cuda"))
    cnt = poison_(torch, torch.empty((1,), dtype=torch.int64, device="cuda"))
    plan.run(NMSArgs(boxes, scores, keep, cnt, idxs), workspace=ws)
    torch.cuda.synchronize()
    return keep[:int(cnt.item())].cpu().numpy()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("k", [1, 7, 64, 65, 300, 5000])
def test_nms_matches_reference(dtype, k):
    torch = pytest.importorskip("torch")
    boxes, scores = _problem(torch, k, dtype, k)
    bn, sn = to_numpy(boxes), to_numpy(scores)
    for thr in (0.0, 0.3, 0.5, 0.7) if k < 5000 else (0.5,):
        got = _run(torch, boxes, scores, thr, dtype)
        want = nms_ref(bn, sn, thr)
        assert np.array_equal(got, want), f"k={k} thr={thr}: {got[:20]} vs {want[:20]}"
    again = _run(torch, boxes, scores, 0.5, dtype)
    assert np.array_equal(again, _run(torch, boxes, scores, 0.5, dtype))


@pytest.mark.parametrize("k", [65, 1000])
def test_batched_nms(k):
    torch = pytest.importorskip("torch")
    boxes, scores = _problem(torch, k, "float32", 10 + k, extent=60)
    rng = np.random.default_rng(k)
    ids = rng.integers(0, 4, k)
    base = torch.zeros((3 * k,), dtype=torch.int64, device="cuda")
    base[::3] = torch.from_numpy(ids).cuda()
    got = _run(torch, boxes, scores, 0.4, "float32", base[::3])
    assert np.array_equal(got, nms_ref(to_numpy(boxes), to_numpy(scores), 0.4, ids))


def test_nan_and_degenerate():
    torch = pytest.importorskip("torch")
    b = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 0, 0], [0, 0, 0, 0],
                      [20, 20, 30, 30]], dtype=torch.float32, device="cuda")
    s = torch.tensor([0.5, float("nan"), 0.9, 0.9, 0.1], device="cuda")
    got = _run(torch, b, s, 0.3, "float32")
    assert got.tolist() == nms_ref(to_numpy(b), to_numpy(s), 0.3).tolist() == [1, 2, 3, 4]


def test_empty_and_namespace():
    torch = pytest.importorskip("torch")
    import array_api as xp
    from array_api import _roi_extensions as R

    assert _run(torch, torch.zeros((0, 4), device="cuda"), torch.zeros((0,), device="cuda"), 0.5,
                "float32").shape == (0,)
    boxes, scores = _problem(torch, 777, "float32", 3, strided=False)
    keep = R.nms(xp.from_dlpack(boxes), xp.from_dlpack(scores), 0.45)
    want = nms_ref(to_numpy(boxes), to_numpy(scores), 0.45)
    assert np.array_equal(to_numpy(torch.from_dlpack(keep)), want)
    ids = torch.from_numpy(np.random.default_rng(1).integers(0, 5, 777)).cuda()
    kb = R.batched_nms(xp.from_dlpack(boxes), xp.from_dlpack(scores), xp.from_dlpack(ids), 0.45)
    assert np.array_equal(to_numpy(torch.from_dlpack(kb)),
                          nms_ref(to_numpy(boxes), to_numpy(scores), 0.45, ids.cpu().numpy()))
    e = R.nms(xp.from_dlpack(torch.zeros((0, 4), device="cuda")),
              xp.from_dlpack(torch.zeros((0,), device="cuda")), 0.5)
    assert tuple(e.shape) == (0,)
    with pytest.raises(ValueError):
        R.nms(xp.from_dlpack(boxes), xp.from_dlpack(scores[:5]), 0.5)
