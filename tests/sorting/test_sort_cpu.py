"""Sorting family without a GPU: descriptor validation, SKU space, the order-preserving key
transform, the bitonic small-row network and the radix sort's histogram / scan / stable
scatter logic emulated in numpy exactly as the kernels index, checked against numpy's stable
argsort; the searchsorted binary search; and a cross-compile sample for sm80 / sm89 / sm90a."""

import math

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.sorting.searchsorted import (SearchsortedArgs, SearchsortedDescriptor,
                                                   SearchsortedPlan)
from baracuda_dsl.ops.sorting.sort import (ArgsortDescriptor, ArgsortPlan, KthvalueDescriptor,
                                           KthvaluePlan, MsortDescriptor, MsortPlan, SortArgs,
                                           SortDescriptor, SortPlan, TopkDescriptor, TopkPlan,
                                           radix_layout, row_geometry)
from baracuda_dsl.ops.sorting.sort_bw import (KthvalueBackwardDescriptor, KthvalueBackwardPlan,
                                              SortBackwardDescriptor, SortBackwardPlan,
                                              TopkBackwardDescriptor, TopkBackwardPlan)
from baracuda_dsl.ops.sorting.specs import sort as spec

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)
NP = {"bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
      "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16,
      "f32": np.float32, "f64": np.float64}
UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


# --------------------------------------------------------------------------- key transform
def make_key(x, short, desc=False):
    """numpy mirror of sort_common.make_key (bf16 given as its uint16 bit patterns)."""
    bits = spec.KEY_BITS[short]
    full = (1 << bits) - 1
    sign = 1 << (bits - 1)
    u = (x if short == "bf16" else np.asarray(x)).view(UINT[bits]).astype(np.uint64)
    if short in ("i8", "i16", "i32", "i64"):
        k = u ^ np.uint64(sign)
    elif short in ("f16", "bf16", "f32", "f64"):
        inf = {"f16": 0x7C00, "bf16": 0x7F80, "f32": 0x7F800000, "f64": 0x7FF0000000000000}[short]
        a = u & np.uint64(sign - 1)
        neg = (u & np.uint64(sign)) != 0
        k = np.where(neg, (~u) & np.uint64(full), u | np.uint64(sign))
        k = np.where(a == 0, np.uint64(sign), k)
        k = np.where(a > np.uint64(inf), np.uint64(full), k)
    else:
        k = u
    return ((~k) & np.uint64(full)) if desc else k


def _ref_order(x, desc):
    """Python stable sort reference: NaN last ascending, first descending; ±0 equal."""
    xs = [float(v) if np.issubdtype(x.dtype, np.floating) else int(v) for v in x]
    key = [(1, 0.0) if (isinstance(v, float) and math.isnan(v)) else (0, v) for v in xs]
    return sorted(range(len(xs)), key=lambda i: key[i], reverse=desc)


def _sample(rng, short, n):
    if short == "bool":
        return rng.integers(0, 2, n).astype(np.bool_)
    if short in ("f16", "f32", "f64"):
        x = rng.integers(-5, 6, n).astype(NP[short]) * NP[short](0.5)
        sp = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0], NP[short])
        m = rng.random(n) < 0.3
        x[m] = sp[rng.integers(0, len(sp), m.sum())]
        return x
    info = np.iinfo(NP[short])
    x = rng.integers(-3, 4, n).astype(np.int64)
    ext = np.array([info.min, info.max, info.min + 1, 0], dtype=object)
    m = rng.random(n) < 0.2
    out = x.astype(NP[short]) if info.min < 0 else (x % 7).astype(NP[short])
    out[m] = np.array(list(ext[rng.integers(0, 4, m.sum())]), dtype=NP[short])
    return out


@pytest.mark.parametrize("short", ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32",
                                   "u64", "f16", "f32", "f64"])
