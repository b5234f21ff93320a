"""Segment / index_add / embedding plans without a GPU: validation, SKU choice, workspace
sizes, SKU space, a numpy emulation of the kernels' index math, cross-compiles."""

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.segment.embedding import (EmbeddingBackwardPlan, EmbeddingBagBackwardPlan,
                                                EmbeddingBagDescriptor, EmbeddingBagPlan,
                                                EmbeddingDescriptor)
from baracuda_dsl.ops.segment.segment import (IndexAddDescriptor, IndexAddPlan, SegmentBackwardPlan,
                                              SegmentDescriptor, SegmentPlan, choose_tps)
from baracuda_dsl.ops.segment.specs import segment as spec

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def test_validation():
    with pytest.raises(bd.UnsupportedError):
        SegmentDescriptor((4, 3), 2, "median", "f32")
    with pytest.raises(bd.UnsupportedError):
        SegmentDescriptor((4, 3), 2, "mean", "int32")
    with pytest.raises(bd.UnsupportedError):
        SegmentDescriptor((4, 3), 2, "sum", "int8")
    with pytest.raises(bd.UnsupportedError):
        SegmentDescriptor((4, 3), 2, "sum", "f32", "int16")
    for bad in (-1, 1.5, True):
        with pytest.raises(bd.InvalidProblemError):
            SegmentDescriptor((4, 3), bad, "sum", "f32")
    with pytest.raises(bd.InvalidProblemError):
        SegmentDescriptor((), 2, "sum", "f32")
    with pytest.raises(bd.InvalidProblemError):
        SegmentDescriptor((4,), 2, "sum", "f32", sorted=1)
    with pytest.raises(bd.UnsupportedError):
        SegmentBackwardPlan.select(SegmentDescriptor((4, 3), 2, "prod", "int32"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        IndexAddDescriptor((4, 3), 2, 5, "f32")
    with pytest.raises(bd.InvalidProblemError):
        EmbeddingDescriptor(10, 4, 3, "f32", padding_idx=10)
    assert EmbeddingDescriptor(10, 4, 3, "f32", padding_idx=-1).padding_idx == 9
    with pytest.raises(bd.UnsupportedError):
        EmbeddingBagDescriptor(10, 4, 3, 2, "median", "f32")
    with pytest.raises(bd.InvalidProblemError):
        EmbeddingBagDescriptor(10, 4, 3, 2, "mean", "f32", per_sample_weights=True)
    with pytest.raises(bd.UnsupportedError):
        EmbeddingDescriptor(10, 4, 3, "int32")


def test_select_knobs_and_workspace():
    p = SegmentPlan.select(SegmentDescriptor((1000, 64), 10, "sum", "f32"), PREF)
    k = dict(p.sku().knobs)
    assert k == dict(op="sum", dtype="f32", index="i64", vec=4, tps=16)
    assert p.precision_guarantee().deterministic
    from baracuda_dsl.plan import align_up as a
    n = 1000
    # keys, sorted keys, perm, offsets (+ no sort scratch for n <= 4096)
    assert p.workspace_size() == a(4 * n) * 2 + a(8 * n) + a(8 * 11)
    ps = SegmentPlan.select(SegmentDescriptor((1000, 64), 10, "sum", "f32", sorted=True), PREF)
    assert ps.workspace_size() == a(4 * n) + a(8 * 11)
    big = SegmentPlan.select(SegmentDescriptor((100000, 7), 10, "max", "bf16"), PREF)
    assert big.workspace_size() > a(4 * 100000) * 2 + a(8 * 100000)  # radix scratch
    assert dict(big.sku().knobs)["vec"] == 1
    e = EmbeddingBackwardPlan.select(EmbeddingDescriptor(128 * 1024, 4096, 16384, "bf16"), PREF)
    assert dict(e.sku().knobs) == dict(op="sum", dtype="bf16", index="i64", vec=8, tps=128)
    assert e.workspace_size() >= a(4 * 16384) * 2 + a(8 * 16384) + a(8 * (128 * 1024 + 1))
    b = EmbeddingBagPlan.select(EmbeddingBagDescriptor(100, 16, 50, 4, "max", "f32", "int32"),
                                PREF)
    assert dict(b.sku().knobs)["index"] == "i32" and b.workspace_size() == 0
    bw = EmbeddingBagPlan.select(EmbeddingBagDescriptor(100, 16, 50, 4, "sum", "f32",
                                                        per_sample_weights=True), PREF)
    assert bw.workspace_size() == a(50 * 4)
    bb = EmbeddingBagBackwardPlan.select(EmbeddingBagDescriptor(100, 16, 50, 4, "mean", "f64"),
                                         PREF)
    assert bb.workspace_size() > 0
    ia = IndexAddPlan.select(IndexAddDescriptor((3, 50, 8), 1, 20, "f16"), PREF)
    assert dict(ia.sku().knobs)["vec"] == 8 and ia.workspace_size() > 0
    assert SegmentBackwardPlan.select(SegmentDescriptor((8, 3), 2, "sum", "f32"),
                                      PREF).workspace_size() == a(32)


def test_tps_rule():
    assert [choose_tps(c, 1) for c in (0, 1, 2, 4, 15, 16, 31, 32, 127, 128, 4096)] == [
        1, 1, 1, 4, 4, 16, 16, 32, 32, 128, 128]
    assert choose_tps(4096, 8) == 128 and choose_tps(64, 4) == 16 and choose_tps(32, 4) == 4


def test_sku_space():
    from baracuda_dsl.ops import get_template

    n_red = (4 * 5 + 2 * 4) * 2 * 2 * 5   # (float ops + int ops) × index × vec × tps
    for arch in ("sm80", "sm89", "sm90a"):
        assert len(get_template("segment_reduce").skus(arch)) == n_red == 560
        assert len(get_template("segment_bw").skus(arch)) == 3 * 4 + 2 * 2
        assert len(get_template("segment_keys").skus(arch)) == 2
        assert len(get_template("segment_offsets").skus(arch)) == 1
        assert len(get_template("segment_bag").skus(arch)) == 8


# ------------------------------------------------------------------ numpy emulation
def _keys(ids, m):
    v = np.where(ids < 0, ids + m, ids)
    bad = (v < 0) | (v >= m)
    return np.where(bad, m, v).astype(np.int32), bool(bad.any())


def _offsets(skeys, m, rng=None):
    """The offsets kernel: off[s] = binary-search lower bound of s in the keys, s ∈ [0, m]."""
    n = len(skeys)
    off = np.empty(m + 1, np.int64)
    for s in range(m + 1):
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) // 2
            if skeys[mid] < s:
                lo = mid + 1
            else:
                hi = mid
        off[s] = lo
    return off


def _reduce(src, perm, skeys, off, m_seg, op):
    n = len(skeys)
    out = np.zeros((m_seg,) + src.shape[1:])
    for s in range(m_seg):
        lo = min(max(int(off[s]), 0), n)
        hi = min(max(int(off[s + 1]), lo), n)
        rows = [perm[k] if perm is not None else k for k in range(lo, hi) if skeys[k] == s]
        assert all(0 <= r < len(src) for r in rows)
        vals = src[rows]
        if op == "sum":
            out[s] = vals.sum(0)
        else:
            out[s] = vals.max(0) if len(rows) else -np.inf
    return out


@pytest.mark.parametrize("seed", range(4))
def test_emulated_pipeline(seed):
    rng = np.random.default_rng(seed)
    N, S, C = 300, 23, 3
    ids = rng.integers(-S - 3, S + 3, N)
    src = rng.standard_normal((N, C))
    keys, bad = _keys(ids, S)
    perm = np.argsort(keys, kind="stable")
    skeys = keys[perm]
    off = _offsets(skeys, S)
    assert (np.diff(off) >= 0).all() and off[S] == (keys < S).sum()
    w = np.where(ids < 0, ids + S, ids)
    ok = (w >= 0) & (w < S)
    ref = np.zeros((S, C))
    np.add.at(ref, w[ok], src[ok])
    np.testing.assert_allclose(_reduce(src, perm, skeys, off, S, "sum"), ref, rtol=1e-12)
    assert bad == bool((~ok).any())
    # sorted=True fed unsorted ids: never out of bounds, every row at most once
    off2 = _offsets(keys, S, rng)
    got = _reduce(np.ones((N, 1)), None, keys, off2, S, "sum")
    assert got.sum() <= ok.sum() and (got >= 0).all()
    # sorted=True with sorted ids (bad ones at the end) is exact
    sk = np.sort(keys)
    np.testing.assert_allclose(_reduce(src[np.argsort(keys, kind="stable")], None, sk,
                                       _offsets(sk, S), S, "sum"), ref, rtol=1e-12)


def test_emulated_bag_map():
    """The map kernel's binary search: position p → the last bag b with offsets[b] <= p whose
    clamped range holds p."""
    offsets = np.array([0, 2, 2, 5, 9])
    n, nb = 11, 5   # the last bag ends at n (include_last_offset=False)

    def bag(p):
        lo, hi = 0, nb
        while lo < hi:
            mid = (lo + hi) // 2
            if offsets[mid] <= p:
                lo = mid + 1
            else:
                hi = mid
        b = lo - 1
        end = offsets[b + 1] if b + 1 < nb else n
        return b if b >= 0 and offsets[b] <= p < end else nb

    assert [bag(p) for p in range(n)] == [0, 0, 2, 2, 2, 3, 3, 3, 3, 4, 4]


def test_flags_distinct():
    fl = [spec.F_PERM, spec.F_KEYS, spec.F_W, spec.F_ACC, spec.F_ARGOUT, spec.F_STATUS,
          spec.F_WRAP, spec.F_PAD_ROW, spec.F_PAD_SEG, spec.F_ARGIN, spec.F_ZERO_EMPTY]
    assert len(set(fl)) == len(fl) and all(f & (f - 1) == 0 for f in fl)


# ------------------------------------------------------------------ prod backward
_ACC = {"f32": "f32", "f16": "f32", "bf16": "f32", "f64": "f64"}


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16", "f64"])
@pytest.mark.parametrize("sorted_", [False, True])
def test_prod_backward_select_and_workspace(dt, sorted_):
    from baracuda_dsl.plan import align_up as a

    N, C, S = 1000, 6, 17
    p = SegmentBackwardPlan.select(SegmentDescriptor((N, C), S, "prod", dt, sorted=sorted_),
                                   PREF)
    k = dict(p.sku().knobs)
    assert k == dict(op="sum", dtype=_ACC[dt]) and p.sku().template == "segment_bw"
    assert p.precision_guarantee().deterministic
    c = 8 if dt == "f64" else 4
    pipe = a(4 * N) + (0 if sorted_ else a(4 * N) + a(8 * N)) + a(8 * (S + 1))
    tmp = a(N * C) + 3 * a(N * C * c) + (2 if dt in ("f32", "f64") else 3) * a(S * C * c)
    assert p.workspace_size() == pipe + tmp   # n <= 4096: no radix scratch


def _fake_run(launches, arch, dt, N, C, S, sorted_, dx_row_stride=None):
    """Run the prod backward with fake device views, ``launches`` recording every launch:
    its (template, frozen knobs, argument count, grid)."""
    from baracuda_dsl import dtypes as D
    from baracuda_dsl.ops.segment.segment import SegmentBackwardArgs
    from baracuda_dsl.tensor import TensorView, contiguous_strides
    from baracuda_dsl.vocabulary import Workspace

    launches.clear()
    nxt = [1 << 32]

    def tv(shape, dtype, strides=None):
        ptr = nxt[0]
        nxt[0] += 1 << 28
        return TensorView._trusted(ptr, shape, strides or contiguous_strides(shape), dtype, 0,
                                   None)

    d = D.dtype(dt)
    pref = bd.PlanPreference(arch=arch)
    plan = SegmentBackwardPlan.select(SegmentDescriptor((N, C), S, "prod", d, sorted=sorted_),
                                      pref)
    dx = tv((N, C), d, None if dx_row_stride is None else (dx_row_stride, 1))
    plan.run(SegmentBackwardArgs(tv((N, C), d), tv((N,), D.int64), None, tv((S, C), d), dx),
             workspace=Workspace(1 << 40, plan.workspace_size()))
    return [(name, tuple(sorted(knobs.items())), len(args), grid)
            for name, knobs, grid, args, _ in launches]


@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM90A])
@pytest.mark.parametrize("dt", ["f32", "f16", "bf16", "f64"])
def test_prod_backward_launches_are_prebuilt_skus(launches, arch, dt):
    """Every kernel the prod-backward composite launches (id pipeline, sort, segment sum /
    prod, the per-row gather, the elementwise steps) is a SKU of its template's declared space
    for the arch, with the template's argument count."""
    from baracuda_dsl.ops import get_template

    acc = _ACC[dt]
    for N, C, S, srt, rs in ((5000, 6, 17, False, None), (300, 64, 9, True, None),
                             (300, 64, 9, False, 80), (7, 3, 0, False, None),
                             (40, 1, 100, True, None)):
        rec = _fake_run(launches, arch, dt, N, C, S, srt, rs)
        assert rec
        for name, knobs, nargs, grid in rec:
            t = get_template(name)
            assert knobs in set(t.skus(arch.value)), (name, knobs)
            assert nargs == len(t.abi(t.thaw(knobs))), (name, nargs)
            assert all(g >= 1 for g in grid), (name, grid)
        ew = {(dict(k)["op"], dict(k)["dtype"], dict(k).get("out")) for n, k, _, _ in rec
              if n == "elementwise"}
        want = {("equal", dt, None), ("where", acc, None), ("cast", "bool", acc),
                ("add", acc, None), ("equal", acc, None), ("divide", acc, None)}
        if S:
            want.add(("multiply", acc, None))
        if dt != acc:
            want |= {("cast", dt, acc), ("cast", acc, dt)}
        assert ew == want, ew
        red = {(dict(k)["op"], dict(k)["dtype"]) for n, k, _, _ in rec
               if n == "segment_reduce"}
        assert red == (set() if S == 0 else {("sum", acc), ("prod", acc)})
        gat = [dict(k) for n, k, _, _ in rec if n == "segment_bw"]
        assert gat == [dict(op="sum", dtype=acc)] * 2
        assert any(n.startswith("radix") for n, *_ in rec) == (not srt and N > 4096)
        if rs is not None:   # strided dx: the last step writes it on a strided path
            assert dict(rec[-1][1])["path"] in ("s4", "v4")


