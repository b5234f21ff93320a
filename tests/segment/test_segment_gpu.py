"""Segment reductions, index_add, embedding and embedding_bag (forward + backward) on the GPU
against float64 numpy / torch references: sorted / unsorted ids, empty segments (the documented
identity), bad ids (skipped, status word 1), odd and strided shapes, padding_idx,
per_sample_weights, bit-identical reruns; the prod backward (zero-safe composite) against float64
autograd.

Every element is checked (tests/_checks.py) against outputs poisoned with NaN (ints: a sentinel
that is not the expected value) — except index_add's ``out``, which the plan accumulates into.
Bounds: the rounding into the output dtype relative to each result, plus the accumulation's
rounding — a segment's rows are folded in a fixed order, at most ``count`` rounded adds on any
path — relative to the magnitude of the terms (the same reduction of |data|)."""

import numpy as np
import pytest

from tests._checks import assert_within, assert_equal, bounds, eps, poison, to_numpy

pytestmark = pytest.mark.gpu

#: accumulator dtype (halves and f32 accumulate in float32, f64 in float64)
CT = {"float32": "float32", "float64": "float64", "float16": "float32", "bfloat16": "float32"}


def _ws(torch, plan):
    n = plan.workspace_size()
    return torch.empty(max(n, 1), dtype=torch.uint8, device="cuda") if n else None


def _status(torch):
    return torch.zeros(1, dtype=torch.int32, device="cuda")


_check = assert_within   # rel per element + the op's own error bound abs_err


def _counts(ids, S, ndim):
    """Rows per segment (ids wrapped once, bad ids dropped), shaped to broadcast over the data's
    trailing dims."""
    ids = np.asarray(ids, np.int64)
    w = np.where(ids < 0, ids + S, ids)
    ok = (w >= 0) & (w < S)
    return np.bincount(w[ok], minlength=S).astype(np.float64).reshape((S,) + (1,) * (ndim - 1))


def _check_segment(out, data, ids, S, op, dtype, what=""):
    """A SegmentPlan forward against :func:`_seg_ref` (float64 of the same data): sum — count·u·Σ|x|
    of the segment; mean — the sum's error / count, plus the division; prod — count·u relative;
    max / min — exact.  Empty segments must hold the documented identity (0, 0, 1, −inf, +inf)."""
    ref, _ = _seg_ref(data, ids, S, op)
    cnt = _counts(ids, S, data.ndim)
    u = eps(CT[dtype])
    if op in ("max", "min"):
        assert_equal(out, ref, what=str(what))
    elif op == "sum":
        _check(out, ref, dtype, bounds(dtype)[0], cnt * u * _seg_ref(np.abs(data), ids, S, "sum")[0],
               what)
    elif op == "mean":
        _check(out, ref, dtype, bounds(dtype, compute=CT[dtype], terms=1)[0],
               cnt * u * _seg_ref(np.abs(data), ids, S, "mean")[0], what)
    else:
        _check(out, ref, dtype, bounds(dtype)[0], cnt * u * np.abs(ref), what)
    empty = np.broadcast_to(cnt == 0, ref.shape)
    if empty.any():
        ident = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[op]
        assert_equal(to_numpy(out)[empty], np.full(int(empty.sum()), ident),
                     what=f"{what}: empty segments hold the identity")


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
        out = poison(torch, (S,) + shape[1:], tdt)
        st = _status(torch)
        plan = SegmentPlan.select(SegmentDescriptor(shape, S, op, dtype, "int64", sorted_))
        arg = None
        if op in ("max", "min"):
            arg = poison(torch, (S,) + shape[1:], torch.int64)
        plan.run(SegmentArgs(dd, ids.cuda(), out, st, arg), workspace=_ws(torch, plan))
        _, bad = _seg_ref(data.double().numpy(), ids.numpy(), S, op)
        _check_segment(out, data.double().numpy(), ids.numpy(), S, op, dtype, (op, shape))
        if op in ("max", "min"):
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
        assert int(st.item()) == int(bad and not sorted_), shape
        # bit-identical rerun
        out2 = poison(torch, tuple(out.shape), tdt)
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
    ids[ids == 5] = 6           # segments 5 and S − 1 are empty: they get the identity
    ids[ids == S - 1] = 0
    # poison: the dtype's max, except for min, whose empty-segment identity is that max
    out = torch.full((S, C), torch.iinfo(tdt).min if op == "min" else torch.iinfo(tdt).max,
                     dtype=tdt, device="cuda")
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
    ident = {"sum": 0, "prod": 1, "max": torch.iinfo(tdt).min, "min": torch.iinfo(tdt).max}[op]
    assert (out[[5, S - 1]].cpu().long() == ident).all(), "empty segments: the identity"