@pytest.mark.parametrize("desc", [False, True])
def test_key_transform_orders_like_reference(short, desc):
    rng = np.random.default_rng(1)
    x = _sample(rng, short, 300)
    k = make_key(x, short, desc)
    got = np.argsort(k, kind="stable")
    assert got.tolist() == _ref_order(x, desc)
    if not desc and short not in ("bool",):
        ok = ~np.isnan(x.astype(np.float64)) if short.startswith("f") else np.ones(len(x), bool)
        assert (np.argsort(k, kind="stable")[:ok.sum()] == np.argsort(x, kind="stable")[:ok.sum()]).all()


def decode_key(k, short):
    """numpy mirror of sort_common.decode_key (ascending key → raw word)."""
    bits = spec.KEY_BITS[short]
    full, sign = np.uint64((1 << bits) - 1), np.uint64(1 << (bits - 1))
    if short in ("i8", "i16", "i32", "i64"):
        u = k ^ sign
    elif short in ("f16", "bf16", "f32", "f64"):
        u = np.where((k & sign) != 0, k ^ sign, (~k) & full)
    else:
        u = k
    return u.astype(UINT[bits])


@pytest.mark.parametrize("short", ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32",
                                   "u64", "f16", "f32", "f64"])
@pytest.mark.parametrize("desc", [False, True])
def test_decode_key_roundtrip(short, desc):
    """sort_gather rebuilds values from the sorted keys, except where the key merged values
    (float ±0 → one key, every NaN → one key): those are gathered from the input."""
    rng = np.random.default_rng(4)
    x = _sample(rng, short, 400)
    bits = spec.KEY_BITS[short]
    k = make_key(x, short, desc)
    asc = (~k) & np.uint64((1 << bits) - 1) if desc else k           # the kernel's un-invert
    w = decode_key(asc, short)
    raw = np.asarray(x).view(UINT[bits])
    if short.startswith("f"):
        merged = (asc == np.uint64(1 << (bits - 1))) | (asc == np.uint64((1 << bits) - 1))
        assert merged.sum() == (np.isnan(x) | (x == 0)).sum()
        assert (w[~merged] == raw[~merged]).all()
    else:
        assert (w == raw).all()


def test_bf16_key_transform():
    rng = np.random.default_rng(2)
    f = rng.standard_normal(500).astype(np.float32)
    f[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan]
    bfb = (f.view(np.uint32) >> 16).astype(np.uint16)       # truncated bf16 patterns
    vals = (bfb.astype(np.uint32) << 16).view(np.float32)
    got = np.argsort(make_key(bfb, "bf16"), kind="stable")
    assert got.tolist() == _ref_order(vals, False)


# ----------------------------------------------------------------------- bitonic fast path
def emulate_bitonic(keys, n, N, full, idx=None):
    """sort_rows' register-blocked network exactly as indexed: threads load their slots of a
    group through slot_index / swizzle, exchange in registers (direction from the slot or thread
    bit), store back (pads: the all-ones key, indices >= n; ``idx``: the indices of the N
    slots, default the positions — sort_select's survivors).  Also checks that every group is a
    bijection of (thread, slot) onto the row and of the row onto shared memory."""
    from baracuda_dsl.ops.sorting.specs.sort_network import (BUCKET_THREADS, reg_bits, schedule,
                                                               slot_index, swizzle)

    TB, r = BUCKET_THREADS[N], reg_bits(N)
    R, swz = 1 << r, reg_bits(N) == 3
    assert TB * R == N
    mem_k = np.full(N, np.uint64(full), np.uint64)
    mem_i = np.arange(N)
    li = np.arange(N)
    ks = np.full(N, np.uint64(full), np.uint64)
    ks[:n] = keys
    mem_k[swizzle(li, swz)], mem_i[swizzle(li, swz)] = ks, (li if idx is None else idx)  # fill
    assert sorted(swizzle(li, swz).tolist()) == li.tolist()
    t = np.arange(TB)
    for lo, stages in schedule(N.bit_length() - 1, r):
        pos = [swizzle(slot_index(t, s, lo, r), swz) for s in range(R)]
        assert sorted(np.concatenate(pos).tolist()) == list(range(N))
        rk = [mem_k[p].copy() for p in pos]
        ri = [mem_i[p].copy() for p in pos]
        for kk, jj in stages:
            assert lo <= jj < lo + r
            bj = jj - lo
            for s in range(R):
                if (s >> bj) & 1:
                    continue
                s2 = s | (1 << bj)
                if kk - lo >= r:
                    up = ((t >> (kk - r)) & 1) == 0
                else:
                    up = np.full(TB, ((s >> (kk - lo)) & 1) == 0)
                ka, kb, ia, ib = rk[s], rk[s2], ri[s], ri[s2]
                gt = (ka > kb) | ((ka == kb) & (ia > ib))
                sw = gt == up
                rk[s], rk[s2] = np.where(sw, kb, ka), np.where(sw, ka, kb)
                ri[s], ri[s2] = np.where(sw, ib, ia), np.where(sw, ia, ib)
        for s in range(R):
            mem_k[pos[s]], mem_i[pos[s]] = rk[s], ri[s]
    out = mem_i[swizzle(li, swz)]                                         # drain
    return out[:n]


