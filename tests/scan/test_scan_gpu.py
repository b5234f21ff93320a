"""ScanPlan / ScanBackwardPlan / CompactPlan on the GPU against float64 numpy / torch references:
every op × dtype, axes, exclusive / reverse, long rows split over CTAs, empty shapes, strided
(transposed, sliced, negative-stride) inputs and outputs, NaN, exact integer results with
wrap-around, bit-identical reruns, gradients vs torch.autograd, nonzero vs torch.nonzero.

Float results are checked element by element (tests/_checks.py): the rounding into the output
dtype relative to each result, the kernel's own rounding relative to the magnitude of the terms a
result combines (``_check``), with the number of rounded combines bounded by the depth of the
kernel's combination tree (``_depth``).  cummax / cummin values are selections: exact."""

import math

import numpy as np
import pytest

from tests._checks import assert_within, assert_close, assert_equal, bounds, eps, poison

pytestmark = pytest.mark.gpu

FLOATS = ["float32", "float16", "bfloat16", "float64"]
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]
#: compute dtype of each float dtype (ScanPlan: halves and f32 in f32, f64 in f64)
CT = {"float32": "float32", "float16": "float32", "bfloat16": "float32", "float64": "float64"}
CASES = [((7,), 0), ((1,), 0), ((33, 5), 0), ((33, 5), 1), ((4, 1000), 1), ((3, 4097), -1),
         ((2, 3, 65), 1), ((5, 2, 3), 2), ((2, 1, 3, 1, 2, 1, 2, 40), 7), ((1000, 7), 1),
         ((6, 300), 0)]
NP_INT = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
          "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
          "bool": np.bool_}


def _torch():
    return pytest.importorskip("torch")


def _tdt(torch, name):
    return getattr(torch, name)


def _ws(torch, plan):
    n = plan.workspace_size()
    return torch.empty(n, dtype=torch.uint8, device="cuda") if n else None


def _to_np(t):
    """Host numpy copy of a CUDA tensor (bf16/f16 widened to float64; uints via int64 bits)."""
    torch = _torch()
    t = t.detach().cpu()
    if t.dtype in (torch.bfloat16, torch.float16, torch.float32):
        return t.double().numpy()
    if t.dtype in (torch.uint16, torch.uint32, torch.uint64):
        bits = {torch.uint16: (torch.int16, np.uint16), torch.uint32: (torch.int32, np.uint32),
                torch.uint64: (torch.int64, np.uint64)}[t.dtype]
        return t.view(bits[0]).numpy().view(bits[1])
    return t.numpy()


def _from_np(torch, a, dtype):
    """CUDA tensor of ``dtype`` from numpy ``a`` (uint16/32/64 through their bit patterns)."""
    if dtype in ("uint16", "uint32", "uint64"):
        sd = {"uint16": (np.int16, torch.int16), "uint32": (np.int32, torch.int32),
              "uint64": (np.int64, torch.int64)}[dtype]
        t = torch.from_numpy(np.ascontiguousarray(a).view(sd[0])).cuda()
        return t.view(_tdt(torch, dtype))
    if dtype == "bfloat16":
        return torch.from_numpy(np.ascontiguousarray(a, np.float32)).cuda().to(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a)).cuda().to(_tdt(torch, dtype))


def _poison(torch, shape, dtype):
    """tests._checks.poison (NaN / the int dtype's max / True); uint16/32/64 (torch's shell
    dtypes, no fill kernel) get the same max through an all-ones byte fill."""
    if dtype in (torch.uint16, torch.uint32, torch.uint64):
        t = torch.empty(shape, dtype=dtype, device="cuda")
        if t.numel():
            t.view(-1).view(torch.uint8).fill_(0xFF)
        return t
    return poison(torch, shape, dtype)


def _out_dtype(torch, op, dtype):
    if op in ("cumsum", "cumprod"):
        if dtype.startswith("uint"):
            return torch.uint64
        if dtype.startswith("int") or dtype == "bool":
            return torch.int64
    return _tdt(torch, dtype)