def test_segment_strided_and_int32_ids():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.segment import SegmentArgs, SegmentDescriptor, SegmentPlan

    gen = torch.Generator().manual_seed(3)
    big = torch.randn(600, 2, 40, generator=gen)
    data = big[::2, 1, ::3]                      # (300, 14) strided rows and columns
    ids = torch.randint(0, 17, (600,), generator=gen).int()[::2]
    for op in ("sum", "mean", "max"):
        out_big = poison(torch, (17, 30), torch.float32)
        out = out_big[:, ::2][:, :14]
        plan = SegmentPlan.select(SegmentDescriptor((300, 14), 17, op, "float32", "int32"))
        plan.run(SegmentArgs(data.cuda(), ids.cuda(), out), workspace=_ws(torch, plan))
        _check_segment(out, data.double().numpy(), ids.numpy(), 17, op, "float32", op)
        assert out_big[:, 1::2].isnan().all() and out_big[:, 28:].isnan().all(), "gaps written"


def test_segment_sorted_unsorted_input_is_safe():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.segment import SegmentArgs, SegmentDescriptor, SegmentPlan

    ids = torch.tensor([3, 0, 2, 2, 1, 0, 9, -1], device="cuda")
    data = torch.ones(8, 4, device="cuda")
    out = poison(torch, (4, 4), torch.float32)     # every segment is still written
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
        # sum / max / min route dy rows unchanged (one rounding at most); mean: dy / count
        rel = bounds(dtype, compute=CT[dtype], terms=1 if op == "mean" else 0)[0]
        _check(dx, ref, dtype, rel, 0.0, (op, N, C))
        if op in ("max", "min"):  # with the forward's argmax
            out = poison(torch, (S, C), tdt)
            am = poison(torch, (S, C), torch.int64)
            fp = SegmentPlan.select(desc)
            fp.run(SegmentArgs(data.cuda(), ids.cuda(), out, argmax=am), workspace=_ws(torch, fp))
            dx2 = torch.full_like(dx, float("nan"))
            plan.run(SegmentBackwardArgs(data.cuda(), ids.cuda(), out, dy.cuda(), dx2, am),
                     workspace=_ws(torch, plan))
            assert torch.equal(dx, dx2)


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


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "float16"])
@pytest.mark.parametrize("sorted_", [False, True])
def test_segment_backward_prod(dtype, sorted_):
    """prod backward (composite) vs float64 autograd: segments with 0 / 1 / 2 / 3 zeros,
    empty segments, bad ids (dx 0, status 1), 3-d data, strided dx and data, no segments.
    dx = dy·(product of the segment's other rows), computed (ops/segment/segment.py) as
    dy·(segment product of where(x == 0, 1, x)) / where(x == 0, 1, x) in the accumulator dtype
    and rounded once: count − 1 products, × dy, the division — (count + 2)·u relative, no
    cancellation (products only)."""
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
        dx = poison(torch, shape, tdt)
        st = _status(torch)
        xd, idd, dyd = x.cuda(), ids.cuda(), dy.cuda()
        plan.run(SegmentBackwardArgs(xd, idd, None, dyd, dx, status=st), workspace=ws)
        got = dx.cpu().double().numpy()
        if shape[0] * int(np.prod(shape[1:])):
            assert int(st.item()) == int(bad)
            w = np.where(ids.numpy() < 0, ids.numpy() + S, ids.numpy())
            okw = (w >= 0) & (w < S)
            rows = np.zeros(shape[0])                       # the row's segment count
            rows[okw] = np.bincount(w[okw], minlength=S)[w[okw]]
            rows = rows.reshape((shape[0],) + (1,) * (len(shape) - 1))
            _check(dx, ref, dtype, bounds(dtype)[0],
                   (rows + 2) * eps(CT[dtype]) * np.abs(ref), (shape, S))
            assert not got[~okw].any()                       # bad-id rows: exactly 0
        dx2 = poison(torch, shape, tdt)
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
            # out (accumulated into, read and written once per row) + alpha·Σ src: per element
            # count + 1 adds and the alpha products, relative to |out0| + |alpha|·Σ|src|
            iw = torch.where(idx < 0, idx + M, idx)
            mag = out0.double().abs().index_add(ax, iw, src.double().abs(), alpha=abs(alpha))
            cnt = torch.zeros(shape, dtype=torch.float64).index_add(
                ax, iw, torch.ones(sshape, dtype=torch.float64))
            _check(out, ref, dtype, bounds(dtype)[0],
                   ((cnt + 2) * eps(CT[dtype]) * mag).numpy(), shape)
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
        dw = poison(torch, (V, D), tdt)
        plan = EmbeddingBackwardPlan.select(EmbeddingDescriptor(V, D, T, dtype, padding_idx=pad))
        plan.run(EmbeddingBackwardArgs(dy.cuda(), ids.cuda(), dw), workspace=_ws(torch, plan))
        w = torch.zeros(V, D, dtype=torch.float64, requires_grad=True)
        torch.nn.functional.embedding(ids, w, padding_idx=pad).backward(dy.double())
        # dw[v] = Σ dy rows with id v: count(v)·u relative to Σ|dy| of those rows
        wa = torch.zeros(V, D, dtype=torch.float64, requires_grad=True)
        torch.nn.functional.embedding(ids, wa, padding_idx=pad).backward(dy.double().abs())
        cnt = torch.bincount(ids, minlength=V).double()[:, None]
        _check(dw, w.grad, dtype, bounds(dtype)[0],
               (cnt * eps(CT[dtype]) * wa.grad).numpy(), (V, D, T))
        dw2 = poison(torch, (V, D), tdt)
        plan.run(EmbeddingBackwardArgs(dy.cuda(), ids.cuda(), dw2), workspace=_ws(torch, plan))
        assert torch.equal(dw, dw2)