def test_network_schedule_and_banks():
    """Every stage of the plain bitonic network appears once, in order; shared-memory slots of a
    half warp hit distinct 8-byte bank pairs for every window (r = 3)."""
    from baracuda_dsl.ops.sorting.specs.sort_network import (BUCKET_THREADS, reg_bits, schedule,
                                                               slot_index, swizzle)

    for N in spec.BUCKETS:
        LOG, r = N.bit_length() - 1, reg_bits(N)
        flat = [st for _, sts in schedule(LOG, r) for st in sts]
        assert flat == [(kk, jj) for kk in range(1, LOG + 1) for jj in range(kk - 1, -1, -1)]
        assert BUCKET_THREADS[N] == spec.BUCKET_THREADS[N]
        if r != 3:
            continue
        half = np.arange(16)
        for lo in range(LOG - r + 1):
            for s in range(1 << r):
                banks = swizzle(slot_index(half, s, lo, r), True) % 16
                assert len(set(banks.tolist())) == 16, (N, lo, s)
        assert len(set((swizzle(half, True) % 16).tolist())) == 16


@pytest.mark.parametrize("n", [0, 1, 2, 7, 33, 64, 65, 255, 256, 1000, 1024, 4095, 4096])
@pytest.mark.parametrize("desc", [False, True])
def test_bitonic_network_is_stable_sort(n, desc):
    rng = np.random.default_rng(n)
    x = _sample(rng, "f32", n)
    N = spec.bucket_for(max(n, 1))
    k = make_key(x, "f32", desc)     # pads tie with NaN keys: the index tie-break puts them last
    assert emulate_bitonic(k, n, N, 0xFFFFFFFF).tolist() == _ref_order(x, desc)


# ------------------------------------------------------------------------- radix select
def emulate_select(keys, n, k, bits, kb):
    """sort_select, pass for pass: the k-th smallest (key, j) composite by 8-bit digits (key
    digits, then position digits j >> 8, j & 255 — skipped like the kernel when top-k takes
    every tie (Tj = NMAX) or kthvalue has one tie) with the kernel's prefix match / bin scan;
    returns (Tk, Tj, survivors sorted by the bitonic network or None for kb = 0)."""
    NMAX, select_passes = spec.SELECT_MAX_N, spec.select_passes

    full = (1 << bits) - 1
    kv = np.full(NMAX, full, np.uint64)
    kv[:n] = keys
    j = np.arange(NMAX)
    kk, pk, pj, ties = k, 0, 0, 0
    for is_pos, s_ in select_passes(bits):
        if is_pos and s_ == 8 and ties == (kk if kb else 1):
            if kb:
                pj = NMAX
            else:
                hit = np.nonzero((j < n) & (kv == np.uint64(pk)))[0]
                assert len(hit) == 1
                pj = int(hit[0])
            kk = 1
            break
        m = j < n
        if is_pos:
            m &= kv == np.uint64(pk)
            if s_ + 8 < 12:
                m &= ((j ^ pj) >> (s_ + 8)) == 0
            dig = (j >> s_) & 255
        else:
            if s_ + 8 < bits:
                m &= ((kv ^ np.uint64(pk)) >> np.uint64(s_ + 8)) == 0
            dig = ((kv >> np.uint64(s_)) & np.uint64(255)).astype(np.int64)
        hist = np.bincount(dig[m], minlength=256)
        excl = np.cumsum(hist) - hist
        hit = np.nonzero((excl < kk) & (kk <= excl + hist))[0]
        assert len(hit) == 1                                      # exactly one thread writes
        d = int(hit[0])
        kk -= int(excl[d])
        ties = int(hist[d])
        if is_pos:
            pj |= d << s_
        else:
            pk |= d << s_
    assert kk == 1                                                # the composite is unique
    if kb == 0:
        return pk, pj, None
    sv = (j < n) & ((kv < np.uint64(pk)) | ((kv == np.uint64(pk)) & (j <= pj)))
    assert int(sv.sum()) == k
    pairs = np.full(kb, full, np.uint64)
    pidx = NMAX + np.arange(kb)
    pairs[:k], pidx[:k] = kv[sv], j[sv]
    order = emulate_bitonic(pairs, kb, kb, full, idx=pidx)
    return pk, pj, order[:k]