def run_scan(x, op, axis, exclusive=False, reverse=False, out=None, idx=None):
    """Run ScanPlan on the torch tensor ``x``; returns (out, indices)."""
    torch = _torch()
    from baracuda_dsl.ops.scan.scan import ScanArgs, ScanDescriptor, ScanPlan

    dname = str(x.dtype).replace("torch.", "")
    desc = ScanDescriptor(tuple(x.shape), axis, op, dname, exclusive, reverse)
    plan = ScanPlan.select(desc)
    if out is None:
        out = _poison(torch, desc.out_shape, _out_dtype(torch, op, dname))
    if op in ("cummax", "cummin") and idx is None:
        idx = _poison(torch, tuple(x.shape), torch.int64)
    plan.run(ScanArgs(x, out, idx), workspace=_ws(torch, plan))
    torch.cuda.synchronize()
    return out, idx


# --------------------------------------------------------------------------- numpy references
def _extreme_ref(a, axis, op):
    """torch.cummax / cummin semantics in numpy: ties → last index, NaN propagates (index of
    the latest NaN).  Returns (values, indices)."""
    a = np.moveaxis(a, axis, -1)
    L = a.shape[-1]
    isf = np.issubdtype(a.dtype, np.floating)
    if L == 0:
        return np.moveaxis(a.copy(), -1, axis), np.moveaxis(np.zeros(a.shape, np.int64), -1, axis)
    acc = (np.fmax if False else np.maximum) if op == "cummax" else np.minimum
    run = acc.accumulate(a, axis=-1)
    prev = np.concatenate([run[..., :1], run[..., :-1]], axis=-1)
    better = (a >= prev) if op == "cummax" else (a <= prev)
    if isf:
        rec = np.isnan(a) | (~np.isnan(prev) & better)
    else:
        rec = better
    rec[..., 0] = True
    pos = np.where(rec, np.arange(L), 0)
    idx = np.maximum.accumulate(pos, axis=-1)
    vals = np.take_along_axis(a, idx, axis=-1)
    return np.moveaxis(vals, -1, axis), np.moveaxis(idx, -1, axis)


def _lcse_ref(a, axis):
    torch = _torch()
    return torch.logcumsumexp(torch.from_numpy(np.array(a, np.float64, copy=True)), axis).numpy()


def reference(a, op, axis, exclusive=False, reverse=False, acc=np.float64):
    """Reference scan of numpy ``a`` (values as float64 or exact integers)."""
    ax = axis % a.ndim
    if reverse:
        a = np.flip(a, ax)
    idx = None
    if op == "cumsum":
        r = np.cumsum(a, axis=ax, dtype=acc)
    elif op == "cumprod":
        r = np.cumprod(a, axis=ax, dtype=acc)
    elif op in ("cummax", "cummin"):
        r, idx = _extreme_ref(a, ax, op)
    else:
        r = _lcse_ref(a, ax)
    if exclusive:
        ident = {"cumsum": 0, "cumprod": 1, "logcumsumexp": -np.inf}[op]
        pad = np.full([1 if i == ax else n for i, n in enumerate(a.shape)], ident, r.dtype)
        r = np.concatenate([pad, r], axis=ax)
    if reverse:
        r = np.flip(r, ax)
        if idx is not None:
            idx = np.flip(a.shape[ax] - 1 - idx, ax)
    return r, idx


# ------------------------------------------------------------------------------- bounds
_check = assert_within   # rel per element + the op's own error bound abs_err