def _prod_bw_emulated(x, ids, dy, S, ct):
    """numpy emulation of the composite, step by step in the accumulator dtype ``ct``."""
    keys, _ = _keys(ids, S)
    mask = x == 0
    a = np.where(mask, ct(1), x.astype(ct))
    b = mask.astype(ct)
    pz = np.zeros((S,) + x.shape[1:], ct)
    pp = np.ones((S,) + x.shape[1:], ct)
    for k in range(len(x)):        # in increasing k, like the kernel over the sorted rows
        if keys[k] < S:
            pz[keys[k]] += b[k]
            pp[keys[k]] *= a[k]
    pz = pz + ct(1)
    pp = pp * dy.astype(ct)
    b = b + ct(1)
    ok = keys < S
    gz = np.where(ok[:, None], pz[np.minimum(keys, max(S - 1, 0))], ct(0)) if S else \
        np.zeros_like(b)
    cond = gz == b
    gq = np.where(ok[:, None], pp[np.minimum(keys, max(S - 1, 0))], ct(0)) if S else \
        np.zeros_like(b)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = gq / a
    return np.where(cond, t, ct(0))


@pytest.mark.parametrize("seed", range(3))
def test_prod_backward_emulated_vs_torch(seed):
    """The composite's formula (emulated in numpy) equals torch's scatter_reduce prod
    backward (float64 autograd): segments with 0, 1, 2+ zeros, empty segments, bad ids."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    N, C, S = 200, 5, 23
    x = rng.choice([-1.0, 1.0], (N, C)) * np.exp(0.3 * rng.standard_normal((N, C)))
    ids = rng.integers(-S, S + 3, N)
    ids[:3] = [S + 1, -S - 2, S]            # bad
    w = np.where(ids < 0, ids + S, ids)
    ok = (w >= 0) & (w < S)
    for s, nz in ((0, 1), (1, 2), (2, 3)):   # segments with 1, 2, 3 zeros per column
        rows = np.nonzero(ok & (w == s))[0]
        x[rows[:nz], :] = 0.0
    x[rng.random((N, C)) < 0.03] = 0.0
    x[~ok] = 0.0                               # bad rows: zero data must still give 0
    dy = rng.standard_normal((S, C))
    got = _prod_bw_emulated(x, ids, dy, S, np.float64)
    xt = torch.tensor(x[ok], requires_grad=True)
    idx = torch.tensor(w[ok])[:, None].expand(-1, C)
    out = torch.zeros(S, C, dtype=torch.float64).scatter_reduce(0, idx, xt, "prod",
                                                                include_self=False)
    out.backward(torch.tensor(dy))
    ref = np.zeros((N, C))
    ref[ok] = xt.grad.numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-300)
    got32 = _prod_bw_emulated(x.astype(np.float32), ids, dy.astype(np.float32), S, np.float32)
    assert np.linalg.norm(got32 - ref) / np.linalg.norm(ref) < 1e-5


@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    samples = [("segment_reduce", dict(op="sum", dtype="bf16", index="i64", vec=8, tps=128)),
               ("segment_reduce", dict(op="max", dtype="f32", index="i32", vec=1, tps=8)),
               ("segment_bw", dict(op="mean", dtype="f16")),
               ("segment_keys", dict(kind="keys", index="i32")),
               ("segment_offsets", dict(kind="offsets")),
               ("segment_bag", dict(kind="map", index="i64", acc="f32"))]
    for name, knobs in samples:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] in (128, 256)


def _fake_view(shape, dt, k):
    from baracuda_dsl import dtypes as D
    from baracuda_dsl.tensor import TensorView, contiguous_strides

    return TensorView._trusted((k + 1) << 32, tuple(shape), contiguous_strides(shape),
                               D.dtype(dt), 0, None)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_launches_are_prebuilt_skus(launches, mode):
    """Every kernel the embedding / embedding_bag plans launch (id pipeline, sort, bag helpers,
    segment reduction, weight staging) is a SKU of its template's space with its ABI's
    argument count."""
    from baracuda_dsl.ops import get_template
    from baracuda_dsl.ops.segment.embedding import (EmbeddingArgs, EmbeddingBackwardArgs,
                                                    EmbeddingBagArgs, EmbeddingBagBackwardArgs,
                                                    EmbeddingPlan)
    from baracuda_dsl.vocabulary import Workspace

    V, dim, n, B = 10, 16, 9, 3
    views = iter(range(100))

    def tv(shape, dt="f32"):
        return _fake_view(shape, dt, next(views))

    def run(plan, args):
        ws = plan.workspace_size()
        plan.run(args, workspace=Workspace(1 << 40, ws) if ws else None)

    ed = EmbeddingDescriptor(V, dim, n, "f32", padding_idx=2)
    run(EmbeddingPlan.select(ed, PREF), EmbeddingArgs(tv((V, dim)), tv((n,), "i64"),
                                                      tv((n, dim))))
    run(EmbeddingBackwardPlan.select(ed, PREF),
        EmbeddingBackwardArgs(tv((n, dim)), tv((n,), "i64"), tv((V, dim))))
    bdsc = EmbeddingBagDescriptor(V, dim, n, B, mode, "f32", per_sample_weights=mode == "sum")
    psw = tv((n,)) if mode == "sum" else None
    mi = tv((B, dim), "i64") if mode == "max" else None
    run(EmbeddingBagPlan.select(bdsc, PREF),
        EmbeddingBagArgs(tv((V, dim)), tv((n,), "i64"), tv((B,), "i64"), tv((B, dim)), psw,
                         None, mi))
    run(EmbeddingBagBackwardPlan.select(bdsc, PREF),
        EmbeddingBagBackwardArgs(tv((B, dim)), tv((n,), "i64"), tv((B,), "i64"), tv((V, dim)),
                                 psw, mi))
    names = {name for name, *_ in launches}
    assert {"index_rows", "segment_keys", "segment_offsets", "segment_reduce",
            "segment_bag"} <= names
    for name, knobs, grid, args, _ in launches:
        t = get_template(name)
        frozen = tuple(sorted(knobs.items()))
        assert frozen in set(t.skus("sm90a")), (name, knobs)
        assert len(args) == len(t.abi(t.thaw(frozen))), (name, len(args))
        assert all(g >= 1 for g in grid), (name, grid)