@pytest.mark.parametrize("short,n,k,desc,mode", [
    ("f32", 4096, 64, True, "topk"), ("f32", 1000, 1, False, "topk"),
    ("f32", 300, 257, True, "topk"), ("u8", 4096, 1024, False, "topk"),
    ("i16", 2049, 100, True, "topk"), ("f64", 3000, 200, False, "topk"),
    ("bool", 4000, 64, True, "topk"), ("f32", 4096, 4096, False, "kth"),
    ("f32", 1000, 1, False, "kth"), ("i64", 777, 400, False, "kth"), ("u8", 4096, 2049, False, "kth")])
def test_select_emulation_matches_stable_sort(short, n, k, desc, mode):
    rng = np.random.default_rng(n + k)
    for trial in range(4):
        x = _sample(rng, short, n)
        if trial == 3:
            x = rng.permutation(n).astype(x.dtype)                # (mostly) distinct: skips
        elif trial == 1:
            x[:] = x[0]                                           # all keys equal
        elif trial == 2:
            x = np.where(rng.random(n) < 0.5, x[0], x[1]).astype(x.dtype)   # two values
        bits = spec.KEY_BITS[short]
        keys = make_key(x, short, desc)
        ref = _ref_order(x, desc)
        tk, tj, top = emulate_select(keys, n, k, bits, 0 if mode == "kth" else
                                     next(b for b in spec.SELECT_KB if b >= k and b > 0))
        assert tk == int(keys[ref[k - 1]])
        assert tj == ref[k - 1] or (mode == "topk" and tj == 4096)
        if top is not None:
            assert [int(v) for v in top] == ref[:k]


def test_select_routing():
    from baracuda_dsl.ops.sorting.sort import select_kb

    assert select_kb(4096, 64, False) == 64 and select_kb(4096, 65, False) == 256
    assert select_kb(4096, 1024, False) == 1024 and select_kb(4096, 1025, False) is None
    assert select_kb(1000, 300, False) is None and select_kb(1000, 256, False) == 256
    assert select_kb(64, 1, False) is None and select_kb(65, 1, False) == 64
    assert select_kb(4097, 1, False) is None and select_kb(4096, 0, False) is None
    assert select_kb(257, 3, True) == 0 and select_kb(256, 3, True) is None
    t = TopkPlan.select(TopkDescriptor((4096, 4096), 64, -1, "f32"), PREF)
    assert t.sku().template == "sort_select" and t.workspace_size() == 0
    assert TopkPlan.select(TopkDescriptor((8, 5000), 64), PREF).sku().template == "radix_keys"
    kp = KthvaluePlan.select(KthvalueDescriptor((3, 1000), 5, -1, "f64"), PREF)
    assert kp.sku().template == "sort_select" and dict(kp.sku().knobs)["kb"] == 0