def _depth(shape, axis, axis_stride):
    """Most rounded combines on any path from an input element to an output of the scan kernel
    (ops/scan/kernels/scan.py) for rows of ``shape`` along ``axis``: the error of a combination
    tree of depth d is at most d·u·Σ|terms| (sums; d·u relative for products), whatever the order.

    * col path (rows of <= 32, or a non-unit axis stride with >= 32 rows): one thread walks the
      row: d <= L;
    * row paths: per tile E - 1 sequential + 5 shuffle levels + 8 warp totals + 2 carry combines,
      one running carry per tile of a chunk; a split row adds the carry-in (<= ceil(nchunk/256)
      folds + a 13-level CTA scan) over chunk totals of the same depth (``_nchunk_row``: the plan's
      split, E = 2 .. 16 elements a thread: the worst of them).
    No path has more than L rounded combines (each adds at least one element)."""
    from baracuda_dsl.ops.scan.scan import _nchunk_row
    from baracuda_dsl.ops.scan.specs.scan import THREADS

    L = shape[axis] if shape else 1
    F = int(np.prod([n for i, n in enumerate(shape) if i != axis % max(len(shape), 1)]))
    if L <= 32 or (abs(axis_stride) != 1 and F >= 32):
        return max(L, 1)
    worst = 0
    for e in (2, 4, 8, 16):
        tile = THREADS * e
        nchunk, chunk = _nchunk_row(F, L, tile)
        ntiles = -(-chunk // tile)
        d = ntiles + e + 15
        if nchunk > 1:
            d += -(-nchunk // THREADS) + 13 + ntiles + e + 13
        worst = max(worst, d)
    return min(L, worst)


def _tdepth(x, axis):
    """:func:`_depth` of the torch tensor ``x``'s rows along ``axis``."""
    ax = axis % max(x.dim(), 1)
    return _depth(tuple(x.shape), ax, x.stride(ax) if x.dim() else 1)


def _lse_scale(xa, L):
    """Magnitude bound of every partial logcumsumexp of a row of ``xa``'s values (``lse`` of a
    subset S lies in [max_S x, max_S x + log L]): 1 + max|x| + log L (finite values)."""
    fin = np.abs(xa[np.isfinite(xa)])
    return 1.0 + (float(fin.max()) if fin.size else 0.0) + math.log(max(L, 1))


def check_forward(out, idx, xa, op, axis, exclusive, reverse, dtype, depth, what=""):
    """Check a forward scan of the float64 copy ``xa`` of the (exactly representable) input.

    * cumsum: output rounding + depth·eps(compute)·(the same scan of |x|);
    * cumprod: relative: output rounding + depth·eps(compute) (every product rounding is a
      relative (1 + δ) factor);
    * logcumsumexp: each combine hi + log1p(exp(lo - hi)) errs by <= u·(|node| + 3) absolute;
      4·depth·eps(compute)·:func:`_lse_scale` bounds the sum over a path;
    * cummax / cummin: selected values and their indices, exact."""
    ref, ridx = reference(xa, op, axis, exclusive, reverse)
    if op in ("cummax", "cummin"):
        assert_equal(out, ref, what=str(what))
        assert np.array_equal(_to_np(idx), ridx), what
        return
    rel = bounds(dtype)[0]
    e = eps(CT[dtype])
    if op == "cumsum":
        with np.errstate(invalid="ignore"):
            mag, _ = reference(np.abs(xa), "cumsum", axis, exclusive, reverse)
        _check(out, ref, dtype, rel, depth * e * mag, what)
    elif op == "cumprod":
        _check(out, ref, dtype, bounds(dtype, compute=CT[dtype], terms=depth)[0], 0.0, what)
    else:
        L = xa.shape[axis % xa.ndim] if xa.ndim else 1
        _check(out, ref, dtype, rel, 4 * depth * e * _lse_scale(xa, L), what)


def _float_input(rng, shape, op, dtype):
    if op == "cumprod":
        a = rng.uniform(0.9, 1.1, shape) * rng.choice([-1.0, 1.0], shape)
    elif op in ("cummax", "cummin"):
        a = rng.integers(-50, 50, shape).astype(np.float64)   # ties
    else:
        a = rng.standard_normal(shape)
    torch = _torch()
    t = _from_np(torch, a, dtype)
    return t, _to_np(t)   # reference from the rounded input


# ------------------------------------------------------------------------------- forward floats
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"])
def test_forward_floats(op, dtype):
    _torch()
    rng = np.random.default_rng(1)
    flags = [(False, False), (False, True)]
    if op in ("cumsum", "cumprod", "logcumsumexp"):
        flags += [(True, False), (True, True)]
    for shape, axis in CASES:
        x, xa = _float_input(rng, shape, op, dtype)
        d = _tdepth(x, axis)
        for exclusive, reverse in flags:
            out, idx = run_scan(x, op, axis, exclusive, reverse)
            check_forward(out, idx, xa, op, axis, exclusive, reverse, dtype, d,
                          (shape, axis, exclusive, reverse))


# ------------------------------------------------------------------------------ forward ints
@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
def test_forward_ints_exact(op, dtype):
    torch = _torch()
    rng = np.random.default_rng(2)
    npd = NP_INT[dtype]
    for shape, axis in CASES + [((3, 3 * 2**12 + 7), 1)]:
        if dtype == "bool":
            a = rng.integers(0, 2, shape).astype(np.bool_)
        elif op == "cumprod":
            lo = 0 if dtype.startswith("u") else -3
            a = rng.integers(lo, 4, shape).astype(npd)   # wraps in 64 bits on long rows
        else:
            info = np.iinfo(npd)
            a = rng.integers(info.min, info.max, shape, dtype=npd, endpoint=True)
        x = _from_np(torch, a, dtype)
        for reverse in (False, True):
            exclusives = (False, True) if op in ("cumsum", "cumprod") else (False,)
            for exclusive in exclusives:
                out, idx = run_scan(x, op, axis, exclusive, reverse)
                acc = np.uint64 if dtype.startswith("u") else np.int64
                with np.errstate(over="ignore"):
                    ref, ridx = reference(a, op, axis, exclusive, reverse, acc=acc)
                got = _to_np(out)
                if op in ("cummax", "cummin"):
                    assert got.dtype == a.dtype
                    assert np.array_equal(_to_np(idx), ridx), (shape, axis, reverse)
                assert np.array_equal(got, ref.astype(got.dtype)), (shape, axis, exclusive,
                                                                    reverse)


def test_int_overflow_wraps_like_numpy():
    torch = _torch()
    a = np.array([2**62, 2**62, 2**62, -5, 2**63 - 1], np.int64)
    out, _ = run_scan(torch.from_numpy(a).cuda(), "cumsum", 0)
    with np.errstate(over="ignore"):
        assert np.array_equal(out.cpu().numpy(), np.cumsum(a))
    b = np.full(70, 3, np.int8)
    out, _ = run_scan(torch.from_numpy(b).cuda(), "cumprod", 0)
    with np.errstate(over="ignore"):
        assert np.array_equal(out.cpu().numpy(), np.cumprod(b, dtype=np.int64))
    u = np.array([2**64 - 1, 5, 2**63], np.uint64)
    out, _ = run_scan(_from_np(torch, u, "uint64"), "cumsum", 0)
    with np.errstate(over="ignore"):
        assert np.array_equal(_to_np(out), np.cumsum(u))


# ------------------------------------------------------------------------------- long rows
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32", "float64"])
def test_long_rows_across_ctas(dtype):
    """Rows split over many CTAs (chunk totals + carry-in).  cumsum of small integers: every
    partial sum is an integer below 2^24, exact in the f32 / f64 accumulator whatever the
    association order, so a float result is the exact prefix sum rounded once into the output
    dtype (half an ulp) — a dropped, repeated or mis-carried element is caught exactly."""
    torch = _torch()
    rng = np.random.default_rng(3)
    n = 3 * 2**20 + 7
    for shape, axis in [((n,), 0), ((2, n // 2), 1), ((3 * 2**16 + 1, 5), 0)]:
        a = rng.integers(-4, 5, shape)      # |every partial sum| <= 4·n < 2^24
        if dtype == "int32":
            xa = a.astype(np.int32)
            x = torch.from_numpy(xa).cuda()
        else:
            x = _from_np(torch, a.astype(np.float64), dtype)
            xa = _to_np(x)
        for exclusive, reverse in [(False, False), (True, False), (False, True), (True, True)]:
            out, _ = run_scan(x, "cumsum", axis, exclusive, reverse)
            if dtype == "int32":
                ref, _ = reference(xa, "cumsum", axis, exclusive, reverse, acc=np.int64)
                assert np.array_equal(_to_np(out), ref)
            else:
                ref, _ = reference(xa, "cumsum", axis, exclusive, reverse)
                rtol, atol = bounds(dtype)          # one rounding of the exact sum
                assert_close(out, ref, rtol, atol, what=str((shape, axis, exclusive, reverse)))
        if dtype != "int32":
            xn, xna = _float_input(rng, shape, "logcumsumexp", dtype)
            d = _tdepth(xn, axis)
            for op in ("cummax", "logcumsumexp"):
                out, idx = run_scan(xn, op, axis)
                check_forward(out, idx, xna, op, axis, False, False, dtype, d, (shape, op))


def test_deterministic_bit_identical():
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(0)
    for shape, axis, op in [((3 * 2**20 + 7,), 0, "cumsum"), ((2**20 + 3,), 0, "logcumsumexp"),
                            ((4096, 300), 0, "cumsum"), ((64, 5000), 1, "cumprod")]:
        x = torch.randn(shape, generator=g, device="cuda")
        if op == "cumprod":
            x = 1 + 0.01 * x
        a, _ = run_scan(x, op, axis)
        b, _ = run_scan(x, op, axis)
        assert torch.equal(a.view(torch.int32), b.view(torch.int32))


# ----------------------------------------------------------------- strided, empty, NaN
def test_strided_inputs_and_outputs():
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(4)
    base = torch.randn(40, 600, generator=g, device="cuda", dtype=torch.float64)
    views = {"transposed": base.t(), "sliced": base[1:39:3, 5:580:2],
             "negative": base.flip(1), "negative_both": base.flip(0)[:, ::3].flip(1),
             "broadcast": base[:1].expand(7, 600)}
    for name, x in views.items():
        xa = x.cpu().numpy()
        for axis in (0, 1):
            d = _tdepth(x, axis)
            for op in ("cumsum", "cummax", "logcumsumexp"):
                for reverse in (False, True):
                    out, idx = run_scan(x, op, axis, reverse=reverse)
                    check_forward(out, idx, xa, op, axis, False, reverse, "float64", d,
                                  (name, axis, op, reverse))
            # strided (transposed) output views
            oshape = reference(xa, "cumsum", axis, exclusive=True)[0].shape
            out = _poison(torch, tuple(oshape)[::-1], torch.float64).t()
            run_scan(x, "cumsum", axis, exclusive=True, out=out)
            check_forward(out, None, xa, "cumsum", axis, True, False, "float64", d, (name, axis))


def test_empty_and_tiny():
    torch = _torch()
    for shape, axis in [((0,), 0), ((3, 0), 1), ((0, 4), 1), ((0, 4), 0), ((2, 0, 3), 2)]:
        x = torch.zeros(shape, device="cuda")
        out, _ = run_scan(x, "cumsum", axis)
        assert tuple(out.shape) == shape
        out, _ = run_scan(x, "cumsum", axis, exclusive=True)
        ref, _ = reference(x.cpu().numpy().astype(np.float64), "cumsum", axis, exclusive=True)
        assert np.array_equal(out.cpu().numpy(), ref)
        out, _ = run_scan(x, "cumprod", axis, exclusive=True, reverse=True)
        ref, _ = reference(x.cpu().numpy().astype(np.float64), "cumprod", axis, True, True)
        assert np.array_equal(out.cpu().numpy(), ref)
    out, _ = run_scan(torch.tensor(2.5, device="cuda"), "cumsum", 0)
    assert float(out.cpu()) == 2.5


def test_nan_and_inf():
    torch = _torch()
    a = np.array([[1.0, np.nan, 3.0, 0.5, np.nan, 7.0, -np.inf, np.inf, 2.0],
                  [-np.inf, -np.inf, 1.0, np.inf, np.inf, -1.0, 4.0, 4.0, np.nan]])
    for dtype in FLOATS:
        x = _from_np(torch, a, dtype)
        for op in ("cummax", "cummin", "cumsum", "logcumsumexp"):
            for reverse in (False, True):
                out, idx = run_scan(x, op, 1, reverse=reverse)
                # NaN where the reference is NaN, the same infinities, finite values in bounds
                with np.errstate(invalid="ignore", over="ignore"):
                    check_forward(out, idx, a, op, 1, False, reverse, dtype, a.shape[1],
                                  (dtype, op, reverse))


# ------------------------------------------------------------------------------- backward
def _torch_fw(torch, x, op, axis, exclusive, reverse):
    if reverse:
        x = x.flip(axis)
    if op == "cumsum":
        y = torch.cumsum(x, axis)
    elif op == "cumprod":
        y = torch.cumprod(x, axis)
    elif op == "cummax":
        y = torch.cummax(x, axis)[0]
    elif op == "cummin":
        y = torch.cummin(x, axis)[0]
    else:
        y = torch.logcumsumexp(x, axis)
    if exclusive:
        shp = list(y.shape)
        shp[axis] = 1
        y = torch.cat([torch.zeros(shp, dtype=y.dtype), y], axis)
    if reverse:
        y = y.flip(axis)
    return y


def _bw_error(torch, xa, dy64, y64, op, ax, exclusive, reverse, dtype, d):
    """Bound on the kernel's rounding error of each dx beyond the output rounding, relative to
    ``mag`` = the same gradient of |dy| (and of |x| for cumprod): Σ of |the terms| each dx_i
    combines (exact: every term has a fixed sign in |x|, |dy|).  ``d``: :func:`_depth` (the
    backward scans the same rows in the opposite direction).

    * cumsum / cummax / cummin: a (segmented) reverse sum of dy: d·u;
    * cumprod: dx_i = y_{i-1}·(dy_i + U_{i+1}) (reverse affine recurrence, ops/scan/scan.py)
      reads the forward y rounded to ``dtype`` (eps/2 relative, d·u from the forward's products)
      and combines (x, x·dy) maps with 3 roundings per combine, 3 more for the element and emit:
      eps(dtype)/2 + (4d + 3)·u;
    * logcumsumexp: dx_i = Σ_j dy_j·exp(x_i − y_j) from y rounded to ``dtype``: an error Δy_j
      is a relative error Δy_j of its term — <= C·eps(dtype)/2 with C >= max|y| — plus per combine
      the rounding of a − m (<= 2C·u relative) and of exp, the product and the sum; the forward's
      own error (4d·u·S, :func:`check_forward`) adds to Δy: C·(eps(dtype)/2 + (6d + 3)·u) with
      C = max(max|y|, S) + 4."""
    xs = torch.from_numpy(np.abs(xa) if op == "cumprod" else xa.copy()).requires_grad_(True)
    (_torch_fw(torch, xs, op, ax, exclusive, reverse) * dy64.abs()).sum().backward()
    mag = xs.grad.numpy()
    e = eps(CT[dtype])
    if op in ("cumsum", "cummax", "cummin"):
        return d * e * mag
    if op == "cumprod":
        return (eps(dtype) / 2 + (4 * d + 3) * e) * mag
    yv = y64.detach().numpy()
    c = max(float(np.abs(yv[np.isfinite(yv)]).max()), _lse_scale(xa, xa.shape[ax])) + 4
    return c * (eps(dtype) / 2 + (6 * d + 3) * e) * mag


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"])
def test_backward_vs_autograd(op, dtype):
    torch = _torch()
    from baracuda_dsl.ops.scan.scan import (ScanBackwardArgs, ScanBackwardDescriptor,
                                            ScanBackwardPlan)

    rng = np.random.default_rng(5)
    flags = [(False, False), (False, True)] + ([(True, False), (True, True)]
                                               if op == "cumsum" else [])
    cases = [((7,), 0), ((33, 5), 0), ((4, 1000), 1), ((3, 4097), -1), ((1000, 7), 1),
             ((2, 3 * 2**16 + 5), 1)]
    for shape, axis in cases:
        x, xa = _float_input(rng, shape, op, dtype)
        if op == "cumprod":
            flat = x.view(-1)
            flat[:: 97] = 0          # exact zeros (one and several per row)
            flat[1:: 389] = 0
            xa = _to_np(x)
        ax = axis % len(shape)
        d = _tdepth(x, axis)
        for exclusive, reverse in flags:
            x64 = torch.from_numpy(xa).requires_grad_(True)
            y64 = _torch_fw(torch, x64, op, ax, exclusive, reverse)
            dy64 = torch.from_numpy(rng.standard_normal(tuple(y64.shape)))
            dy = _from_np(torch, dy64.numpy(), dtype)
            dy64 = torch.from_numpy(_to_np(dy))
            (y64 * dy64).sum().backward()
            ref = x64.grad.numpy()
            y, idx = run_scan(x, op, axis, exclusive, reverse)
            desc = ScanBackwardDescriptor(shape, axis, op, dtype, exclusive, reverse)
            plan = ScanBackwardPlan.select(desc)
            dx = _poison(torch, shape, _tdt(torch, dtype))
            plan.run(ScanBackwardArgs(dy, dx, x=x, y=y, indices=idx), workspace=_ws(torch, plan))
            torch.cuda.synchronize()
            _check(dx, ref, dtype, bounds(dtype)[0],
                   _bw_error(torch, xa, dy64, y64, op, ax, exclusive, reverse, dtype, d),
                   (op, shape, axis, exclusive, reverse))


def test_backward_deterministic():
    torch = _torch()
    from baracuda_dsl.ops.scan.scan import (ScanBackwardArgs, ScanBackwardDescriptor,
                                            ScanBackwardPlan)

    g = torch.Generator(device="cuda").manual_seed(6)
    x = torch.randn(3 * 2**20 + 7, generator=g, device="cuda")
    dy = torch.randn(x.shape, generator=g, device="cuda")
    y, idx = run_scan(x, "cummax", 0)
    plan = ScanBackwardPlan.select(ScanBackwardDescriptor(tuple(x.shape), 0, "cummax", "float32"))
    outs = []
    for _ in range(2):
        dx = _poison(torch, tuple(x.shape), x.dtype)
        plan.run(ScanBackwardArgs(dy, dx, indices=idx), workspace=_ws(torch, plan))
        outs.append(dx)
    assert torch.equal(outs[0].view(torch.int32), outs[1].view(torch.int32))
    ii, dyc = idx.cpu(), dy.double().cpu()
    ref = torch.zeros(x.shape, dtype=torch.float64).index_add_(0, ii, dyc)
    mag = torch.zeros(x.shape, dtype=torch.float64).index_add_(0, ii, dyc.abs())
    # a segmented reverse sum of dy: depth·u relative to Σ|dy| of each segment
    _check(outs[0], ref, "float32", bounds("float32")[0],
           _tdepth(x, 0) * eps("float32") * mag.numpy(), "cummax backward")


# ------------------------------------------------------------------------------- compaction
def _compact(mask, mode):
    torch = _torch()
    from baracuda_dsl.ops.scan.compaction import CompactArgs, CompactDescriptor, CompactPlan

    dname = str(mask.dtype).replace("torch.", "")
    plan = CompactPlan.select(CompactDescriptor(tuple(mask.shape), dname, mode))
    ws = _ws(torch, plan)
    cnt = torch.full((1,), -7, dtype=torch.int64, device="cuda")
    plan.run_count(CompactArgs(mask, cnt), workspace=ws)
    n = int(cnt.item())
    shape = (n,) if mode == "flat" else (mask.dim(), n)
    out = _poison(torch, shape, torch.int64)
    plan.run_scatter(CompactArgs(mask, cnt, out), workspace=ws)
    torch.cuda.synchronize()
    return n, out


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "int32", "int64", "float16",
                                   "bfloat16", "float32", "float64", "complex64"])
def test_nonzero_matches_torch(dtype):
    torch = _torch()
    g = torch.Generator(device="cuda").manual_seed(7)
    for shape in [(1,), (7,), (33, 5), (4, 1000), (3, 4097), (2, 3, 4, 5), (0, 3), (3 * 2**20 + 7,),
                  (2, 1, 2, 1, 2, 1, 2, 3)]:
        m = (torch.rand(shape, generator=g, device="cuda") < 0.3)
        if dtype == "bool":
            x = m
        elif dtype == "complex64":
            x = torch.complex(m.float(), torch.zeros(shape, device="cuda"))
            x[..., ::2] = torch.complex(torch.zeros_like(x.real[..., ::2]), x.real[..., ::2])
        else:
            x = (m.to(torch.int64) * torch.randint(1, 100, shape, generator=g,
                                                   device="cuda")).to(_tdt(torch, dtype))
            if dtype.startswith("float") or dtype == "bfloat16":
                x = torch.where(m, x, torch.tensor(-0.0, dtype=x.dtype, device="cuda"))
                if x.numel() > 3:
                    x.view(-1)[3] = float("nan")
        ref = torch.nonzero(x if dtype != "complex64" else (x != 0)).t()
        n, out = _compact(x, "coords")
        assert n == ref.shape[1] and torch.equal(out, ref), (shape,)
        n, flat = _compact(x, "flat")
        ref_flat = torch.nonzero(x.reshape(-1) if dtype != "complex64"
                                 else (x.reshape(-1) != 0)).view(-1)
        assert torch.equal(flat, ref_flat), (shape,)
        if x.dim() == 2 and x.numel():
            xt = x.t()      # strided mask
            n, out = _compact(xt, "coords")
            ref = torch.nonzero(xt if dtype != "complex64" else (xt != 0)).t()
            assert torch.equal(out, ref)


def test_nonzero_all_zero_and_all_set():
    torch = _torch()
    n, out = _compact(torch.zeros(5000, dtype=torch.float32, device="cuda"), "flat")
    assert n == 0 and out.numel() == 0
    n, out = _compact(torch.ones(3, 4097, dtype=torch.bool, device="cuda"), "flat")
    assert n == 3 * 4097 and torch.equal(out.cpu(), torch.arange(3 * 4097))
