"""Segment reductions, index_add, embedding and embedding_bag (forward + backward) on the GPU
against float64 numpy / torch references: sorted / unsorted ids, empty segments, bad ids
(skipped, status word 1), odd and strided shapes, padding_idx, per_sample_weights, bit-identical
reruns; the prod backward (zero-safe composite) against float64 autograd."""

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}


def _ws(torch, plan):
    n = plan.workspace_size()
    return torch.empty(max(n, 1), dtype=torch.uint8, device="cuda") if n else None


def _status(torch):
    return torch.zeros(1, dtype=torch.int32, device="cuda")


def _close(got, ref, dtype, what=""):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    fin = np.isfinite(ref)
    assert np.array_equal(np.isnan(got), np.isnan(ref)), what
    assert np.array_equal(got[~fin & ~np.isnan(ref)], ref[~fin & ~np.isnan(ref)]), what
    g, r = got[fin], ref[fin]
    den = max(np.linalg.norm(r), 1e-30)
    assert np.linalg.norm(g - r) / den <= TOL[dtype] * 4 or np.allclose(
        g, r, rtol=TOL[dtype] * 4, atol=TOL[dtype] * 4), (what, np.abs(g - r).max())


def _seg_ref(data, ids, S, op):
    """float64 numpy reference; ids wrapped once, bad ids dropped."""
    ids = ids.astype(np.int64).copy()
    ids = np.where(ids < 0, ids + S, ids)
    ok = (ids >= 0) & (ids < S)
    d = data[ok].astype(np.float64)
    i = ids[ok]
    shp = (S,) + data.shape[1:]
    if op in ("sum", "mean"):
        out = np.zeros(shp)
        np.add.at(out, i, d)
        if op == "mean":
            cnt = np.bincount(i, minlength=S).astype(np.float64).reshape((S,) + (1,) * (
                data.ndim - 1))
            out = np.where(cnt > 0, out / np.maximum(cnt, 1), 0.0)
    elif op == "prod":
        out = np.ones(shp)
        np.multiply.at(out, i, d)
    elif op == "max":
        out = np.full(shp, -np.inf)
        np.maximum.at(out, i, d)
    else:
        out = np.full(shp, np.inf)
        np.minimum.at(out, i, d)
    return out, bool((~ok).any())


CASES = [((1000, 7), 37), ((33,), 5), ((4000, 64), 300), ((7, 3, 5), 11), ((0, 4), 3),
         ((50, 4096), 6), ((257, 8), 1)]


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "float16"])
@pytest.mark.parametrize("sorted_", [False, True])
def test_segment_forward(op, dtype, sorted_):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.segment import SegmentArgs, SegmentDescriptor, SegmentPlan

    gen = torch.Generator(device="cpu").manual_seed(1)
    tdt = getattr(torch, dtype)
    for shape, S in CASES:
        if op == "prod":
            data = (1.0 + 0.05 * torch.randn(shape, generator=gen)).to(tdt)
        else:
            data = torch.randn(shape, generator=gen).to(tdt)
        N = shape[0]
        ids = torch.randint(-S, S, (N,), generator=gen)
        if sorted_:
            ids = torch.sort(torch.where(ids < 0, ids + S, ids)).values
        elif N > 4:
            ids[1] = S + 3      # bad
            ids[3] = -S - 2     # bad
        dd = data.cuda()
        out = torch.full((S,) + shape[1:], float("nan"), dtype=tdt, device="cuda")
        st = _status(torch)
        plan = SegmentPlan.select(SegmentDescriptor(shape, S, op, dtype, "int64", sorted_))
        arg = None
        if op in ("max", "min"):
            arg = torch.full((S,) + shape[1:], -7, dtype=torch.int64, device="cuda")
        plan.run(SegmentArgs(dd, ids.cuda(), out, st, arg), workspace=_ws(torch, plan))
        ref, bad = _seg_ref(data.double().numpy(), ids.numpy(), S, op)
        if op in ("max", "min"):
            got = out.cpu().double().numpy()
            inf = float(torch.finfo(tdt).max)
            # empty segments: -inf / +inf (finite dtypes keep inf)
            assert np.array_equal(got, ref) or np.array_equal(np.clip(got, -inf, inf),
                                                              np.clip(ref, -inf, inf)), shape
            a = arg.cpu().numpy()
            idw = np.where(ids.numpy() < 0, ids.numpy() + S, ids.numpy())
            dn = data.double().numpy()
            for s in range(min(S, 5)):
                rows = np.nonzero(idw == s)[0]
                if rows.size == 0:
                    assert (a[s] == -1).all()
                    continue
                vals = dn[rows]
                first = rows[(np.argmax if op == "max" else np.argmin)(vals, axis=0)]
                assert np.array_equal(a[s], first), (shape, s)
        else:
            _close(out.cpu().double().numpy(), ref, dtype, (op, shape))
        assert int(st.item()) == int(bad and not sorted_), shape
        # bit-identical rerun
        out2 = torch.empty_like(out)
        plan.run(SegmentArgs(dd, ids.cuda(), out2), workspace=_ws(torch, plan))
        assert torch.equal(out.view(torch.uint8) if out.numel() else out,
                           out2.view(torch.uint8) if out.numel() else out2)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("op", ["sum", "max", "min", "prod"])