# ------------------------------------------------------------------------------ radix sort
def emulate_radix(keys2d, bits):
    """Upsweep / scan / scatter of the kernels, index for index; returns the int32 indices."""
    rows, n = keys2d.shape
    T = spec.RADIX_TILE
    tiles = -(-n // T)
    k = keys2d.copy()
    idx = np.tile(np.arange(n), (rows, 1))
    for p in range(bits // 8):
        shift = 8 * p
        digit = ((k >> np.uint64(shift)) & np.uint64(255)).astype(np.int64)
        counts = np.zeros((rows, 256, tiles), np.int64)
        for r in range(rows):                                        # upsweep
            for t in range(tiles):
                counts[r, :, t] = np.bincount(digit[r, t * T:(t + 1) * T], minlength=256)
        totals = counts.sum(axis=2)                                  # scan (per digit, tiles)
        counts = np.cumsum(counts, axis=2) - counts
        nk, ni = np.empty_like(k), np.empty_like(idx)
        for r in range(rows):                                        # scatter
            dbase = np.cumsum(totals[r]) - totals[r]
            for t in range(tiles):
                whist = np.zeros((8, 257), np.int64)
                loc = {}
                for w in range(8):
                    for it in range(spec.RADIX_ITEMS):
                        lanes = t * T + w * 32 * spec.RADIX_ITEMS + it * 32 + np.arange(32)
                        d = np.where(lanes < n, digit[r, np.minimum(lanes, n - 1)], 256)
                        for lane in range(32):
                            peers = d == d[lane]
                            rank = int(peers[:lane].sum())
                            loc[(w, it, lane)] = whist[w, d[lane]] + rank
                        for dd in np.unique(d):
                            whist[w, dd] += int((d == dd).sum())
                wex = np.cumsum(whist, axis=0) - whist
                run = whist[:, :256].sum(axis=0)                      # tile count per digit
                tstart = np.cumsum(run) - run
                valid = min(T, n - t * T)
                sk = np.full(valid, -1, np.int64)
                si = np.full(valid, -1, np.int64)
                for (w, it, lane), lo in loc.items():               # stage in shared memory
                    e = t * T + w * 32 * spec.RADIX_ITEMS + it * 32 + lane
                    if e < n:
                        dd = digit[r, e]
                        p_ = tstart[dd] + wex[w, dd] + lo
                        assert sk[p_] == -1
                        sk[p_], si[p_] = e, idx[r, e]
                assert (sk >= 0).all()                              # a bijection onto the tile
                soff = dbase + counts[r, :, t] - tstart
                for p_ in range(valid):                             # coalesced write-out
                    e = sk[p_]
                    pos = p_ + soff[digit[r, e]]
                    nk[r, pos], ni[r, pos] = k[r, e], si[p_]
        k, idx = nk, ni
    return idx


@pytest.mark.parametrize("short,n,rows,desc", [("f32", 4097, 1, False), ("i16", 9000, 2, True),
                                               ("u8", 5000, 1, False), ("f64", 4500, 1, True)])
def test_radix_emulation_matches_stable_argsort(short, n, rows, desc):
    rng = np.random.default_rng(n)
    x = np.stack([_sample(rng, short, n) for _ in range(rows)])
    keys = np.stack([make_key(x[r], short, desc) for r in range(rows)])
    got = emulate_radix(keys, spec.KEY_BITS[short])
    for r in range(rows):
        assert got[r].tolist() == _ref_order(x[r], desc)


def test_radix_layout_and_geometry():
    offs = radix_layout(3, 10000, 32)
    assert offs[0] == 0 and all(o % 256 == 0 for o in offs)
    assert offs[-1] >= 2 * 3 * 10000 * 4 * 2 + 3 * 256 * 3 * 4
    assert radix_layout(1, 5000, 64)[1] >= 5000 * 8
    # axis in the middle of a transposed view: rows over the outer dims, axis stride kept
    n, rows, (sa, oa), e, (s7, o7) = row_geometry((4, 5, 6), 1, (1, 24, 4), (30, 6, 1))
    assert (n, rows, sa, oa) == (5, 24, 24, 6)
    # emulate row_offset7 against numpy for every row
    x = np.arange(4 * 5 * 6)
    for r in range(rows):
        rem, so, oo = r, 0, 0
        for d in range(6, -1, -1):
            c = rem % e[d]
            rem //= e[d]
            so += c * s7[d]
            oo += c * o7[d]
        i0, i2 = np.unravel_index(r, (4, 6))
        assert so == i0 * 1 + i2 * 4 and oo == i0 * 30 + i2 * 1
    assert x.size


# -------------------------------------------------------------------------- searchsorted
def emulate_search(b, q, side, short):
    kb, kq = make_key(b, short), make_key(q, short)
    n = len(b)
    out = []
    for v in kq:
        lo, cnt = 0, n
        for _ in range(n.bit_length()):
            half = cnt >> 1
            mid = lo + half
            mm = min(mid, n - 1)
            go = (kb[mm] <= v if side == "right" else kb[mm] < v) and cnt > 0
            lo, cnt = (mid + 1, cnt - half - 1) if go else (lo, half)
        out.append(lo)
    return np.array(out)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 33, 100])
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_emulation(n, side):
    rng = np.random.default_rng(n)
    b = np.sort(_sample(rng, "f32", n))
    q = np.concatenate([_sample(rng, "f32", 50), b[:3]])
    got = emulate_search(b, q, side, "f32")
    assert got.tolist() == np.searchsorted(b, q, side=side).tolist()


