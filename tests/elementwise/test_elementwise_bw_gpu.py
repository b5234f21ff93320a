"""Elementwise backward plans on the GPU against float64 torch autograd (CPU) of the equivalent
torch function on the same (rounded) inputs and dy.

Every op with a backward (``OPS[op].grad``) in f32 and f64, a subset also in bf16 / f16; same-shape
operands, broadcast operands (gradients summed over the broadcast dims: (M,N)&(N,), (M,1,K)&(M,N,K),
(M,N)&(M,1)...), Python-scalar operands (no gradient), gradients not requested (None),
non-contiguous dy, and empty broadcasts (gradients of non-empty inputs are zeros).  Gradient
buffers are NaN-poisoned first.  Kinks follow torch (relu'(0) = 0, hardtanh / clip bounds, ...);
maximum / minimum split ties 0.5 / 0.5 as torch does; floor_divide and the rounding ops have zero
gradients.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import _elementwise_refs as R
from baracuda_dsl.ops.elementwise.specs.elementwise import OPS

pytestmark = pytest.mark.gpu

BW_OPS = [op for op, s in OPS.items() if s.grad is not None]
HALF_SUBSET = ["exp", "tanh", "sqrt", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "mish",
               "softplus", "hardswish", "elu", "leaky_relu", "erfinv", "add", "multiply",
               "divide", "maximum", "pow", "logaddexp", "glu", "reglu", "swiglu", "geglu",
               "prelu", "where", "clip", "lerp", "addcmul", "addcdiv", "fma"]
CASES = ([(op, dt) for op in BW_OPS for dt in ("f32", "f64")] +
         [(op, dt) for op in HALF_SUBSET for dt in ("bf16", "f16")])
TOL = {"f64": 1e-10, "f32": 1e-5, "f16": 5e-3, "bf16": 3e-2}
SPECIAL_TOL = {"f64": 1e-9, "f32": 5e-5, "f16": 5e-3, "bf16": 3e-2}
SPECIAL = frozenset(("erfinv", "lgamma", "digamma", "pow"))
ZERO_GRAD = frozenset(("ceil", "floor", "trunc", "round", "sign", "floor_divide"))

#: forward input shapes per case (None: a Python scalar operand)
SHAPES = {
    1: [[(37, 65)], [(5, 7, 9)]],
    2: [[(37, 65), (37, 65)], [(37, 65), (65,)], [(7, 1, 9), (7, 11, 9)], [(37, 1), (1, 65)],
        [None, (37, 65)], [(37, 65), None]],
    3: [[(37, 65)] * 3, [(37, 65), (65,), (37, 1)], [(7, 1, 9), (7, 11, 9), (9,)],
        [(37, 65), None, (37, 65)], [None, (37, 65), None]],
}
WHERE_SHAPES = [[(37, 65)] * 3, [(37, 1), (65,), (37, 65)], [(37, 65), (37, 65), None],
                [None, (37, 65), (37, 65)]]
#: backward-specific domains (away from singular derivatives)
BW_DOMAIN = {"sqrt": (0.05, 20.0)}


def _torch():
    return pytest.importorskip("torch")


def _seed(*parts) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _inputs(op, dt, shapes, rng):
    """Host inputs (rounded to dt) of the forward op for ``shapes`` (scalars as 0-d arrays)."""
    real = [s for s in shapes if s is not None]
    if real and all(s == real[0] for s in real):
        full = R.make_inputs(op, dt, real[0], rng)
        xs = [full[k] if s is not None else R.make_inputs(op, dt, (), rng)[k]
              for k, s in enumerate(shapes)]
    else:
        xs = [R.make_inputs(op, dt, () if s is None else s, rng)[k] for k, s in enumerate(shapes)]
    if op in ("floor_divide", "remainder") and shapes[0] is not None:
        # a = b·(k + f), f in [0.1, 0.9], so floor(a / b) is unambiguous (where a has the
        # broadcast shape; otherwise a / b is merely random)
        full = np.broadcast_shapes(tuple(shapes[0]), np.shape(xs[1]))
        if full == tuple(shapes[0]):
            q = rng.integers(-12, 13, full) + rng.uniform(0.1, 0.9, full)
            xs[0] = R.round_to(np.broadcast_to(xs[1], full) * q, dt)
    if op in BW_DOMAIN:
        lo, hi = BW_DOMAIN[op]
        xs = [R.round_to(np.clip(x, lo, hi), dt) for x in xs]
    return xs


def _torch_forward(op, params):
    """The torch function equal to forward op ``op`` (float64 autograd reference)."""
    torch = _torch()
    F = torch.nn.functional
    p = params
    unary = {
        "abs": torch.abs, "negative": torch.neg, "square": torch.square, "sign": torch.sign,
        "reciprocal": torch.reciprocal, "relu": F.relu, "gelu": F.gelu,
        "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu, "mish": F.mish,
        "sigmoid": torch.sigmoid, "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid,
        "selu": F.selu, "relu6": F.relu6, "erf": torch.erf, "erfc": torch.erfc,
        "erfinv": torch.erfinv, "lgamma": torch.lgamma, "digamma": torch.digamma,
        "softsign": F.softsign, "tanhshrink": F.tanhshrink,
        "softplus": lambda x: F.softplus(x, beta=p[0], threshold=p[1]),
        "hardtanh": lambda x: F.hardtanh(x, p[0], p[1]), "elu": lambda x: F.elu(x, p[0]),
        "leaky_relu": lambda x: F.leaky_relu(x, p[0]),
        "logit": lambda x: torch.logit(x, None if p[0] < 0 else p[0]),
        "hardshrink": lambda x: F.hardshrink(x, p[0]),
        "softshrink": lambda x: F.softshrink(x, p[0]),
        "threshold": lambda x: F.threshold(x, p[0], p[1]),
        "affine": lambda x: p[0] * x + p[1],
    }
    binary = {
        "add": torch.add, "subtract": torch.sub, "multiply": torch.mul, "divide": torch.div,
        "pow": torch.pow, "atan2": torch.atan2, "hypot": torch.hypot,
        "logaddexp": torch.logaddexp, "copysign": torch.copysign, "maximum": torch.maximum,
        "minimum": torch.minimum, "remainder": torch.remainder,
        "prelu": lambda x, w: torch.where(x > 0, x, w * x),
        "glu": lambda a, b: a * torch.sigmoid(b), "reglu": lambda a, b: F.relu(a) * b,
        "swiglu": lambda a, b: F.silu(a) * b, "geglu": lambda a, b: F.gelu(a) * b,
    }
    ternary = {
        # torch.clamp keeps x's shape: expand x to the broadcast first (clip broadcasts all)
        "clip": lambda x, lo, hi: torch.clamp(
            x.expand(torch.broadcast_shapes(x.shape, lo.shape, hi.shape)), lo, hi),
        "where": lambda c, a, b: torch.where(c, a, b),
        "lerp": torch.lerp,
        "addcmul": lambda x, a, b: torch.addcmul(x, a, b, value=p[0]),
        "addcdiv": lambda x, a, b: torch.addcdiv(x, a, b, value=p[0]),
        "fma": lambda a, b, c: a * b + c,
    }
    for table in (unary, binary, ternary):
        if op in table:
            return table[op]
    if op in ("ceil", "floor", "trunc", "round") or hasattr(torch, op):
        return getattr(torch, op)
    raise KeyError(op)


def _reference_grads(op, dt, host, dy, params, shapes):
    """float64 gradients (one per input; None for scalars and where's condition)."""
    torch = _torch()
    ts, want = [], []
    for k, (h, s) in enumerate(zip(host, shapes)):
        if op == "where" and k == 0:
            ts.append(torch.from_numpy(np.array(h, bool, order="C")))
            want.append(False)
            continue
        ts.append(torch.from_numpy(np.array(h, np.float64, order="C")))
        want.append(s is not None)
    if op == "floor_divide":  # not differentiable in torch; zero by definition here
        return [np.zeros(np.shape(h)) if w else None for h, w in zip(host, want)]
    for t, w in zip(ts, want):
        if w:
            t.requires_grad_(True)
    inputs = [t for t, w in zip(ts, want) if w]
    y = _torch_forward(op, params)(*ts)
    g = torch.autograd.grad(y, inputs, torch.from_numpy(np.array(dy, np.float64, order="C")),
                            allow_unused=True)
    it = iter(g)
    out = []
    for t, w in zip(ts, want):
        if not w:
            out.append(None)
            continue
        gk = next(it)
        out.append((torch.zeros_like(t) if gk is None else gk).detach().numpy())
    return out


def _run_bw(op, dt, shapes, host, dy_view, params, want=None):
    """Run the backward plan; returns host gradients (None where none was requested)."""
    torch = _torch()
    from baracuda_dsl.ops.elementwise.families import (ElementwiseBackwardArgs,
                                                       ElementwiseBackwardDescriptor,
                                                       ElementwiseBackwardPlan)

    in_dts = OPS[op].in_dtypes(dt)
    dev = []
    for h, s, d in zip(host, shapes, in_dts):
        dev.append(R.python_scalar(h, d) if s is None else R.to_device(h, d))
    grads = []
    for k, s in enumerate(shapes):
        no_grad = s is None or (op == "where" and k == 0) or (want is not None and not want[k])
        grads.append(None if no_grad else torch.full(tuple(s), float("nan"),
                                                     dtype=R.torch_dtype(dt), device="cuda"))
    plan = ElementwiseBackwardPlan.select(ElementwiseBackwardDescriptor(op, tuple(shapes), dt,
                                                                        tuple(params)))
    plan.run(ElementwiseBackwardArgs(dy_view, dev, grads))
    torch.cuda.synchronize()
    return [None if g is None else R.to_host(g, dt) for g in grads]


def _tol(op, dt):
    if op == "hardsigmoid" and dt == "f64":
        return 1e-7  # torch's hardsigmoid backward multiplies by the float constant 1.0f / 6.0f
    return (SPECIAL_TOL if op in SPECIAL else TOL)[dt]


def _compare(op, dt, got, ref, what):
    for k, (g, r) in enumerate(zip(got, ref)):
        if g is None:
            continue
        assert r is not None, f"{what}: gradient {k} returned for an input without one"
        assert g.shape == r.shape, f"{what}: grad {k} shape {g.shape} != {r.shape}"
        assert not np.isnan(g).any(), f"{what}: grad {k} has NaN (unwritten or wrong)"
        if op in ZERO_GRAD:
            assert not np.any(g), f"{what}: grad {k} must be zero"
            continue
        err = R.relerr(g, r)
        assert err <= _tol(op, dt), f"{what}: grad {k} rel err {err:.3e} > {_tol(op, dt):.0e}"


@pytest.mark.parametrize("op,dt", CASES, ids=[f"{o}-{d}" for o, d in CASES])
def test_backward_vs_torch_autograd(op, dt):
    _torch()
    nin = OPS[op].nin
    rng = np.random.default_rng(_seed("bw", op, dt))
    cases = WHERE_SHAPES if op == "where" else SHAPES[nin]
    for params in R.params_for(op):
        for i, shapes in enumerate(cases):
            host = _inputs(op, dt, shapes, rng)
            out_shape = np.broadcast_shapes(*(np.shape(h) for h in host))
            dy = R.round_to(rng.standard_normal(out_shape), dt)
            layout = "dense" if i == 0 or len(out_shape) < 2 else ("T" if i % 2 else "step2")
            dy_view, _keep = R.device_view(dy, dt, layout)
            ref = _reference_grads(op, dt, host, dy, params, shapes)
            got = _run_bw(op, dt, shapes, host, dy_view, params)
            _compare(op, dt, got, ref, f"{op}[{dt}] shapes={shapes} dy={layout} p={params}")


@pytest.mark.parametrize("op", ["multiply", "divide", "pow", "lerp", "clip", "where", "glu"])
def test_backward_some_gradients_not_requested(op):
    """Passing None for a gradient computes the others unchanged."""
    _torch()
    dt = "f32"
    nin = OPS[op].nin
    rng = np.random.default_rng(_seed("partial", op))
    shapes = [(33, 40)] * nin
    host = _inputs(op, dt, shapes, rng)
    dy = R.round_to(rng.standard_normal((33, 40)), dt)
    ref = _reference_grads(op, dt, host, dy, (), shapes)
    first = 1 if op == "where" else 0
    for skip in range(first, nin):
        want = [k != skip for k in range(nin)]
        got = _run_bw(op, dt, shapes, host, R.to_device(dy, dt), (), want)
        assert got[skip] is None
        _compare(op, dt, got, ref, f"{op} without grad {skip}")


@pytest.mark.parametrize("dt", ["f32", "bf16"])
def test_backward_empty_broadcast_gives_zero_gradients(dt):
    torch = _torch()
    from baracuda_dsl.ops.elementwise.families import (ElementwiseBackwardArgs,
                                                       ElementwiseBackwardDescriptor,
                                                       ElementwiseBackwardPlan)

    a = torch.empty((0, 65), dtype=R.torch_dtype(dt), device="cuda")
    b = R.to_device(np.ones(65), dt)
    dy = torch.empty((0, 65), dtype=R.torch_dtype(dt), device="cuda")
    ga = torch.empty((0, 65), dtype=R.torch_dtype(dt), device="cuda")
    gb = torch.full((65,), float("nan"), dtype=R.torch_dtype(dt), device="cuda")
    plan = ElementwiseBackwardPlan.select(ElementwiseBackwardDescriptor(
        "multiply", ((0, 65), (65,)), dt))
    plan.run(ElementwiseBackwardArgs(dy, [a, b], [ga, gb]))
    torch.cuda.synchronize()
    assert not np.any(R.to_host(gb, dt)), "gradient of a broadcast over an empty dim must be 0"


def test_backward_family_plans_route_their_ops():
    """The family backward plans accept their ops and run like the generic plan."""
    torch = _torch()
    from baracuda_dsl.errors import UnsupportedError
    from baracuda_dsl.ops.elementwise import families as fam

    rng = np.random.default_rng(3)
    for cls, op, params in [(fam.UnaryBackwardPlan, "gelu", ()),
                            (fam.UnaryParamBackwardPlan, "softplus", (2.0, 1.5)),
                            (fam.BinaryBackwardPlan, "atan2", ()),
                            (fam.TernaryBackwardPlan, "lerp", ()),
                            (fam.WhereBackwardPlan, "where", ()),
                            (fam.GatedActivationBackwardPlan, "swiglu", ()),
                            (fam.PReluBackwardPlan, "prelu", ()),
                            (fam.AffineBackwardPlan, "affine", (1.5, -0.25))]:
        nin = OPS[op].nin
        shapes = [(16, 24)] * nin
        host = _inputs(op, "f32", shapes, rng)
        dy = R.round_to(rng.standard_normal((16, 24)), "f32")
        ref = _reference_grads(op, "f32", host, dy, params, shapes)
        in_dts = OPS[op].in_dtypes("f32")
        dev = [R.to_device(h, d) for h, d in zip(host, in_dts)]
        grads = [None if (op == "where" and k == 0) else torch.full(
            (16, 24), float("nan"), device="cuda") for k in range(nin)]
        plan = cls.select(fam.ElementwiseBackwardDescriptor(op, tuple(shapes), "f32", params))
        plan.run(fam.ElementwiseBackwardArgs(R.to_device(dy, "f32"), dev, grads))
        torch.cuda.synchronize()
        _compare(op, "f32", [None if g is None else R.to_host(g, "f32") for g in grads], ref,
                 f"{cls.__name__}({op})")
        other = "exp" if cls is fam.BinaryBackwardPlan else "add"
        with pytest.raises(UnsupportedError):
            cls.select(fam.ElementwiseBackwardDescriptor(other, ((4,),) * OPS[other].nin,
                                                         "f32"))
