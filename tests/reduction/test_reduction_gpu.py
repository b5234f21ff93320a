"""ReducePlan / ArgReducePlan / ReduceToPlan on the GPU with torch operands against float64
torch references: poisoned outputs, strided inputs, workspace-backed split and copy paths."""

import pytest

pytestmark = pytest.mark.gpu


def _ws(torch, plan):
    n = plan.workspace_size()
    return torch.empty(max(n, 1), dtype=torch.uint8, device="cuda") if n else None


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int32"])
def test_reduce_plan_vs_torch(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.reduction.reductions import ReduceArgs, ReduceDescriptor, ReducePlan

    g = torch.Generator(device="cuda").manual_seed(0)
    tdt = getattr(torch, dtype)
    for shape, axes in (((64, 1000), (1,)), ((1000, 64), (0,)), ((3, 4, 5, 6, 7), (1, 3)),
                        ((2**21 + 3,), None), ((9, 70000), (1,))):
        base = torch.randn((2 * shape[0],) + shape[1:], generator=g, device="cuda")
        x = (base * 4 if dtype == "int32" else base).to(tdt)[::2]          # strided rows
        for op in ("sum", "max", "min", "mean", "prod"):
            if op == "mean" and dtype == "int32":
                continue
            d = ReduceDescriptor(shape, axes, op, dtype)
            p = ReducePlan.select(d)
            out = torch.full(d.out_shape, 77, device="cuda").to(getattr(torch, d.out_dtype.name))
            p.run(ReduceArgs(x, out), workspace=_ws(torch, p))
            xr = x.double()
            dims = tuple(range(len(shape))) if axes is None else axes
            if op in ("sum", "mean"):
                ref = getattr(torch, op)(xr, dim=dims)
            elif op == "prod":
                ref = xr
                for a in sorted(dims, reverse=True):
                    ref = ref.prod(a)
                if dtype != "int32":
                    continue  # float products of thousands of normals under/overflow
            else:
                ref = getattr(torch, "amax" if op == "max" else "amin")(xr, dim=dims)
            got = out.double()
            if dtype == "int32" and op == "prod":
                continue  # int64 wrap-around: exactness covered by the namespace tests
            err = float((got - ref).norm() / ref.norm().clamp_min(1e-30))
            tol = {"float32": 1e-5, "bfloat16": 1e-2, "float64": 1e-12, "int32": 0.0}[dtype]
            assert err <= tol, (shape, axes, op, err)


def test_argreduce_and_reduce_to():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.reduction.reductions import (ArgReducePlan, ReduceArgs, ReduceDescriptor,
                                                       ReduceToDescriptor, ReduceToPlan)

    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(37, 100003, generator=g, device="cuda")
    d = ReduceDescriptor(x.shape, (1,), "argmax", "f32")
    p = ArgReducePlan.select(d)
    idx = torch.full((37,), -5, dtype=torch.int64, device="cuda")
    p.run(ReduceArgs(x, indices=idx), workspace=_ws(torch, p))
    assert torch.equal(idx, x.argmax(1))
    dy = torch.randn(8, 16, 32, generator=g, device="cuda", dtype=torch.float64)
    for target in ((16, 1), (32,), (8, 1, 32), (1, 1, 1), ()):
        t = ReduceToPlan.select(ReduceToDescriptor(dy.shape, target, "f64"))
        out = torch.full(target, float("nan"), dtype=torch.float64, device="cuda")
        t.run(ReduceArgs(dy, out), workspace=_ws(torch, t))
        pad = (1,) * (3 - len(target)) + tuple(target)
        dims = tuple(i for i, (a, b) in enumerate(zip(pad, dy.shape)) if a == 1 and b != 1)
        ref = dy.sum(dim=dims, keepdim=True).reshape(target)
        assert torch.allclose(out, ref, rtol=1e-12, atol=1e-12), target


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "logsumexp", "norm2", "var", "std"])
def test_reduce_backward_vs_autograd(op, dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.reduction.reductions_bw import (ReduceBackwardArgs,
                                                          ReduceBackwardDescriptor,
                                                          ReduceBackwardPlan)

    g = torch.Generator(device="cuda").manual_seed(2)
    tdt = getattr(torch, dtype)
    for shape, axes in (((33, 70), (1,)), ((4, 5, 6), (0, 2)), ((1000,), None), ((7, 9), (0,))):
        x = torch.randn(shape, generator=g, device="cuda", dtype=torch.float64)
        if op in ("max", "min"):
            x = x.round()  # ties: the gradient is shared evenly
        dims = tuple(range(len(shape))) if axes is None else axes
        xr = x.clone().requires_grad_(True)
        fns = {"sum": lambda t: t.sum(dims), "mean": lambda t: t.mean(dims),
               "max": lambda t: t.amax(dims), "min": lambda t: t.amin(dims),
               "logsumexp": lambda t: torch.logsumexp(t, dims),
               "norm2": lambda t: torch.linalg.vector_norm(t, 2, dims),
               "var": lambda t: t.var(dims, correction=1), "std": lambda t: t.std(dims, correction=1)}
        y64 = fns[op](xr)
        dy64 = torch.randn(y64.shape, generator=g, device="cuda", dtype=torch.float64)
        (ref,) = torch.autograd.grad(y64, xr, dy64)
        xd, yd, dyd = x.to(tdt), y64.detach().to(tdt), dy64.to(tdt)
        plan = ReduceBackwardPlan.select(ReduceBackwardDescriptor(shape, axes, op, dtype,
                                                                  correction=1.0))
        dx = torch.full(shape, float("nan"), device="cuda", dtype=tdt)
        plan.run(ReduceBackwardArgs(dyd, dx, xd, yd), workspace=_ws(torch, plan))
        err = float((dx.double() - ref).norm() / ref.norm().clamp_min(1e-30))
        tol = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 3e-2}[dtype]
        assert err <= tol, (op, shape, axes, err)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_stat_bool_count_trace_plans(dtype):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.reduction.composites import (BoolReduceDescriptor, BoolReducePlan,
                                                       CountReducePlan, TraceDescriptor, TracePlan)
    from baracuda_dsl.ops.reduction.reductions import ReduceArgs, ReduceDescriptor, ReducePlan

    g = torch.Generator(device="cuda").manual_seed(3)
    tdt = getattr(torch, dtype)
    tol = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 1e-2, "float16": 2e-3}[dtype]
    for shape, axes in (((33, 700), (1,)), ((4, 5, 6), (0, 2)), ((3000,), None), ((9, 0), (1,))):
        x = torch.randn((shape[0] * 2,) + shape[1:], generator=g, device="cuda").to(tdt)[::2]
        x64 = x.double()
        dims = tuple(range(len(shape))) if axes is None else axes
        refs = {"var": x64.var(dims, correction=1), "std": x64.std(dims, correction=1),
                "logsumexp": torch.logsumexp(x64, dims),
                "norm2": torch.linalg.vector_norm(x64, 2, dims)}
        for op, ref in refs.items():
            p = ReducePlan.select(ReduceDescriptor(shape, axes, op, dtype, correction=1.0))
            out = torch.full(ref.shape, 7.0, device="cuda", dtype=tdt)
            p.run(ReduceArgs(x, out), workspace=_ws(torch, p))
            got = out.double()
            if ref.numel():
                assert torch.equal(torch.isnan(got), torch.isnan(ref)), (op, shape)
                m = torch.isfinite(ref)
                err = float((got[m] - ref[m]).norm() / ref[m].norm().clamp_min(1e-30))
                assert err <= tol, (op, shape, axes, err)
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
            out = torch.empty(ref.shape, device="cuda", dtype=ref.dtype)
            p.run(ReduceArgs(xz, out), workspace=_ws(torch, p))
            assert torch.equal(out, ref), (op, shape, axes)
    m = torch.randn(3, 5, 6, generator=g, device="cuda").to(tdt)
    for off in (-2, 0, 3, 9):
        t = TracePlan.select(TraceDescriptor((3, 5, 6), off, dtype))
        out = torch.empty(3, device="cuda", dtype=tdt)
        t.run(ReduceArgs(m, out), workspace=_ws(torch, t))
        ref = torch.diagonal(m.double(), off, -2, -1).sum(-1)
        assert float((out.double() - ref).abs().max()) <= 10 * tol * (1 + float(ref.abs().max()))