# --------------------------------------------------------------------------- validation
def test_select_validation():
    p = SortPlan.select(SortDescriptor((8, 1000), -1, "bf16"), PREF)
    assert p.sku().template == "sort_rows" and p.workspace_size() == 0
    assert dict(p.sku().knobs)["bucket"] == 1024 and p.precision_guarantee().deterministic
    q = SortPlan.select(SortDescriptor((2, 4097), 1, "f32", descending=True), PREF)
    assert q.sku().template == "radix_keys" and q.workspace_size() > 2 * 2 * 4097 * 8
    for dt in ("bool", "int8", "uint64", "float16", "float64"):
        SortPlan.select(SortDescriptor((3,), 0, dt), PREF)
    for dt in ("complex64", "float8_e4m3"):
        with pytest.raises(bd.UnsupportedError):
            SortDescriptor((3,), 0, dt)
    with pytest.raises(bd.InvalidProblemError):
        SortPlan.select(SortDescriptor((3, 4), 2), PREF)
    with pytest.raises(bd.InvalidProblemError):
        SortPlan.select(SortDescriptor((3, 4), 0, "f32", descending=1), PREF)
    with pytest.raises(bd.InvalidProblemError):
        SortPlan.select(SortDescriptor((1,) * 9), PREF)
    assert SortPlan.select(SortDescriptor((0, 5)), PREF).is_empty()
    assert SortPlan.select(SortDescriptor((5, 0)), PREF).is_empty()
    assert ArgsortPlan.select(ArgsortDescriptor((), 0, "i32"), PREF).sku().op == "argsort"
    with pytest.raises(bd.InvalidProblemError):
        MsortPlan.select(MsortDescriptor((), "f32"), PREF)
    t = TopkPlan.select(TopkDescriptor((3, 40, 2), 5, 1, "f64"), PREF)
    assert t._out == (3, 5, 2)
    with pytest.raises(bd.InvalidProblemError):
        TopkPlan.select(TopkDescriptor((3, 4), 5), PREF)
    assert TopkPlan.select(TopkDescriptor((3, 4), 0), PREF).is_empty()
    k = KthvaluePlan.select(KthvalueDescriptor((3, 40, 2), 40, 1, "i32"), PREF)
    assert k._out == (3, 2)
    assert KthvalueDescriptor((3, 40, 2), 1, 1, keepdims=True).out_shape == (3, 1, 2)
    with pytest.raises(bd.InvalidProblemError):
        KthvaluePlan.select(KthvalueDescriptor((3, 4), 0), PREF)
    with pytest.raises(bd.InvalidProblemError):
        KthvaluePlan.select(KthvalueDescriptor((3, 0), 1), PREF)
    with pytest.raises(bd.UnsupportedError):
        SortBackwardDescriptor((3,), 0, "int32")
    assert SortBackwardPlan.select(SortBackwardDescriptor((3, 4), 0, "bf16"), PREF).workspace_size() == 0
    assert TopkBackwardPlan.select(TopkBackwardDescriptor((3, 4), 2, 0, "f32"), PREF)._sel_shape == (2, 4)
    assert KthvalueBackwardPlan.select(KthvalueBackwardDescriptor((3, 4), 0, "f64"), PREF)._dy_shape == (4,)
    s = SearchsortedPlan.select(SearchsortedDescriptor((10,), (2, 3), "f16", "right", "int32"), PREF)
    assert dict(s.sku().knobs) == dict(dtype="f16", out="i32") and s.workspace_size() == 0
    with pytest.raises(bd.InvalidProblemError):
        SearchsortedPlan.select(SearchsortedDescriptor((2, 10), (3, 4)), PREF)
    with pytest.raises(bd.InvalidProblemError):
        SearchsortedPlan.select(SearchsortedDescriptor((10,), (3,), side="middle"), PREF)
    with pytest.raises(bd.InvalidProblemError):
        SearchsortedPlan.select(SearchsortedDescriptor((), (3,)), PREF)
    with pytest.raises(bd.UnsupportedError):
        SearchsortedDescriptor((10,), (3,), "f32", out_dtype="int16")
    assert SearchsortedPlan.select(SearchsortedDescriptor((2, 3, 10), (2, 3, 4), has_sorter=True),
                                   PREF).workspace_size() >= 60 * 4 + 60 * 8


