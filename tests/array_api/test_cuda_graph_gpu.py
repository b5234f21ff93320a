"""Namespace ops and Plans recorded in an ``xp.CUDAGraph`` and replayed.

One representative op per family (elementwise, reduction, softmax, normalization, gemm, scan,
sorting, shape, indexing, segment, histogram, losses, random).  Each case: static inputs made
before the capture, one eager call first (plan selection and kernel loading outside the
capture), the capture, then two rounds of: new values written into the inputs in place
(``x[...] = xp.asarray(new)``), every output poisoned (NaN / integer sentinel, so an element the
replay does not write fails), ``g.replay()``, every element checked against the float64 numpy
reference of the NEW inputs (tests._checks bounds; sums over small integers are exact, other
bounds are the classical worst case: n roundings for a depth-≤-n sum).

Plus: indexed ops captured with the index check on (the check is skipped in a capture);
reading device data on the host inside a capture raises ``UnsupportedError`` and leaves the
graph closable and the namespace usable; a Plan's ``run`` inside a capture; temporaries dropped
inside the capture and eager arrays allocated after it do not share memory with the graph;
in-place updates and fills run again on every replay; host data turned into arrays inside a
capture is copied once and stays intact; a capture of ops never run eagerly before.
"""

import contextlib

import numpy as np
import pytest

import array_api as xp
from tests._checks import assert_close, assert_equal, assert_within, bounds, eps

pytestmark = pytest.mark.gpu

#: replays per case, each after new input values
ROUNDS = 2
#: unit roundoff ×2 of float32 (the compute precision of every f32 / bf16 case here)
U = eps("float32")
TINY32 = bounds("float32")[1]


# ------------------------------------------------------------------------------- helpers
@contextlib.contextmanager
def _graph():
    """A fresh ``xp.CUDAGraph`` closed on exit (also when the test fails)."""
    g = xp.CUDAGraph()
    try:
        yield g
    finally:
        g.close()


@contextlib.contextmanager
def _index_checking(enabled: bool):
    old = xp.set_index_checking(enabled)
    try:
        yield
    finally:
        xp.set_index_checking(old)


def _host(a) -> np.ndarray:
    """Host copy of a device array: float64 for floating dtypes (bf16 included), else as is."""
    h = np.asarray(a.to_numpy())
    return h.astype(np.float64) if h.dtype.kind in "fV" or "float" in str(h.dtype) else h


def _poison(a) -> None:
    """Fill an output with NaN (floating) or the dtype's largest value (integers)."""
    if xp.isdtype(a.dtype, "real floating"):
        a[...] = float("nan")
    elif xp.isdtype(a.dtype, "integral"):
        a[...] = int(xp.iinfo(a.dtype).max)


def _tuple(r):
    return tuple(r) if isinstance(r, (tuple, list)) else (r,)


def _replay_case(gen, op, check, *, seed, index_checking=True):
    """The pattern every family case follows (module doc).  ``gen(rng)``: {name: (numpy array,
    xp dtype)} of input values; ``op(d)``: the namespace ops on the device inputs ``d``, returning
    an output or a tuple of them; ``check(outs, h, what)``: ``h`` the float64 host copies of the
    inputs as the device holds them (rounded to their dtype)."""
    rng = np.random.default_rng(seed)
    with _index_checking(index_checking):
        d = {k: xp.asarray(v, dtype=dt) for k, (v, dt) in gen(rng).items()}
        _tuple(op(d))                                   # eager: selection and kernel loading
        with _graph() as g:
            with g.capture():
                outs = _tuple(op(d))
            for r in range(ROUNDS):
                for k, (v, dt) in gen(rng).items():
                    d[k][...] = xp.asarray(v, dtype=dt)
                h = {k: _host(a) for k, a in d.items()}
                for o in outs:
                    _poison(o)
                g.replay()
                check(outs, h, f"replay {r}")