def test_embedding_forward():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.embedding import EmbeddingArgs, EmbeddingDescriptor, EmbeddingPlan

    w = torch.randn(50, 24, device="cuda")
    ids = torch.tensor([0, 49, -1, 7, 50], device="cuda")
    out = poison(torch, (5, 24), torch.float32)
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

    def leaf(t):
        # an independent float64 leaf per autograd pass: for a float64 ``w``, ``w.double()`` IS
        # ``w``, so ``w.double().requires_grad_()`` twice aliases one leaf (whose .grad then
        # accumulates both backward passes: the max reference came out dy + |dy|) and
        # ``w.double().abs()`` is a non-leaf (.grad None)
        return t.detach().to(torch.float64, copy=True).requires_grad_()

    gen = torch.Generator().manual_seed(8)
    for dtype in ("float32", "float64"):
        tdt = getattr(torch, dtype)
        for V, D, nb, n, psw, last in ((50, 16, 10, 60, False, False), (300, 33, 7, 500, True,
                                                                        False),
                                       (20, 128, 5, 9, False, True), (9, 4, 3, 0, False, False)):
            psw = psw and mode == "sum"
            idx, ofs, w, p = _bag_case(torch, gen, V, D, nb, n, mode, tdt, index, pad, psw, last)
            desc = EmbeddingBagDescriptor(V, D, n, nb, mode, dtype, index, pad, psw, last)
            out = poison(torch, (nb, D), tdt)
            mi = poison(torch, (nb, D), torch.int64) if mode == "max" else None
            st = _status(torch)
            plan = EmbeddingBagPlan.select(desc)
            plan.run(EmbeddingBagArgs(w.cuda(), idx.cuda(), ofs.cuda(), out,
                                      p.cuda() if p is not None else None, st, mi),
                     workspace=_ws(torch, plan))
            assert int(st.item()) == 0
            wr = leaf(w)
            ref = F.embedding_bag(idx.long(), wr, ofs.long(), mode=mode,
                                  per_sample_weights=p.double() if p is not None else None,
                                  padding_idx=pad, include_last_offset=last)
            # a bag sums <= n rows (× per_sample_weight; mean: / count): (n + 2)·u relative to
            # the same bag of |weight| (× |psw|); max selects: exact
            pa = p.double().abs() if p is not None else None
            terms = 0 if mode == "max" else n + 2
            wa = leaf(w.abs())
            mag = F.embedding_bag(idx.long(), wa, ofs.long(), mode=mode, per_sample_weights=pa,
                                  padding_idx=pad, include_last_offset=last)
            _check(out, ref.detach(), dtype, bounds(dtype)[0],
                   (terms * eps(dtype) * mag.detach()).numpy(), (mode, V, D, n))
            dy = torch.randn(nb, D, generator=gen).to(tdt)
            ref.backward(dy.double())
            dw = poison(torch, (V, D), tdt)
            bp = EmbeddingBagBackwardPlan.select(desc)
            bp.run(EmbeddingBagBackwardArgs(dy.cuda(), idx.cuda(), ofs.cuda(), dw,
                                            p.cuda() if p is not None else None, mi),
                   workspace=_ws(torch, bp))
            # dw[v] = Σ over v's positions of dy[bag]·psw (/ count): occurrences(v) + 2 roundings
            # relative to the same sum of |dy|·|psw|; max routes dy to the forward's max rows
            if mode == "max":
                wr2 = leaf(w)
                F.embedding_bag(idx.long(), wr2, ofs.long(), mode=mode, padding_idx=pad,
                                include_last_offset=last).backward(dy.double().abs())
                gmag = wr2.grad
            else:
                mag.backward(dy.double().abs())
                gmag = wa.grad
            occ = float(torch.bincount(idx.long(), minlength=V).max()) if n else 0.0
            _check(dw, wr.grad, dtype, bounds(dtype)[0],
                   ((occ + 2) * eps(dtype) * gmag).numpy(), ("bw", mode, V, D, n))


def test_embedding_bag_bad_index():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.segment.embedding import (EmbeddingBagArgs, EmbeddingBagDescriptor,
                                                    EmbeddingBagPlan)

    w = torch.randn(10, 8, device="cuda")
    idx = torch.tensor([1, 99, -1, 4], device="cuda")
    ofs = torch.tensor([0, 2], device="cuda")
    out = poison(torch, (2, 8), torch.float32)
    st = _status(torch)
    plan = EmbeddingBagPlan.select(EmbeddingBagDescriptor(10, 8, 4, 2, "sum", "float32"))
    plan.run(EmbeddingBagArgs(w, idx, ofs, out, status=st), workspace=_ws(torch, plan))
    assert int(st.item()) == 1
    wd = w.double()
    ref = torch.stack([wd[1], wd[9] + wd[4]])      # 99 skipped, −1 wraps to 9
    # one f32 add at most: 2u relative to the terms (|w9| + |w4|)
    _check(out, ref, "float32", bounds("float32")[0],
           2 * eps("float32") * torch.stack([wd[1].abs(), wd[9].abs() + wd[4].abs()]), "bag")