def test_segment_int(op, dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.segment import SegmentArgs, SegmentDescriptor, SegmentPlan

    gen = torch.Generator().manual_seed(2)
    tdt = getattr(torch, dtype)
    N, C, S = 999, 12, 40
    data = torch.randint(-3, 4, (N, C), generator=gen).to(tdt)
    ids = torch.randint(0, S, (N,), generator=gen)
    out = torch.zeros((S, C), dtype=tdt, device="cuda")
    plan = SegmentPlan.select(SegmentDescriptor((N, C), S, op, dtype))
    plan.run(SegmentArgs(data.cuda(), ids.cuda(), out), workspace=_ws(torch, plan))
    ref = torch.zeros((S, C), dtype=torch.int64)
    red = {"sum": "sum", "max": "amax", "min": "amin", "prod": "prod"}[op]
    ref = ref.scatter_reduce(0, ids[:, None].expand(N, C), data.long(), red, include_self=False)
    cnt = torch.bincount(ids, minlength=S)
    if op in ("max", "min"):
        info = torch.iinfo(tdt)
        ref[cnt == 0] = info.min if op == "max" else info.max
    elif op == "prod":
        ref[cnt == 0] = 1
    assert torch.equal(out.cpu().long(), ref.to(tdt).long())


def test_segment_strided_and_int32_ids():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.segment import SegmentArgs, SegmentDescriptor, SegmentPlan

    gen = torch.Generator().manual_seed(3)
    big = torch.randn(600, 2, 40, generator=gen)
    data = big[::2, 1, ::3]                      # (300, 14) strided rows and columns
    ids = torch.randint(0, 17, (600,), generator=gen).int()[::2]
    out_big = torch.full((17, 30), float("nan"), device="cuda")
    out = out_big[:, ::2][:, :14]
    for op in ("sum", "mean", "max"):
        plan = SegmentPlan.select(SegmentDescriptor((300, 14), 17, op, "float32", "int32"))
        plan.run(SegmentArgs(data.cuda(), ids.cuda(), out), workspace=_ws(torch, plan))
        ref, _ = _seg_ref(data.double().numpy(), ids.numpy(), 17, op)
        _close(out.cpu().numpy(), ref, "float32", op)


def test_segment_sorted_unsorted_input_is_safe():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.segment import SegmentArgs, SegmentDescriptor, SegmentPlan

    ids = torch.tensor([3, 0, 2, 2, 1, 0, 9, -1], device="cuda")
    data = torch.ones(8, 4, device="cuda")
    out = torch.zeros(4, 4, device="cuda")
    plan = SegmentPlan.select(SegmentDescriptor((8, 4), 4, "sum", "float32", sorted=True))
    plan.run(SegmentArgs(data, ids, out), workspace=_ws(torch, plan))
    torch.cuda.synchronize()
    assert torch.isfinite(out).all()
    assert (out <= 8).all() and (out >= 0).all()


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_segment_backward(op, dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.segment import (SegmentArgs, SegmentBackwardArgs,
                                                  SegmentBackwardPlan, SegmentDescriptor,
                                                  SegmentPlan)

    gen = torch.Generator().manual_seed(5)
    tdt = getattr(torch, dtype)
    for (N, C), S in (((500, 9), 31), ((64, 256), 7), ((10, 1), 20)):
        data = torch.randn(N, C, generator=gen).to(tdt)
        ids = torch.randint(-S, S, (N,), generator=gen)
        ids[0] = S + 1  # bad: its dx row is 0
        dy = torch.randn(S, C, generator=gen).to(tdt)
        dx = torch.full((N, C), float("nan"), dtype=tdt, device="cuda")
        desc = SegmentDescriptor((N, C), S, op, dtype)
        st = _status(torch)
        plan = SegmentBackwardPlan.select(desc)
        plan.run(SegmentBackwardArgs(data.cuda(), ids.cuda(), None, dy.cuda(), dx, status=st),
                 workspace=_ws(torch, plan))
        assert int(st.item()) == 1
        # reference: first-occurrence extreme gets the gradient
        idw = np.where(ids.numpy() < 0, ids.numpy() + S, ids.numpy())
        ok = (idw >= 0) & (idw < S)
        dn, dyn = data.double().numpy(), dy.double().numpy()
        ref = np.zeros((N, C))
        cnt = np.bincount(idw[ok], minlength=S)
        for k in range(N):
            if not ok[k]:
                continue
            s = idw[k]
            if op == "sum":
                ref[k] = dyn[s]
            elif op == "mean":
                ref[k] = dyn[s] / cnt[s]
        if op in ("max", "min"):
            for s in range(S):
                rows = np.nonzero(ok & (idw == s))[0]
                if rows.size:
                    pos = (np.argmax if op == "max" else np.argmin)(dn[rows], axis=0)
                    ref[rows[pos], np.arange(C)] = dyn[s]
        _close(dx.cpu().double().numpy(), ref, dtype, (op, N, C))
        if op in ("max", "min"):  # with the forward's argmax
            out = torch.empty(S, C, dtype=tdt, device="cuda")
            am = torch.empty(S, C, dtype=torch.int64, device="cuda")
            fp = SegmentPlan.select(desc)
            fp.run(SegmentArgs(data.cuda(), ids.cuda(), out, argmax=am), workspace=_ws(torch, fp))
            dx2 = torch.full_like(dx, float("nan"))
            plan.run(SegmentBackwardArgs(data.cuda(), ids.cuda(), out, dy.cuda(), dx2, am),
                     workspace=_ws(torch, plan))
            assert torch.equal(dx, dx2)


PROD_TOL = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 2e-2, "float16": 4e-3}


def _prod_data(torch, gen, shape, S, tdt, sorted_):
    """Random ±e^(0.3·N(0,1)) data with zeros planted: (segment 0: one zero row, segment 1:
    two, segment 2: three; column 0 of segment 3 one zero; 3 % random zeros), ids with empty
    segments and bad ids (sorted: non-decreasing, the bad ones last)."""
    N = shape[0]
    x = torch.randn(shape, generator=gen, dtype=torch.float64).mul(0.3).exp()
    x = x * (torch.randint(0, 2, shape, generator=gen) * 2 - 1)
    if S:
        ids = torch.randint(-S, S, (N,), generator=gen)
        if N > 8:
            ids[:2] = torch.tensor([S + 1, -S - 3])      # bad
        if sorted_:
            w = torch.where(ids < 0, ids + S, ids)
            w = torch.where((w >= 0) & (w < S), w, torch.full_like(w, S + 1))
            ids = torch.sort(w).values
    else:
        ids = torch.full((N,), 3, dtype=torch.int64)
    w = torch.where(ids < 0, ids + S, ids)
    ok = (w >= 0) & (w < S)
    for s, nz in ((0, 1), (1, 2), (2, 3)):
        rows = torch.nonzero(ok & (w == s)).flatten()
        x[rows[:nz]] = 0.0
    rows = torch.nonzero(ok & (w == 3)).flatten()
    if rows.numel() and x.dim() > 1:
        x[rows[-1], 0] = 0.0
    x[torch.rand(shape, generator=gen) < 0.03] = 0.0
    return x.to(tdt), ids


def _prod_bw_ref(torch, x, ids, dy, S):
    """float64 torch autograd of scatter_reduce(prod, include_self=False); bad ids → 0."""
    N = x.shape[0]
    C = int(np.prod(x.shape[1:], dtype=np.int64))
    x64 = x.double().reshape(N, C)
    w = torch.where(ids < 0, ids + S, ids)
    ok = (w >= 0) & (w < S)
    xo = x64[ok].clone().requires_grad_(True)
    out = torch.zeros(S, C, dtype=torch.float64).scatter_reduce(
        0, w[ok][:, None].expand(-1, C), xo, "prod", include_self=False)
    out.backward(dy.double().reshape(S, C))
    ref = torch.zeros(N, C, dtype=torch.float64)
    ref[ok] = xo.grad
    return ref.reshape(x.shape).numpy(), bool((~ok).any())


def _prod_bw_manual(x, ids, dy, S):
    """float64 loop: dx[k] = dy[s] · ∏ of the other rows of segment s (0 for a bad id)."""
    x, dy = np.asarray(x, np.float64), np.asarray(dy, np.float64)
    w = np.where(ids < 0, ids + S, ids)
    ok = (w >= 0) & (w < S)
    ref = np.zeros_like(x)
    for s in range(S):
        rows = np.nonzero(ok & (w == s))[0]
        for i, k in enumerate(rows):
            ref[k] = dy[s] * np.prod(np.delete(x[rows], i, axis=0), axis=0)
    return ref


def _rel(got, ref):
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert got.shape == ref.shape and np.isfinite(got).all(), (got.shape, ref.shape)
    return np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "float16"])
