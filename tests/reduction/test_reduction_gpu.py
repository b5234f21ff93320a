"""ReducePlan / ArgReducePlan / ReduceToPlan on the GPU with torch operands against float64
torch references: poisoned outputs, strided inputs, workspace-backed split and copy paths.

Every element is checked (tests/_checks.py).  Sums, means and products run on inputs whose every
partial result is exact in the accumulator whatever the combination order, so a result is the
exact value rounded once into the output dtype: a dropped, repeated or misplaced element fails
exactly.  The other bounds are derived per op (see each test)."""

import numpy as np
import pytest

from tests._checks import assert_within, assert_close, assert_equal, bounds, eps, poison

pytestmark = pytest.mark.gpu

#: compute dtype of each float dtype (halves accumulate in f32, f64 in f64)
CT = {"float32": "float32", "float16": "float32", "bfloat16": "float32", "float64": "float64"}


def _ws(torch, plan):
    n = plan.workspace_size()
    return torch.empty(max(n, 1), dtype=torch.uint8, device="cuda") if n else None


_check = assert_within   # rel per element + the op's own error bound abs_err


def _rdepth(R, n_out):
    """Most rounded combines on a path of an ``axis_reduce`` sum over R elements of a unit-stride
    run (ops/reduction/axis_reduce.py: 32 or 256 threads per output): a thread folds at most
    ceil(R/32) elements (its vectors included), then 5 (8) shuffle / warp levels; a split
    reduction adds pass 2 over at most ``max_segments`` partials (ceil(S/32) + 8).  Never more
    than R.  The error of a sum of depth d is <= d·u·Σ|terms|."""
    from baracuda_dsl.ops.reduction.axis_reduce import max_segments

    s = max_segments(n_out, R)
    d = -(-R // 32) + 8
    if s > 1:
        d += -(-s // 32) + 8
    return min(max(R, 1), d)


def _layout(shape, axes):
    kept = [i for i in range(len(shape)) if axes is not None and i not in axes]
    red = list(range(len(shape))) if axes is None else list(axes)
    return kept, red


def _exact_sum_data(rng, shape, dtype):
    """sum / mean / max / min data: integers in [-2, 2] (f32, bf16: exact in the dtype; every
    partial sum of <= 2^21 + 3 of them is an integer below 2^24, exact in the f32 accumulator);
    f64: multiples of 2^-30 below 2 in magnitude (sums exact in f64 — below 2^53 units — but not
    in f32: an f32 accumulator would show); int32: integers in [-16, 16]."""
    if dtype == "float64":
        return rng.integers(-2**31, 2**31, shape) * 2.0**-30
    if dtype == "int32":
        return rng.integers(-16, 17, shape).astype(np.float64)
    return rng.integers(-2, 3, shape).astype(np.float64)


def _exact_prod_data(rng, shape, axes, dtype):
    """prod data: per output ±1 except min(R, 12) positions holding 2, 0.5, 1.5 or 0.75 (int32:
    2 or 3), so every partial product is ±2^a·3^b with |a| <= 24, b <= 12: exact in the f32 / f64
    (int64) accumulator whatever the order — the result is the exact product rounded once."""
    kept, red = _layout(shape, axes)
    n_out = int(np.prod([shape[i] for i in kept]))
    R = int(np.prod([shape[i] for i in red]))
    y = rng.choice([-1.0, 1.0], (n_out, R))
    k = min(R, 12)
    pos = np.argsort(rng.random((n_out, R)), axis=1)[:, :k]
    vals = [2.0, 3.0] if dtype == "int32" else [2.0, 0.5, 1.5, 0.75]
    np.put_along_axis(y, pos, np.take_along_axis(y, pos, 1) * rng.choice(vals, (n_out, k)), 1)
    perm = kept + red
    return np.transpose(y.reshape([shape[i] for i in perm]), np.argsort(perm))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int32"])
def test_reduce_plan_vs_torch(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.reduction.reductions import ReduceArgs, ReduceDescriptor, ReducePlan

    rng = np.random.default_rng(0)
    tdt = getattr(torch, dtype)
    for shape, axes in (((64, 1000), (1,)), ((1000, 64), (0,)), ((3, 4, 5, 6, 7), (1, 3)),
                        ((2**21 + 3,), None), ((9, 70000), (1,))):
        for op in ("sum", "max", "min", "mean", "prod"):
            if op == "mean" and dtype == "int32":
                continue
            a = (_exact_prod_data(rng, shape, axes, dtype) if op == "prod"
                 else _exact_sum_data(rng, shape, dtype))
            # strided rows: x is every other row of a buffer whose other rows are NaN (ints: a
            # huge value), so a kernel reading the wrong rows shows
            big = torch.full((2 * shape[0],) + shape[1:], 2**30 if dtype == "int32"
                             else float("nan"), dtype=torch.float64)
            big[::2] = torch.from_numpy(a)
            x = big.to(tdt).cuda()[::2]
            d = ReduceDescriptor(shape, axes, op, dtype)
            p = ReducePlan.select(d)
            out = poison(torch, d.out_shape, getattr(torch, d.out_dtype.name))
            p.run(ReduceArgs(x, out), workspace=_ws(torch, p))
            xr = x.double()
            dims = tuple(range(len(shape))) if axes is None else axes
            if op in ("sum", "mean"):
                ref = getattr(torch, op)(xr, dim=dims)
            elif op == "prod":
                ref = xr
                for ax in sorted(dims, reverse=True):
                    ref = ref.prod(ax)
            else:
                ref = getattr(torch, "amax" if op == "max" else "amin")(xr, dim=dims)
            what = (shape, axes, op)
            if dtype == "int32" or op in ("max", "min"):
                assert_equal(out, ref, what=str(what))          # exact (int64 sums/products)
            elif op == "mean":
                # the exact sum × (1/N): 1/N and the product rounded in the compute dtype
                assert_close(out, ref, *bounds(dtype, compute=CT[dtype], terms=2),
                             what=str(what))
            else:
                assert_close(out, ref, *bounds(dtype), what=str(what))   # one final rounding


def test_argreduce_and_reduce_to():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.reduction.reductions import (ArgReducePlan, ReduceArgs, ReduceDescriptor,
                                                       ReduceToDescriptor, ReduceToPlan)

    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(37, 100003, generator=g, device="cuda")
    d = ReduceDescriptor(x.shape, (1,), "argmax", "f32")
    p = ArgReducePlan.select(d)
    idx = poison(torch, (37,), torch.int64)
    p.run(ReduceArgs(x, indices=idx), workspace=_ws(torch, p))
    assert torch.equal(idx, x.argmax(1))
    # multiples of 2^-20 below 1: every partial sum is exact in f64, whatever the order, so the
    # sums are exact (one rounding of an exact value: half an ulp)
    dy = (torch.randint(-2**20, 2**20, (8, 16, 32), generator=g, device="cuda")
          .double() * 2.0**-20)
    for target in ((16, 1), (32,), (8, 1, 32), (1, 1, 1), ()):
        t = ReduceToPlan.select(ReduceToDescriptor(dy.shape, target, "f64"))
        out = poison(torch, target, torch.float64)
        t.run(ReduceArgs(dy, out), workspace=_ws(torch, t))
        pad = (1,) * (3 - len(target)) + tuple(target)
        dims = tuple(i for i, (a, b) in enumerate(zip(pad, dy.shape)) if a == 1 and b != 1)
        ref = dy.sum(dim=dims, keepdim=True).reshape(target)
        assert_close(out, ref, *bounds("float64"), what=str(target))


def _keep(t, shape, dims):
    """``t`` of the reduced shape viewed with 1s at ``dims`` (broadcasts against ``shape``)."""
    return t.reshape([1 if i in dims else n for i, n in enumerate(shape)])


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "logsumexp", "norm2", "var", "std"])
def test_reduce_backward_vs_autograd(op, dtype):
    """dx vs float64 autograd from the same (rounded) x and dy.  ReduceBackwardPlan is a chain
    of elementwise launches, each rounding into ``dtype`` (ops/reduction/reductions_bw.py), so the
    bounds count those roundings as half-ulps (``ulps``) plus the compute roundings:

    * sum: a copy (exact); mean: dy·(1/N); max / min: dy / tie count, selected: one rounding;
    * logsumexp: x − y, exp, × dy, each rounded, from y rounded to the dtype: a rounding of
      x − y (or of y) is an absolute error of the exponent, a relative error of the result:
      (2 + max|x − y| + max|y|) half-ulps;
    * norm2: y rounded, dy / y, x·g: 3 half-ulps;
    * var / std: x − mean (mean: a ReducePlan mean rounded to the dtype, its sum <= R·u·mean|x|
      off — an absolute error of x − mean, so relative to |dy|·(|mean|·eps/2 + R·u·mean|x|)·k),
      then dy·(2/dof) or (dy / y)·(1/dof) and the product: 3 (var) / 5 (std) half-ulps."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.reduction.reductions_bw import (ReduceBackwardArgs,
                                                          ReduceBackwardDescriptor,
                                                          ReduceBackwardPlan)

    g = torch.Generator(device="cuda").manual_seed(2)
    tdt = getattr(torch, dtype)
    ct = CT[dtype]
    for shape, axes in (((33, 70), (1,)), ((4, 5, 6), (0, 2)), ((1000,), None), ((7, 9), (0,))):
        x = torch.randn(shape, generator=g, device="cuda", dtype=torch.float64)
        if op in ("max", "min"):
            x = x.round()  # ties: the gradient is shared evenly
        x = x.to(tdt).double()                 # the reference sees the rounded inputs
        dims = tuple(range(len(shape))) if axes is None else axes
        R = int(np.prod([shape[i] for i in dims]))
        xr = x.clone().requires_grad_(True)
        fns = {"sum": lambda t: t.sum(dims), "mean": lambda t: t.mean(dims),
               "max": lambda t: t.amax(dims), "min": lambda t: t.amin(dims),
               "logsumexp": lambda t: torch.logsumexp(t, dims),
               "norm2": lambda t: torch.linalg.vector_norm(t, 2, dims),
               "var": lambda t: t.var(dims, correction=1), "std": lambda t: t.std(dims, correction=1)}
        y64 = fns[op](xr)
        dy64 = torch.randn(y64.shape, generator=g, device="cuda",
                           dtype=torch.float64).to(tdt).double()
        (ref,) = torch.autograd.grad(y64, xr, dy64)
        xd, yd, dyd = x.to(tdt), y64.detach().to(tdt), dy64.to(tdt)
        plan = ReduceBackwardPlan.select(ReduceBackwardDescriptor(shape, axes, op, dtype,
                                                                  correction=1.0))
        dx = poison(torch, shape, tdt)
        plan.run(ReduceBackwardArgs(dyd, dx, xd, yd), workspace=_ws(torch, plan))
        what = (op, shape, axes)
        y = y64.detach()
        if op == "sum":
            _check(dx, ref, dtype, bounds(dtype)[0], 0.0, what)
        elif op in ("mean", "max", "min"):
            _check(dx, ref, dtype, bounds(dtype, compute=ct, terms=2)[0], 0.0, what)
        elif op == "logsumexp":
            half = 2 + float((x - _keep(y, shape, dims)).abs().max()) + float(y.abs().max())
            _check(dx, ref, dtype, bounds(dtype, compute=ct, terms=4, ulps=half)[0], 0.0, what)
        elif op == "norm2":
            _check(dx, ref, dtype, bounds(dtype, compute=ct, terms=3, ulps=3)[0], 0.0, what)
        else:
            mean = x.mean(dims, keepdim=True)
            k = _keep(dy64.abs(), shape, dims) * (2.0 if op == "var" else 1.0) / (R - 1)
            if op == "std":
                k = k / _keep(y, shape, dims)
            err = k * (mean.abs() * eps(dtype) / 2 + R * eps(ct) * x.abs().mean(dims, keepdim=True))
            _check(dx, ref, dtype, bounds(dtype, compute=ct, terms=4, ulps=3 if op == "var" else 5)[0],
                   err, what)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_stat_bool_count_trace_plans(dtype):
    """Stat reductions (float32 temporaries for halves, one rounding into the dtype at the end),
    with R elements per output and d = :func:`_rdepth` (the composites reduce dense temporaries
    along unit-stride runs):

    * norm2 = √Σx²: a sum of positive terms (d·u relative) and the root: d + 2 roundings;
    * var = Σ(x − mean)²/(N − 1): the positive sum (d·u), squares, the division; to first order
      the mean's error cancels (Σ(x − mean) = 0): d + 5; std = √var: d + 6;
    * logsumexp = m + log Σ exp(x − m): the log turns the sum's relative error (d + 2 + spread
      roundings, spread = max(m − x) from rounding x − m) into an absolute error; m + log: one
      more rounding relative to the result;
    * all / any / count_nonzero: exact; trace: a sum of <= 5 diagonal entries (d <= 5)."""
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.reduction.composites import (BoolReduceDescriptor, BoolReducePlan,
                                                       CountReducePlan, TraceDescriptor, TracePlan)
    from baracuda_dsl.ops.reduction.reductions import ReduceArgs, ReduceDescriptor, ReducePlan

    g = torch.Generator(device="cuda").manual_seed(3)
    tdt = getattr(torch, dtype)
    ct = CT[dtype]
    u = eps(ct)
    for shape, axes in (((33, 700), (1,)), ((4, 5, 6), (0, 2)), ((3000,), None), ((9, 0), (1,))):
        x = torch.randn((shape[0] * 2,) + shape[1:], generator=g, device="cuda").to(tdt)[::2]
        x64 = x.double()
        dims = tuple(range(len(shape))) if axes is None else axes
        R = int(np.prod([shape[i] for i in dims]))
        n_out = int(np.prod(shape)) // max(R, 1)
        dd = _rdepth(R, n_out)
        refs = {"var": x64.var(dims, correction=1), "std": x64.std(dims, correction=1),
                "logsumexp": torch.logsumexp(x64, dims),
                "norm2": torch.linalg.vector_norm(x64, 2, dims)}
        for op, ref in refs.items():
            p = ReducePlan.select(ReduceDescriptor(shape, axes, op, dtype, correction=1.0))
            out = poison(torch, tuple(ref.shape), tdt)
            p.run(ReduceArgs(x, out), workspace=_ws(torch, p))
            what = (op, shape, axes)
            if op == "logsumexp":
                spread = float((_keep(ref, shape, dims) - x64).abs().max()) if x.numel() else 0.0
                _check(out, ref, dtype, bounds(dtype, compute=ct, terms=1)[0],
                       (dd + 3 + spread) * u, what)
            else:
                terms = {"norm2": dd + 2, "var": dd + 5, "std": dd + 6}[op]
                _check(out, ref, dtype, bounds(dtype, compute=ct, terms=terms)[0], 0.0, what)
        xz = x.clone()
        xz.view(-1)[::3] = 0
        if xz.numel() > 4:
            xz.view(-1)[1] = float("nan")
        for op, ref in (("all", xz.bool().all(dims) if xz.numel() else None),
                        ("any", xz.bool().any(dims) if xz.numel() else None),
                        ("count_nonzero", torch.count_nonzero(xz, dims))):
            cls = CountReducePlan if op == "count_nonzero" else BoolReducePlan
            p = cls.select(BoolReduceDescriptor(shape, axes, op, dtype))
            if ref is None:
                continue
            # poison: the negation of the expected booleans (every unwritten element differs),
            # the int64 sentinel for counts
            out = ~ref if ref.dtype == torch.bool else poison(torch, tuple(ref.shape), ref.dtype)
            p.run(ReduceArgs(xz, out), workspace=_ws(torch, p))
            assert torch.equal(out, ref), (op, shape, axes)
    m = torch.randn(3, 5, 6, generator=g, device="cuda").to(tdt)
    for off in (-2, 0, 3, 9):
        t = TracePlan.select(TraceDescriptor((3, 5, 6), off, dtype))
        out = poison(torch, (3,), tdt)
        t.run(ReduceArgs(m, out), workspace=_ws(torch, t))
        diag = torch.diagonal(m.double(), off, -2, -1)
        ref = diag.sum(-1)
        _check(out, ref, dtype, bounds(dtype)[0], 5 * u * diag.abs().sum(-1), ("trace", off))