def row_depth(n):
    """Most rounded adds on a path of a row reduction of the row engine (softmax, rms_norm,
    layer_norm; common/rows.py — the same model as tests/softmax and tests/normalization): a
    thread folds <= 64 register elements or every 256-th one, then 5 shuffle levels, up to 32
    warp and 8 cluster partials in order.  Never more than n.  A sum of depth d errs by
    <= d·u·Σ|terms|."""
    return max(1, min(n, max(64, -(-n // 256)) + 45))


def _ints(rng, shape, lo=-2, hi=2):
    """Small integers as float32: every partial sum of fewer than 2**22 of them is exact in f32,
    so sums / scans of them are exact whatever the combination order."""
    return rng.integers(lo, hi + 1, shape).astype(np.float32)


F32, BF16, I64 = xp.float32, xp.bfloat16, xp.int64


# --------------------------------------------------------------------------- the 13 families
def _elementwise():
    def gen(rng):
        return {"a": (rng.standard_normal((33, 257)).astype(np.float32), F32),
                "b": (rng.standard_normal((33, 257)).astype(np.float32), F32)}

    def op(d):
        return d["a"] * d["b"] + 1.5

    def check(outs, h, what):
        # a·b rounded (u/2 of |ab|), + 1.5 rounded (u/2 of the result): within 1.5u of |ab| + 1.5
        ab = h["a"] * h["b"]
        assert_close(outs[0].to_numpy(), ab + 1.5, bounds("float32", compute="float32", terms=1)[0],
                     TINY32, scale=np.abs(ab) + 1.5, what=f"a*b+1.5 {what}")

    return gen, op, check, {}


def _reduction():
    def gen(rng):
        return {"x": (_ints(rng, (16, 777)), F32),
                "long": (_ints(rng, (3, 200003)), F32)}      # long rows: the split reduction

    def op(d):
        return xp.sum(d["x"], axis=1), xp.mean(d["long"], axis=1)

    def check(outs, h, what):
        assert_equal(outs[0].to_numpy(), h["x"].sum(axis=1), what=f"sum {what}")   # exact
        # the exact integer sum, divided by n (or times 1/n): at most 1.5u
        assert_close(outs[1].to_numpy(), h["long"].mean(axis=1),
                     *bounds("float32", compute="float32", terms=1), what=f"mean {what}")

    return gen, op, check, {}


def _softmax_within(out, x, what):
    """softmax(x) along the last axis, per element (tests/softmax's model): exp(x_i − m) errs by
    u·(2g_i + 3) relative (g_i = |x_i − m|), the row sum (positive terms, depth d =
    :func:`row_depth`) by (d + 2W + 3)·u with W = Σ p_j g_j, the normalisation by 2u:
    p_i·u·(2g_i + 2W + d + 8) beyond the output rounding."""
    d = row_depth(x.shape[-1])
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    p = e / e.sum(axis=-1, keepdims=True)
    g = np.abs(x - m)
    w = (p * g).sum(axis=-1, keepdims=True)
    assert_within(out, p, "float32", bounds("float32")[0], U * (2 * g + 2 * w + d + 8) * p,
                  what=what)


def _softmax():
    def gen(rng):
        return {"x": ((2 * rng.standard_normal((16, 1000))).astype(np.float32), F32)}

    def op(d):
        return xp.softmax(d["x"], axis=-1)

    def check(outs, h, what):
        _softmax_within(outs[0].to_numpy(), h["x"], f"softmax {what}")

    return gen, op, check, {}


def _normalization():
    n = 256

    def gen(rng):
        return {"x": (rng.standard_normal((8, n)).astype(np.float32), F32),
                "w": (rng.standard_normal(n).astype(np.float32), F32),
                "b": (rng.standard_normal(n).astype(np.float32), F32)}

    def op(d):
        return (xp.rms_norm(d["x"], (n,), d["w"], eps=1e-6),
                xp.layer_norm(d["x"], (n,), d["w"], d["b"], eps=1e-5))

    def check(outs, h, what):
        x, w, b = h["x"], h["w"], h["b"]
        dd = row_depth(n)
        # tests/normalization's model.  rms: Σx² of positive terms (dd·u relative), /n, +eps,
        # rsqrt: dd/2 + 3 roundings on rstd, two products: dd/2 + 5 relative (no cancellation)
        rr = 1.0 / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
        assert_close(outs[0].to_numpy(), x * rr * w,
                     *bounds("float32", compute="float32", terms=dd / 2 + 5),
                     what=f"rms_norm {what}")
        # layer norm: (dd/2 + 7)·u relative to |x̂·w|, the mean's error (dd·u·mean|x|, and
        # the subtraction) times rstd·|w|, 2u·|b|
        mu = x.mean(-1, keepdims=True)
        rs = 1.0 / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
        xh = (x - mu) * rs
        amean = np.abs(x).mean(-1, keepdims=True)
        err = U * ((dd / 2 + 7) * np.abs(xh * w) + (dd + 2) * rs * np.abs(w) * amean
                   + 2 * np.abs(b))
        assert_within(outs[1].to_numpy(), xh * w + b, "float32", bounds("float32")[0], err,
                      what=f"layer_norm {what}")

    return gen, op, check, {}


def _gemm():
    m, k, n = 128, 96, 64

    def gen(rng):
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        return {"a": (a, F32), "b": (b, F32), "a16": (a, BF16), "b16": (b, BF16)}

    def op(d):
        return xp.matmul(d["a"], d["b"]), xp.matmul(d["a16"], d["b16"])

    def check(outs, h, what):
        # K products summed in f32 (strict IEEE for f32, f32 accumulate for bf16) plus the
        # epilogue's roundings: K + 4 roundings relative to |A|·|B|, half an ulp of the output
        for o, a, b, dt in ((outs[0], h["a"], h["b"], "float32"),
                            (outs[1], h["a16"], h["b16"], "bfloat16")):
            assert o.dtype == (F32 if dt == "float32" else BF16)
            assert_close(_host(o), a @ b, *bounds(dt, compute="float32", terms=k + 4),
                         scale=np.abs(a) @ np.abs(b), what=f"matmul {dt} {what}")

    return gen, op, check, {}


def _scan():
    def gen(rng):
        return {"x": (_ints(rng, (4, 3000)), F32)}

    def op(d):
        return xp.cumulative_sum(d["x"], axis=1)

    def check(outs, h, what):
        assert_equal(outs[0].to_numpy(), np.cumsum(h["x"], axis=1), what=f"cumsum {what}")

    return gen, op, check, {}


def _sorting():
    def gen(rng):
        return {"x": (rng.standard_normal((8, 1000)).astype(np.float32), F32)}

    def op(d):
        return xp.sort(d["x"], axis=-1)

    def check(outs, h, what):
        assert_equal(outs[0].to_numpy(), np.sort(h["x"], axis=-1), what=f"sort {what}")

    return gen, op, check, {}


def _shape():
    def gen(rng):
        return {"a": (rng.standard_normal((17, 40)).astype(np.float32), F32),
                "b": (rng.standard_normal((17, 9)).astype(np.float32), F32)}

    def op(d):
        # flip is a view (negative strides): its dense copy is the captured work
        return (xp.concat([d["a"], d["b"]], axis=1),
                xp.ascontiguousarray(xp.flip(d["a"], axis=0)), xp.roll(d["a"], 5, axis=1))

    def check(outs, h, what):
        a, b = h["a"], h["b"]
        assert_equal(outs[0].to_numpy(), np.concatenate([a, b], axis=1), what=f"concat {what}")
        assert_equal(outs[1].to_numpy(), np.flip(a, axis=0), what=f"flip {what}")
        assert_equal(outs[2].to_numpy(), np.roll(a, 5, axis=1), what=f"roll {what}")

    return gen, op, check, {}


def _indexing():
    def gen(rng):
        return {"x": (rng.standard_normal((50, 24)).astype(np.float32), F32),
                "y": (rng.standard_normal((50, 24)).astype(np.float32), F32),
                "idx": (rng.integers(-50, 50, 77), I64)}           # negative ones wrap once

    def op(d):
        return xp.take(d["x"], d["idx"], axis=0), xp.where(d["x"] > 0, d["x"], d["y"])

    def check(outs, h, what):
        assert_equal(outs[0].to_numpy(), np.take(h["x"], h["idx"], axis=0), what=f"take {what}")
        assert_equal(outs[1].to_numpy(), np.where(h["x"] > 0, h["x"], h["y"]),
                     what=f"where {what}")

    return gen, op, check, {"index_checking": False}     # the check reads a status word back


def _segment():
    s = 16

    def gen(rng):
        return {"data": (_ints(rng, (300, 8)), F32),
                "ids": (rng.integers(0, s, 300), I64)}             # unsorted, some repeated

    def op(d):
        return xp.segment_sum(d["data"], d["ids"], num_segments=s)

    def check(outs, h, what):
        ref = np.zeros((s, 8))
        np.add.at(ref, h["ids"], h["data"])
        assert_equal(outs[0].to_numpy(), ref, what=f"segment_sum {what}")   # exact integers

    return gen, op, check, {"index_checking": False}


def _histogram():
    bins = 16

    def gen(rng):
        # bin centres k + 1/2 of [0, 16) with unit bins: no value near an edge
        return {"x": ((rng.integers(0, bins, 5000) + 0.5).astype(np.float32), F32)}

    def op(d):
        # a fixed range: histc over the data's range (min = max = 0) reads it back on the host
        return xp.histc(d["x"], bins=bins, min=0.0, max=float(bins))

    def check(outs, h, what):
        ref = np.bincount(np.floor(h["x"]).astype(np.int64), minlength=bins).astype(np.float64)
        assert_equal(outs[0].to_numpy(), ref, what=f"histc {what}")

    return gen, op, check, {}


def _losses():
    n, c = 64, 10

    def gen(rng):
        return {"logits": ((2 * rng.standard_normal((n, c))).astype(np.float32), F32),
                "t": (rng.integers(0, c, n), I64)}

    def op(d):
        return xp.losses.cross_entropy(d["logits"], d["t"])

    def check(outs, h, what):
        x, t = h["logits"], h["t"]
        m = x.max(-1)
        lse = np.log(np.exp(x - m[:, None]).sum(-1))
        xt = x[np.arange(n), t]
        rows = m + lse - xt
        g = np.abs(x - m[:, None]).max(-1)
        # per row: log Σ exp (the C terms' exp errors and the depth-≤-C sum, the log) and the
        # two adds; the mean: a depth-≤-N sum of the rows and the division
        e_row = U * (c + 2 * g + 3 + 4 * lse + 2 * np.abs(m) + 2 * np.abs(xt))
        abs_err = e_row.mean() + n * U * np.abs(rows).mean() + U * abs(rows.mean())
        out = outs[0].to_numpy()
        assert out.shape == ()
        assert_within(out, np.float64(rows.mean()), "float32", bounds("float32")[0], abs_err,
                      what=f"cross_entropy {what}")

    return gen, op, check, {"index_checking": False}


def _random():
    gen_ = xp.random.default_rng(20240518)

    def gen(rng):
        return {}

    def op(d):
        return gen_.random((4096,)), gen_.standard_normal((4096,))

    def check(outs, h, what):
        # the Philox (seed, offset) are fixed at capture: a replay may draw the same numbers
        # again; only the distributions' ranges are checked here
        u, z = outs[0].to_numpy(), outs[1].to_numpy()
        assert u.shape == (4096,) and u.dtype == np.float32, what
        assert ((u >= 0) & (u < 1)).all(), what
        assert abs(u.mean() - 0.5) < 0.03, (what, u.mean())     # > 6 sigma of the sample mean
        assert np.unique(u).size > 4000, what
        assert z.shape == (4096,) and z.dtype == np.float32, what
        assert np.isfinite(z).all() and np.abs(z).max() < 8.0, what
        assert abs(z.mean()) < 0.1 and abs(z.std() - 1.0) < 0.1, (what, z.mean(), z.std())

    return gen, op, check, {}


FAMILIES = [_elementwise, _reduction, _softmax, _normalization, _gemm, _scan, _sorting, _shape,
            _indexing, _segment, _histogram, _losses, _random]


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.__name__.strip("_"))
def test_family_op_captured_and_replayed(family):
    gen, op, check, kw = family()
    _replay_case(gen, op, check, seed=FAMILIES.index(family) + 1, **kw)


@pytest.mark.parametrize("family", [_indexing, _segment, _losses],
                         ids=lambda f: f.__name__.strip("_"))
def test_index_checked_ops_captured_with_checking_on(family):
    """With index checking on, ops that read their status word back eagerly are still
    capturable: the check is skipped for captured ops (array_api/_graphs.py), the results are
    the same."""
    gen, op, check, _ = family()
    _replay_case(gen, op, check, seed=100 + FAMILIES.index(family), index_checking=True)


# ------------------------------------------------------------------- host reads in a capture
def _bincount(x):
    return xp.bincount(xp.astype(x > 0, xp.int64))


HOST_READS = {
    "float": lambda x: float(xp.sum(x)),
    "bool": lambda x: bool(xp.all(x > -100.0)),
    "to_numpy": lambda x: xp.exp(x).to_numpy(),
    "nonzero": lambda x: xp.nonzero(x > 0),
    "unique": lambda x: xp.unique_values(x),
    "bincount": _bincount,                                  # output size = max(x) + 1
    "histc_data_range": lambda x: xp.histc(x, bins=4),      # min = max = 0: the data's range
    "segment_sum_sizeless": lambda x: xp.segment_sum(x, xp.asarray(np.array([0, 1, 1, 2] * 8))),
}


@pytest.mark.parametrize("name", list(HOST_READS))
def test_host_read_inside_capture_raises(name):
    import baracuda_dsl as bd

    read = HOST_READS[name]
    h = _ints(np.random.default_rng(3), (32,))
    x = xp.asarray(h)
    with _index_checking(True):
        read(x)                                             # fine eagerly
        g = xp.CUDAGraph()
        try:
            with pytest.raises(bd.UnsupportedError):
                with g.capture():
                    read(x)
        finally:
            g.close()                                       # a failed capture still closes
    # the namespace works on after the failed capture, and so does a new graph
    assert float(xp.sum(x)) == h.sum()
    with _graph() as g2:
        with g2.capture():
            y = x * 2.0
        g2.replay()
        assert_equal(y.to_numpy(), 2.0 * h, what=f"after a failed capture ({name})")


# ------------------------------------------------------------------------ plans, memory
def test_plan_run_inside_capture():
    """``plan.run(args)`` (stream=None) inside ``g.capture()`` is recorded, with namespace Arrays
    as the Args' fields, and each replay recomputes the (poisoned) output."""
    import baracuda_dsl as bd

    m, n, eps_ = 8, 256, 1e-6
    rng = np.random.default_rng(5)
    plan = bd.RMSNormPlan.select(bd.RMSNormDescriptor((m, n), 1, "f32", eps_, True))
    x = xp.asarray(rng.standard_normal((m, n)).astype(np.float32))
    w = xp.asarray(rng.standard_normal(n).astype(np.float32))
    y = xp.empty((m, n), dtype=F32)
    args = bd.RMSNormArgs(x, y, weight=w)
    plan.run(args)                                          # eager first use
    with _graph() as g:
        with g.capture():
            plan.run(args)
        for r in range(ROUNDS):
            x[...] = xp.asarray(rng.standard_normal((m, n)).astype(np.float32))
            w[...] = xp.asarray(rng.standard_normal(n).astype(np.float32))
            hx, hw = _host(x), _host(w)
            y[...] = float("nan")
            g.replay()
            ref = hx / np.sqrt((hx * hx).mean(-1, keepdims=True) + eps_) * hw
            assert_close(y.to_numpy(), ref,
                         *bounds("float32", compute="float32", terms=row_depth(n) / 2 + 5),
                         what=f"RMSNormPlan replay {r}")


def _chain_ref(h):
    """((e^x + 1)²)/2: e^x within 3.5u, +1 within 4u of the sum, the square 8.5u, /2 exact."""
    return (np.exp(h) + 1.0) ** 2 * 0.5


def test_temporaries_and_eager_arrays_do_not_alias_the_graph():
    """Arrays dropped inside the capture are graph scratch: arrays allocated eagerly after the
    capture (same size class) must not share their memory — a replay would overwrite them — and
    eager work after a replay must not overwrite the graph's output."""
    n = 1 << 14
    rng = np.random.default_rng(7)
    x = xp.asarray(rng.standard_normal(n).astype(np.float32))
    rtol, atol = bounds("float32", compute="float32", terms=9)
    _ = ((xp.exp(x) + 1.0) * (xp.exp(x) + 1.0)) * 0.5      # eager first use
    with _graph() as g:
        with g.capture():
            y = xp.exp(x)
            z = y + 1.0
            del y
            w = z * z
            del z
            out = w * 0.5
            del w
        eager = [xp.full((n,), float(k), dtype=F32) for k in range(8)]
        for r in range(ROUNDS):
            hx = rng.standard_normal(n).astype(np.float32)
            x[...] = xp.asarray(hx)
            g.replay()
            for k, e in enumerate(eager):                   # the replay left them alone
                assert_equal(e.to_numpy(), np.full(n, float(k)), what=f"eager {k} round {r}")
            more = [xp.full((n,), -1.0, dtype=F32) for _ in range(8)]
            more += [xp.exp(m_) for m_ in more[:4]]         # eager kernels after the replay
            assert_close(out.to_numpy(), _chain_ref(hx.astype(np.float64)), rtol, atol,
                         what=f"graph output round {r}")
            del more


def test_in_place_update_runs_on_every_replay():
    """``acc += x`` recorded once: the capture itself changes nothing, each replay adds x."""
    rng = np.random.default_rng(9)
    h1 = _ints(rng, (1000,))
    acc = xp.zeros((1000,), dtype=F32)
    x = xp.asarray(h1)
    tmp = xp.zeros((1000,), dtype=F32)
    tmp += x                                                # eager first use
    with _graph() as g:
        with g.capture():
            acc += x
        assert_equal(acc.to_numpy(), np.zeros(1000), what="after capture (nothing ran)")
        for _ in range(3):
            g.replay()
        assert_equal(acc.to_numpy(), 3 * h1.astype(np.float64), what="three replays")
        h2 = _ints(rng, (1000,))
        x[...] = xp.asarray(h2)
        g.replay()
        assert_equal(acc.to_numpy(), 3 * h1.astype(np.float64) + h2, what="new input")


def test_host_constant_made_inside_capture():
    """``xp.asarray(numpy)`` inside the capture is copied once, at capture time, and every replay
    uses it — also when the constant was a temporary whose memory the capture hands to a later
    op of the same size (that op's replayed writes must not overwrite the uploaded values)."""
    n = 500
    rng = np.random.default_rng(11)
    c_h = rng.standard_normal(n).astype(np.float32)
    x = xp.asarray(rng.standard_normal(n).astype(np.float32))
    _ = x + xp.asarray(c_h)
    _ = x * 3.0
    with _graph() as g:
        with g.capture():
            out = x + xp.asarray(c_h)       # the uploaded constant dies right after the add
            out3 = x * 3.0                  # same size: a candidate for the constant's memory
        for r in range(ROUNDS + 1):
            hx = rng.standard_normal(n).astype(np.float32)
            x[...] = xp.asarray(hx)
            out[...] = float("nan")
            out3[...] = float("nan")
            g.replay()
            h64 = hx.astype(np.float64)
            assert_close(out.to_numpy(), h64 + c_h, *bounds("float32"),
                         what=f"x + host constant, replay {r}")
            assert_close(out3.to_numpy(), h64 * 3.0, *bounds("float32"), what=f"x*3, replay {r}")


def test_fill_inside_capture_runs_on_every_replay():
    """``w[...] = value`` and ``full`` recorded in a capture run on every replay, like any
    in-place op — also for a value with no memset pattern (float64 0.1, a small array)."""
    n = 100
    rng = np.random.default_rng(17)
    w = xp.zeros((n,), dtype=xp.float64)
    x = xp.asarray(rng.standard_normal(n))
    w[...] = 0.1                                            # eager first use
    w += x
    with _graph() as g:
        with g.capture():
            w[...] = 0.1
            w += x
            v = xp.full((n,), 0.1, dtype=xp.float64)
            v += x
        for r in range(3):
            hx = rng.standard_normal(n)
            x[...] = xp.asarray(hx)
            g.replay()
            # 0.1 rounded to float64 (exact in the reference too), one correctly rounded add
            assert_close(w.to_numpy(), 0.1 + hx, *bounds("float64"), what=f"w replay {r}")
            assert_close(v.to_numpy(), 0.1 + hx, *bounds("float64"), what=f"full replay {r}")


def test_capture_without_eager_first_use():
    """Ops whose plans were (possibly) never selected in this process before the capture: the
    selection and kernel loading happen during the capture and must not break it."""
    rng = np.random.default_rng(13)
    a = xp.asarray(rng.standard_normal((19, 23)))                         # float64
    b = xp.asarray(rng.standard_normal((19, 23)))
    with _graph() as g:
        with g.capture():
            out = xp.hypot(a, xp.flip(b, axis=1))
        for r in range(ROUNDS):
            ha, hb = rng.standard_normal((19, 23)), rng.standard_normal((19, 23))
            a[...] = xp.asarray(ha)
            b[...] = xp.asarray(hb)
            out[...] = float("nan")
            g.replay()
            # hypot: 5 roundings in float64 (tests/_elementwise_refs TERMS) plus numpy's own
            # float64 hypot (2 ulps, its REF_TERMS default)
            assert_close(out.to_numpy(), np.hypot(ha, np.flip(hb, axis=1)),
                         *bounds("float64", compute="float64", terms=5 + 2),
                         what=f"hypot f64 replay {r}")