@pytest.mark.parametrize("sorted_", [False, True])
def test_segment_backward_prod(dtype, sorted_):
    """prod backward (composite) vs float64 autograd: segments with 0 / 1 / 2 / 3 zeros,
    empty segments, bad ids (dx 0, status 1), 3-d data, strided dx and data, no segments."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.segment import (SegmentBackwardArgs, SegmentBackwardPlan,
                                                  SegmentDescriptor)

    gen = torch.Generator().manual_seed(7)
    tdt = getattr(torch, dtype)
    for shape, S in (((500, 9), 31), ((64, 256), 7), ((10, 1), 20), ((300, 3, 5), 40),
                     ((2000, 33), 50), ((0, 4), 3), ((7, 3), 0)):
        x, ids = _prod_data(torch, gen, shape, S, tdt, sorted_)
        dy = torch.randn((S,) + shape[1:], generator=gen).to(tdt)
        ref, bad = _prod_bw_ref(torch, x, ids, dy, S)
        if shape[0] <= 500:   # the autograd reference is the exact derivative
            np.testing.assert_allclose(ref, _prod_bw_manual(x.double().numpy(), ids.numpy(),
                                                            dy.double().numpy(), S),
                                       rtol=1e-12, atol=1e-300)
        plan = SegmentBackwardPlan.select(SegmentDescriptor(shape, S, "prod", dtype,
                                                            sorted=sorted_))
        ws = _ws(torch, plan)
        dx = torch.full(shape, float("nan"), dtype=tdt, device="cuda")
        st = _status(torch)
        xd, idd, dyd = x.cuda(), ids.cuda(), dy.cuda()
        plan.run(SegmentBackwardArgs(xd, idd, None, dyd, dx, status=st), workspace=ws)
        got = dx.cpu().double().numpy()
        if shape[0] * int(np.prod(shape[1:])):
            assert int(st.item()) == int(bad)
            assert _rel(got, ref) <= PROD_TOL[dtype], (shape, S, _rel(got, ref))
            w = np.where(ids.numpy() < 0, ids.numpy() + S, ids.numpy())
            assert not got[(w < 0) | (w >= S)].any()           # bad-id rows: exactly 0
        dx2 = torch.full(shape, float("nan"), dtype=tdt, device="cuda")
        plan.run(SegmentBackwardArgs(xd, idd, None, dyd, dx2), workspace=ws)
        assert torch.equal(dx.nan_to_num(7.0), dx2.nan_to_num(7.0))     # bit-identical rerun
        if len(shape) == 2 and shape[0] and S:
            # strided operands: data and dx are column slices of wider buffers
            N, C = shape
            xw = torch.zeros(N, 2 * C, dtype=tdt, device="cuda")
            xw[:, ::2] = xd
            big = torch.full((N, C + 3), float("nan"), dtype=tdt, device="cuda")
            plan.run(SegmentBackwardArgs(xw[:, ::2], idd, None, dyd, big[:, 1:C + 1]),
                     workspace=ws)
            assert torch.equal(big[:, 1:C + 1], dx)
            assert big[:, 0].isnan().all() and big[:, C + 1:].isnan().all()


def test_segment_backward_prod_exact_small():
    """Hand-checked values: z = 0, 1, 2 zeros in a column, a bad id, an empty segment."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.segment import (SegmentBackwardArgs, SegmentBackwardPlan,
                                                  SegmentDescriptor)

    x = torch.tensor([[2., 0.], [3., 0.], [0., 5.], [4., 0.], [9., 9.]], device="cuda")
    ids = torch.tensor([0, 0, 1, 0, 7], device="cuda")
    dy = torch.tensor([[1., 2.], [3., 4.], [5., 6.]], device="cuda")
    dx = torch.full_like(x, float("nan"))
    plan = SegmentBackwardPlan.select(SegmentDescriptor((5, 2), 3, "prod", "float32"))
    st = _status(torch)
    plan.run(SegmentBackwardArgs(x, ids, None, dy, dx, status=st), workspace=_ws(torch, plan))
    assert dx.cpu().tolist() == [[12., 0.], [8., 0.], [3., 4.], [6., 0.], [0., 0.]]
    assert int(st.item()) == 1


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int64"])
def test_index_add(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.segment import IndexAddArgs, IndexAddDescriptor, IndexAddPlan

    gen = torch.Generator().manual_seed(6)
    tdt = getattr(torch, dtype)
    for shape, axis, n in (((3, 50, 7), 1, 200), ((100,), 0, 1000), ((40, 64), 0, 33),
                           ((5, 6), 1, 0), ((2, 9, 8), -1, 20)):
        M = shape[axis]
        if dtype == "int64":
            out0 = torch.randint(-5, 5, shape, generator=gen)
        else:
            out0 = torch.randn(shape, generator=gen).to(tdt)
        sshape = list(shape)
        sshape[axis] = n
        src = (torch.randint(-5, 5, sshape, generator=gen) if dtype == "int64" else
               torch.randn(sshape, generator=gen)).to(tdt)
        idx = torch.randint(-M, M, (n,), generator=gen)
        alpha = 2 if dtype == "int64" else 0.5
        out = out0.cuda()
        plan = IndexAddPlan.select(IndexAddDescriptor(shape, axis, n, dtype))
        st = _status(torch)
        plan.run(IndexAddArgs(out, idx.cuda(), src.cuda(), alpha, st), workspace=_ws(torch, plan))
        ax = axis % len(shape)
        ref = out0.double().index_add(ax, torch.where(idx < 0, idx + M, idx), src.double(),
                                      alpha=alpha)
        if dtype == "int64":
            assert torch.equal(out.cpu(), ref.long())
        else:
            _close(out.cpu().double().numpy(), ref.numpy(), dtype, shape)
        assert int(st.item()) == 0
        out2 = out0.cuda()
        plan.run(IndexAddArgs(out2, idx.cuda(), src.cuda(), alpha), workspace=_ws(torch, plan))
        assert torch.equal(out, out2)
    # bad indices: skipped + status
    out = torch.zeros(4, 3, device="cuda")
    plan = IndexAddPlan.select(IndexAddDescriptor((4, 3), 0, 3, "float32"))
    st = _status(torch)
    plan.run(IndexAddArgs(out, torch.tensor([0, 7, -9], device="cuda"),
                          torch.ones(3, 3, device="cuda"), 1.0, st), workspace=_ws(torch, plan))
    assert int(st.item()) == 1
    assert out.sum().item() == 3.0


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("pad", [None, 3])
def test_embedding_backward(dtype, pad):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.embedding import (EmbeddingBackwardArgs, EmbeddingBackwardPlan,
                                                    EmbeddingDescriptor)

    gen = torch.Generator().manual_seed(7)
    tdt = getattr(torch, dtype)
    for V, D, T in ((100, 64, 1000), (5000, 33, 300), (7, 4096, 50), (10, 8, 0)):
        ids = torch.randint(0, V, (T,), generator=gen)
        if T > 3:
            ids[2] = 3
        dy = torch.randn(T, D, generator=gen).to(tdt)
        dw = torch.full((V, D), float("nan"), dtype=tdt, device="cuda")
        plan = EmbeddingBackwardPlan.select(EmbeddingDescriptor(V, D, T, dtype, padding_idx=pad))
        plan.run(EmbeddingBackwardArgs(dy.cuda(), ids.cuda(), dw), workspace=_ws(torch, plan))
        w = torch.zeros(V, D, dtype=torch.float64, requires_grad=True)
        torch.nn.functional.embedding(ids, w, padding_idx=pad).backward(dy.double())
        _close(dw.cpu().double().numpy(), w.grad.numpy(), dtype, (V, D, T))
        dw2 = torch.empty_like(dw)
        plan.run(EmbeddingBackwardArgs(dy.cuda(), ids.cuda(), dw2), workspace=_ws(torch, plan))
        assert torch.equal(dw, dw2)


def test_embedding_forward():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.embedding import EmbeddingArgs, EmbeddingDescriptor, EmbeddingPlan

    w = torch.randn(50, 24, device="cuda")
    ids = torch.tensor([0, 49, -1, 7, 50], device="cuda")
    out = torch.full((5, 24), float("nan"), device="cuda")
    st = _status(torch)
    plan = EmbeddingPlan.select(EmbeddingDescriptor(50, 24, 5, "float32"))
    plan.run(EmbeddingArgs(w, ids, out, st), workspace=_ws(torch, plan))
    assert torch.equal(out[:4], w[[0, 49, 49, 7]])
    assert (out[4] == 0).all() and int(st.item()) == 1


def _bag_case(torch, gen, V, D, nb, n, mode, tdt, index, pad, psw, last):
    idx = torch.randint(0, V, (n,), generator=gen)
    if pad is not None and n > 2:
        idx[1] = pad
    cuts = torch.sort(torch.randint(0, n + 1, (nb - 1,), generator=gen)).values
    offsets = torch.cat([torch.zeros(1, dtype=torch.int64), cuts])
    if nb > 2:
        offsets[2] = offsets[1]  # an empty bag
    if last:
        offsets = torch.cat([offsets, torch.tensor([n])])
    w = torch.randn(V, D, generator=gen).to(tdt)
    p = torch.rand(n, generator=gen).to(tdt) if psw else None
    return idx.to(getattr(torch, index)), offsets.to(getattr(torch, index)), w, p


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("pad", [None, 2])
@pytest.mark.parametrize("index", ["int64", "int32"])
def test_embedding_bag(mode, pad, index):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    from baracuda_dsl.ops.segment.embedding import (EmbeddingBagArgs, EmbeddingBagBackwardArgs,
                                                    EmbeddingBagBackwardPlan,
                                                    EmbeddingBagDescriptor, EmbeddingBagPlan)

    gen = torch.Generator().manual_seed(8)
    for dtype in ("float32", "float64"):
        tdt = getattr(torch, dtype)
        for V, D, nb, n, psw, last in ((50, 16, 10, 60, False, False), (300, 33, 7, 500, True,
                                                                        False),
                                       (20, 128, 5, 9, False, True), (9, 4, 3, 0, False, False)):
            psw = psw and mode == "sum"
            idx, ofs, w, p = _bag_case(torch, gen, V, D, nb, n, mode, tdt, index, pad, psw, last)
            desc = EmbeddingBagDescriptor(V, D, n, nb, mode, dtype, index, pad, psw, last)
            out = torch.full((nb, D), float("nan"), dtype=tdt, device="cuda")
            mi = torch.full((nb, D), -5, dtype=torch.int64, device="cuda") if mode == "max" \
                else None
            st = _status(torch)
            plan = EmbeddingBagPlan.select(desc)
            plan.run(EmbeddingBagArgs(w.cuda(), idx.cuda(), ofs.cuda(), out,
                                      p.cuda() if p is not None else None, st, mi),
                     workspace=_ws(torch, plan))
            assert int(st.item()) == 0
            wr = w.double().requires_grad_()
            ref = F.embedding_bag(idx.long(), wr, ofs.long(), mode=mode,
                                  per_sample_weights=p.double() if p is not None else None,
                                  padding_idx=pad, include_last_offset=last)
            _close(out.cpu().double().numpy(), ref.detach().numpy(), dtype, (mode, V, D, n))
            dy = torch.randn(nb, D, generator=gen).to(tdt)
            ref.backward(dy.double())
            dw = torch.full((V, D), float("nan"), dtype=tdt, device="cuda")
            bp = EmbeddingBagBackwardPlan.select(desc)
            bp.run(EmbeddingBagBackwardArgs(dy.cuda(), idx.cuda(), ofs.cuda(), dw,
                                            p.cuda() if p is not None else None, mi),
                   workspace=_ws(torch, bp))
            _close(dw.cpu().double().numpy(), wr.grad.numpy(), dtype, ("bw", mode, V, D, n))


def test_embedding_bag_bad_index():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.embedding import (EmbeddingBagArgs, EmbeddingBagDescriptor,
                                                    EmbeddingBagPlan)

    w = torch.randn(10, 8, device="cuda")
    idx = torch.tensor([1, 99, -1, 4], device="cuda")
    ofs = torch.tensor([0, 2], device="cuda")
    out = torch.empty(2, 8, device="cuda")
    st = _status(torch)
    plan = EmbeddingBagPlan.select(EmbeddingBagDescriptor(10, 8, 4, 2, "sum", "float32"))
    plan.run(EmbeddingBagArgs(w, idx, ofs, out, status=st), workspace=_ws(torch, plan))
    assert int(st.item()) == 1
    assert torch.allclose(out[0], w[1]) and torch.allclose(out[1], w[9] + w[4])