def test_host_arrays_rejected_before_launch():
    p = SortPlan.select(SortDescriptor((4,), 0, "f32"), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(SortArgs(np.zeros(4, np.float32), np.zeros(4, np.float32)))
    s = SearchsortedPlan.select(SearchsortedDescriptor((4,), (2,)), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        s.run(SearchsortedArgs(np.zeros(4, np.float32), np.zeros(2, np.float32),
                               np.zeros(2, np.int64)))


def test_sku_space():
    from baracuda_dsl.ops import all_templates

    ts = all_templates(["sorting"])
    counts = {t.name: len(t.skus("sm90a")) for t in ts}
    assert counts == {"sort_rows": 52, "sort_select": 52, "radix_keys": 13, "radix_upsweep": 2, "radix_scan": 1,
                      "radix_scatter": 2, "sort_gather": 13, "sort_scatter_bw": 6,
                      "searchsorted": 26}
    assert sum(counts.values()) <= 250
    tmpl = {t.name: t for t in ts}
    for d in (SortDescriptor((5, 7), 0, "u16"), SortDescriptor((5, 70000), 1, "f64")):
        p = SortPlan.select(d, PREF)
        assert p.sku().knobs in tmpl[p.sku().template].skus()


# ------------------------------------------------------------------------------- compile
@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for name, knobs, threads in [("sort_rows", dict(dtype="f64", bucket=4096), 512),
                                 ("sort_rows", dict(dtype="bf16", bucket=64), 32),
                                 ("sort_select", dict(dtype="f32", kb=64), 256),
                                 ("sort_select", dict(dtype="f64", kb=0), 256),
                                 ("radix_keys", dict(dtype="i8"), 256),
                                 ("radix_upsweep", dict(kbits=64), 256),
                                 ("radix_scan", dict(threads=256), 256),
                                 ("radix_scatter", dict(kbits=32), 256),
                                 ("sort_gather", dict(dtype="bf16"), 256),
                                 ("sort_scatter_bw", dict(itemsize=8, mode="scatter"), 256),
                                 ("searchsorted", dict(dtype="f16", out="i32"), 256)]:
        cubin, meta = compile_sku(name, freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == threads


def test_overlap_detection():
    from baracuda_dsl.ops.sorting.sort import _overlap
    from baracuda_dsl.tensor import TensorView

    x = TensorView(4096, (4, 8), (8, 1), bd.float32, 0)
    assert _overlap(x, TensorView(4096 + 4 * 31, (1,), (1,), bd.float32, 0))
    assert not _overlap(x, TensorView(4096 + 4 * 32, (4, 8), (8, 1), bd.float32, 0))
    assert _overlap(TensorView(4096 + 4 * 31, (4, 8), (-8, -1), bd.float32, 0), x)
    assert not _overlap(x, TensorView(4096, (0, 8), (8, 1), bd.float32, 0))
