"""Pointwise losses without a GPU: validation, SKU choice and space, the op table's formulas
evaluated on the host (numpy float64 standing in for the DSL math) against torch float64
(forward terms and autograd gradients), and cross-compiles for sm80 / sm89 / sm90a."""

import math

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.losses.loss_pointwise import (LOSSES, PointwiseLossArgs,
                                                    PointwiseLossBackwardDescriptor,
                                                    PointwiseLossBackwardPlan,
                                                    PointwiseLossDescriptor, PointwiseLossPlan,
                                                    grad_names, loss_params, template_op)
from baracuda_dsl.ops.losses.specs import loss_pointwise as spec

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)
D = PointwiseLossDescriptor


# ------------------------------------------------------------------------------ validation
def test_descriptor_validation():
    with pytest.raises(bd.UnsupportedError):
        D("nll_loss", ((3,), (3,)))
    with pytest.raises(bd.UnsupportedError):
        D("mse_loss", ((3,), (3,)), "int32")
    with pytest.raises(bd.InvalidProblemError):
        D("mse_loss", ((3,),))  # operand count
    with pytest.raises(bd.InvalidProblemError):
        D("mse_loss", ((3,), (3,)), reduction="avg")
    with pytest.raises(bd.InvalidProblemError):
        D("mse_loss", ((3,), (3,)), reduction="batchmean")
    D("kl_div", ((3,), (3,)), reduction="batchmean")
    with pytest.raises(bd.InvalidProblemError):
        D("mse_loss", ((3, 4), (5,)))  # does not broadcast
    with pytest.raises(bd.InvalidProblemError):
        D("huber_loss", ((3,), (3,)), delta=0.0)
    with pytest.raises(bd.InvalidProblemError):
        D("huber_loss", ((3,), (3,)), delta=-1.0)
    with pytest.raises(bd.InvalidProblemError):
        D("smooth_l1_loss", ((3,), (3,)), beta=-0.5)
    D("smooth_l1_loss", ((3,), (3,)), beta=0.0)
    with pytest.raises(bd.InvalidProblemError):
        D("huber_loss", ((3,), (3,)), delta=float("nan"))
    with pytest.raises(bd.InvalidProblemError):
        D("binary_cross_entropy", ((3, 4), (4,)))  # target size must equal input size
    with pytest.raises(bd.InvalidProblemError):
        D("binary_cross_entropy_with_logits", ((3, 4), (3, 1)))
    with pytest.raises(bd.InvalidProblemError):
        D("mse_loss", ((3,), (3,)), weight_shape=(3,))  # takes no weight
    with pytest.raises(bd.InvalidProblemError):
        D("binary_cross_entropy", ((3,), (3,)), pos_weight_shape=(3,))
    with pytest.raises(bd.InvalidProblemError):
        D("binary_cross_entropy", ((3, 4), (3, 4)), weight_shape=(5,))
    D("binary_cross_entropy_with_logits", ((3, 4), (3, 4)), weight_shape=(4,),
      pos_weight_shape=(4,))
    with pytest.raises(bd.InvalidProblemError):
        D("margin_ranking_loss", ((3, 4), (4,), (3, 4)))  # ranks differ
    with pytest.raises(bd.InvalidProblemError):
        D("gaussian_nll_loss", ((3, 4), (3, 4), (4,)))  # var of incorrect size
    D("gaussian_nll_loss", ((3, 4), (3, 4), (3,)))
    D("gaussian_nll_loss", ((3, 4), (3, 4), (3, 1)))
    with pytest.raises(bd.InvalidProblemError):
        D("multilabel_soft_margin_loss", ((), ()))
    with pytest.raises(bd.InvalidProblemError):
        PointwiseLossPlan.select(PointwiseLossBackwardDescriptor("mse_loss", ((3,), (3,))), PREF)
    with pytest.raises(bd.InvalidProblemError):
        PointwiseLossBackwardPlan.select(D("mse_loss", ((3,), (3,))), PREF)


def test_shapes_and_defaults():
    d = D("mse_loss", ((7, 1, 5), (3, 1)), reduction="none")
    assert d.full_shape == (7, 3, 5) and d.out_shape == (7, 3, 5)
    assert D("mse_loss", ((7, 5), (7, 5))).out_shape == ()
    d = D("multilabel_soft_margin_loss", ((6, 9), (6, 9)), reduction="none")
    assert d.out_shape == (6,)
    assert D("hinge_embedding_loss", ((3,), (3,))).margin == 1.0
    assert D("margin_ranking_loss", ((3,), (3,), (3,))).margin == 0.0
    assert D("gaussian_nll_loss", ((3,), (3,), (3,))).eps == 1e-6
    assert D("poisson_nll_loss", ((3,), (3,))).eps == 1e-8
    assert D("gaussian_nll_loss", ((3, 4), (3, 4), (3,))).operand_shapes()[2] == (3, 1)


def test_variants_and_grads():
    assert template_op(D("kl_div", ((3,), (3,)), log_target=True)) == "kl_div_log"
    assert template_op(D("poisson_nll_loss", ((3,), (3,)), log_input=False)) == "poisson_nll"
    assert template_op(D("smooth_l1_loss", ((3,), (3,)), beta=0.0)) == "l1"
    assert grad_names("gaussian_nll_loss") == ("input", "target", "var")
    assert grad_names("margin_ranking_loss") == ("input1", "input2")
    assert grad_names("mse_loss") == ("input", "target")
    assert grad_names("binary_cross_entropy") == ("input",)


@pytest.mark.parametrize("loss", list(LOSSES))
def test_select_sku(loss):
    shapes = tuple((64, 33) for _ in LOSSES[loss])
    for red in ("none", "mean", "sum"):
        for dt in ("float32", "bfloat16", "float16", "float64"):
            p = PointwiseLossPlan.select(D(loss, shapes, dt, red), PREF)
            k = dict(p.sku().knobs)
            assert k["mode"] == ("none" if red == "none" else "reduce")
            assert k["op"] in spec.OPS and k["dtype"] == bd.dtypes.dtype(dt).short
            if red != "none":  # one compute-typed partial per CTA
                per = spec.per_block(k["dtype"])
                it = 8 if dt == "float64" else 4
                assert p.workspace_size() >= -(-64 * 33 // per) * it
            b = PointwiseLossBackwardPlan.select(
                PointwiseLossBackwardDescriptor(loss, shapes, dt, red), PREF)
            assert dict(b.sku().knobs)["mode"] == "bw"


def test_workspace_sizes():
    p = PointwiseLossPlan.select(D("mse_loss", ((10**6,), (10**6,))), PREF)
    per = spec.per_block("f32")
    assert p.workspace_size() == -(-(-(-10**6 // per) * 4) // 256) * 256
    assert PointwiseLossPlan.select(D("mse_loss", ((5,), (5,)), reduction="none"),
                                    PREF).workspace_size() == 0
    m = PointwiseLossPlan.select(D("multilabel_soft_margin_loss", ((100, 10), (100, 10)),
                                   reduction="none"), PREF)
    assert m.workspace_size() >= 1000 * 4 + 100 * 4


def test_run_rejects_host_arrays():
    p = PointwiseLossPlan.select(D("mse_loss", ((5,), (5,))), PREF)
    with pytest.raises((bd.DeviceMismatchError, bd.InvalidProblemError, bd.UnsupportedError)):
        p.run(PointwiseLossArgs([np.zeros(5, np.float32), np.zeros(5, np.float32)],
                                np.zeros((), np.float32)))
    with pytest.raises(bd.InvalidProblemError):
        p.run(PointwiseLossArgs([np.zeros(5, np.float32)], np.zeros((), np.float32)))


def test_sku_space():
    from baracuda_dsl.ops import get_template

    n = len(spec.OPS) * len(spec.DTYPES) * len(spec.MODES) + len(spec.DTYPES)
    assert n == 184
    for arch in ("sm80", "sm89", "sm90a"):
        assert len(get_template("loss_pointwise").skus(arch)) == n


# --------------------------------------------------- the op table on the host vs torch f64
class _NpMath:
    exp = staticmethod(np.exp)
    log = staticmethod(np.log)
    log1p = staticmethod(np.log1p)
    absf = staticmethod(np.abs)


def _np_sel(c, a, b):
    return a if bool(c) else type(a)(b)


def _np_max(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a > b else b


@pytest.fixture
def host_table(monkeypatch):
    """The loss formulas (a kernel module: it imports the DSL) evaluated on numpy arrays."""
    pytest.importorskip("cutlass")
    from baracuda_dsl.ops.losses.kernels import loss_pointwise_bw as lb

    monkeypatch.setattr(lb, "M", _NpMath)
    monkeypatch.setattr(lb, "sel", _np_sel)
    monkeypatch.setattr(lb, "maximum", _np_max)
    monkeypatch.setattr(lb, "sigmoid", lambda x: 1.0 / (1.0 + np.exp(-x)))
    return lb


def _data(loss, n, rng, full=False, log_flag=True):
    """Operands (float64 numpy, one row of n) in each loss's domain."""
    x = rng.standard_normal(n) * 2
    y = rng.standard_normal(n) * 2
    if loss == "binary_cross_entropy":
        x = rng.uniform(0.0, 1.0, n)
        x[:2] = (0.0, 1.0)  # log clamped at -100
        y = rng.uniform(0.0, 1.0, n)
    elif loss in ("binary_cross_entropy_with_logits", "multilabel_soft_margin_loss"):
        x = rng.standard_normal(n) * 5
        x[:2] = (60.0, -60.0)
        y = rng.uniform(0.0, 1.0, n)
    elif loss == "kl_div":
        y = rng.uniform(0.05, 2.0, n) if not log_flag else rng.standard_normal(n)
    elif loss == "poisson_nll_loss":
        y = rng.uniform(0.0, 4.0, n)
        if not log_flag:
            x = rng.uniform(0.01, 3.0, n)
    elif loss == "hinge_embedding_loss":
        y = rng.choice([-1.0, 1.0, 0.5], n)
    elif loss == "margin_ranking_loss":
        return [x, y, rng.choice([-1.0, 1.0], n)]
    elif loss == "soft_margin_loss":
        y = rng.choice([-1.0, 1.0], n)
        x = rng.standard_normal(n) * 5
    if loss == "gaussian_nll_loss":
        v = rng.uniform(0.1, 3.0, n)
        v[:2] = (0.0, 1e-9)  # clamped to eps
        return [x, y, v]
    return [x, y]


_CASES = [
    ("mse_loss", {}), ("l1_loss", {}), ("huber_loss", dict(delta=1.0)),
    ("huber_loss", dict(delta=0.3)), ("smooth_l1_loss", dict(beta=1.0)),
    ("smooth_l1_loss", dict(beta=0.25)), ("smooth_l1_loss", dict(beta=0.0)),
    ("soft_margin_loss", {}), ("binary_cross_entropy", {}), ("binary_cross_entropy", dict(w=1)),
    ("binary_cross_entropy_with_logits", {}),
    ("binary_cross_entropy_with_logits", dict(w=1, pw=1)),
    ("kl_div", dict(log_target=False)), ("kl_div", dict(log_target=True)),
    ("poisson_nll_loss", dict(log_input=True, full=False)),
    ("poisson_nll_loss", dict(log_input=False, full=True, eps=1e-3)),
    ("gaussian_nll_loss", dict(full=False)), ("gaussian_nll_loss", dict(full=True, eps=1e-3)),
    ("hinge_embedding_loss", dict(margin=1.0)), ("hinge_embedding_loss", dict(margin=0.4)),
    ("margin_ranking_loss", dict(margin=0.0)), ("margin_ranking_loss", dict(margin=0.7)),
    ("multilabel_soft_margin_loss", {}), ("multilabel_soft_margin_loss", dict(w=1)),
]


def torch_loss(F, loss, t, kw, w=None, pw=None, reduction="none"):
    """torch.nn.functional reference with the descriptor's keywords."""
    fn = getattr(F, loss)
    k = {k: v for k, v in kw.items() if k not in ("w", "pw")}
    if w is not None:
        k["weight"] = w
    if pw is not None:
        k["pos_weight"] = pw
    return fn(*t, reduction=reduction, **k)


@pytest.mark.parametrize("loss,kw", _CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(_CASES)])
def test_formulas_vs_torch(host_table, loss, kw):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(abs(hash((loss, tuple(sorted(kw))))) % 2**32)
    n = 48
    flag = kw.get("log_target", kw.get("log_input", True))
    ops = _data(loss, n, rng, log_flag=flag)
    if loss == "kl_div" and not flag:
        ops[1][3] = 0.0  # xlogy(0, 0) = 0
    desc = D(loss, tuple((n,) for _ in ops), "float64", "none",
             weight_shape=(n,) if kw.get("w") else None,
             pos_weight_shape=(n,) if kw.get("pw") else None,
             **{k: v for k, v in kw.items() if k not in ("w", "pw")})
    op = template_op(desc)
    ml = loss == "multilabel_soft_margin_loss"
    shape = (6, 8) if ml else (n,)
    w = rng.uniform(0.2, 2.0, n) if kw.get("w") else np.ones(n)
    if ml:  # torch's weight is per class: the same 8 values on every row
        w = np.tile(w[:8], 6)
    pw = rng.uniform(0.2, 3.0, n) if kw.get("pw") else np.ones(n)
    p0, p1 = loss_params(desc)
    f64 = np.float64
    terms, grads = [], []
    for i in range(n):
        v = [f64(a[i]) for a in ops]
        terms.append(float(host_table.FORWARD[op](v, f64(w[i]), f64(pw[i]), f64(p0), f64(p1))))
        grads.append([float(g) for g in host_table.BACKWARD[op](v, f64(w[i]), f64(pw[i]),
                                                                  f64(p0), f64(p1))])
    terms, grads = np.array(terms), np.array(grads)
    gi = spec.OPS[op].grads
    t = [torch.tensor(a.reshape(shape), dtype=torch.float64, requires_grad=k in gi)
         for k, a in enumerate(ops)]
    tw = torch.tensor(w[:8] if ml else w) if kw.get("w") else None
    tpw = torch.tensor(pw) if kw.get("pw") else None
    ref = torch_loss(F, loss, t, kw, tw, tpw)
    got = terms.reshape(shape).mean(-1) if ml else terms
    np.testing.assert_allclose(got, ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    if ml:  # the row mean scales every local derivative by 1/C
        grads = grads / shape[-1]
    # gradients of Σ loss: torch autograd vs the table's local derivatives
    ref.sum().backward()
    names = grad_names(loss)
    spec_op = spec.OPS[op]
    assert len(spec_op.grads) == len(names) == grads.shape[1]
    for k, opi in enumerate(spec_op.grads):
        tg = t[opi].grad.numpy().reshape(-1)
        np.testing.assert_allclose(grads[:, k], tg, rtol=1e-10, atol=1e-12,
                                   err_msg=f"grad {names[k]}")


def test_kl_div_target_grad_nan_at_zero(host_table):
    """torch's xlogy autograd gives NaN for ∂/∂target at target == 0; the table matches."""
    f64 = np.float64
    g = host_table.BACKWARD["kl_div"]([f64(0.3), f64(0.0)], f64(1), f64(1), f64(0), f64(0))
    assert g[0] == 0.0 and math.isnan(g[1])


# -------------------------------------------------------------------------- cross-compile
_SAMPLES = {
    bd.ArchSku.SM80: [("mse", "f32", "reduce"), ("bce_logits", "bf16", "bw"),
                      ("fin", "f16", "fin"), ("gaussian_nll", "f64", "none")],
    bd.ArchSku.SM89: [("huber", "f16", "none"), ("kl_div_log", "f32", "bw"),
                      ("fin", "f32", "fin")],
    bd.ArchSku.SM90A: [("multilabel_soft_margin", "bf16", "none"),
                       ("margin_ranking", "f32", "bw"), ("poisson_nll", "f64", "reduce"),
                       ("fin", "f64", "fin")],
}


@pytest.mark.parametrize("arch", list(_SAMPLES))
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for op, dt, mode in _SAMPLES[arch]:
        cubin, meta = compile_sku("loss_pointwise",
                                  freeze_knobs(spec.LossPointwiseKnobs(op=op, dtype=dt, mode=mode)),
                                  arch, timeout=600)
        assert len(cubin) > 1000 and meta["threads"] == spec.THREADS


# ------------------------------------------- plan orchestration on host memory (no GPU)
# The plans run on TensorViews over host (numpy) memory with every device step replaced by a
# numpy stand-in: the loss kernel (the op table evaluated per element in float64, per-CTA
# partials, the fixed-order finish), StridedCopy, the pool, the copy / cast plans and
# ReducePlan / ReduceToPlan.  This checks densification, broadcasting, pointer / flag / scale
# plumbing, the multilabel row mean and the ReduceTo of broadcast grads against torch float64.
import ctypes  # noqa: E402

_NP = {"f32": np.float32, "f64": np.float64}


def _host(ptr, shape, strides, short):
    npdt = _NP[short]
    isz = np.dtype(npdt).itemsize
    if any(s == 0 for s in shape):
        return np.zeros(shape, npdt)
    span = 1 + sum((n - 1) * abs(s) for n, s in zip(shape, strides))
    base = np.frombuffer((ctypes.c_char * (span * isz)).from_address(ptr), dtype=npdt)
    return np.lib.stride_tricks.as_strided(base, tuple(shape), tuple(s * isz for s in strides))


def _tv(a):
    """A TensorView over the numpy array ``a`` (device 0, host memory)."""
    from baracuda_dsl.tensor import TensorView

    isz = a.dtype.itemsize
    short = "f64" if a.dtype == np.float64 else "f32"
    return TensorView(a.ctypes.data, a.shape, tuple(s // isz for s in a.strides),
                      bd.dtypes.dtype(short), 0, None, a)


def _view_np(v):
    return _host(v.ptr, v.shape, v.strides, v.dtype.short)


class _Buf:
    def __init__(self, nbytes):
        self.a = np.zeros(nbytes + 512, np.uint8)
        self.handle = (self.a.ctypes.data + 255) // 256 * 256

    def close(self, stream=None):
        pass


class _HostKernel:
    """The ``loss_pointwise`` kernel on host memory: decodes the launch's argument list (the
    template's ABI order) and evaluates the op table per element in float64."""

    def __init__(self, table, knobs):
        self.table, self.knobs = table, knobs

    def launch(self, grid, args, stream):
        table, short, mode = self.table, self.knobs.dtype, self.knobs.mode
        o0, o1, o2, a, b, c, wp, pwp, g, part, n, flags, p0, p1, scale = args
        outs, ptrs = (o0, o1, o2), (a, b, c)
        if mode == "fin":
            parts = _host(part, (n,), (1,), short)
            tot = parts.astype(np.float64).sum() if n else np.float64(0.0)
            _host(outs[0], (1,), (1,), short)[0] = tot * scale
            return
        per = spec.per_block(short)
        assert grid == (-(-n // per), 1, 1)
        name = self.knobs.op
        op = spec.OPS[name]
        flat = list(ptrs[:op.nin]) + (list(outs[:1]) if mode != "reduce" else [])
        for p in flat:  # flat operands: 16-byte aligned
            assert p and p % 16 == 0
        ins = [_host(p, (n,), (1,), short).astype(np.float64) for p in ptrs[:op.nin]]
        w = (_host(wp, (n,), (1,), short).astype(np.float64) if flags & spec.HAS_W
             else np.ones(n))
        pw = (_host(pwp, (n,), (1,), short).astype(np.float64) if flags & spec.HAS_PW
              else np.ones(n))
        f64 = np.float64
        p0, p1 = f64(p0), f64(p1)
        if mode in ("none", "reduce"):
            t = np.array([float(table.FORWARD[name]([f64(v[i]) for v in ins], f64(w[i]),
                                                    f64(pw[i]), p0, p1))
                          for i in range(n)])
            if mode == "none":
                _host(outs[0], (n,), (1,), short)[:] = t
            else:
                parts = _host(part, (grid[0],), (1,), short)
                for blk in range(grid[0]):
                    parts[blk] = t[blk * per:(blk + 1) * per].sum()
            return
        gs = (np.full(n, _host(g, (1,), (1,), short)[0], np.float64) if flags & spec.G_SCALAR
              else _host(g, (n,), (1,), short).astype(np.float64))
        r = np.array([[float(v) for v in table.BACKWARD[name](
            [f64(v[i]) for v in ins], f64(w[i]), f64(pw[i]), p0, p1)] for i in range(n)])
        for k in range(len(op.grads)):
            if k == 0 or flags & (0, spec.HAS_O1, spec.HAS_O2)[k]:
                _host(outs[k], (n,), (1,), short)[:] = r[:, k] * gs * scale


def _sum_to(x, shape):
    """``x`` summed over the dims it was broadcast along from ``shape``."""
    x = x.sum(axis=tuple(range(x.ndim - len(shape))))
    return x.sum(axis=tuple(i for i, k in enumerate(shape) if k == 1), keepdims=True)


@pytest.fixture
def host_plans(monkeypatch, host_table):
    """The pointwise-loss plans on host memory: every kernel launch (``Plan._kernel``), the pool,
    StridedCopy and the copy / reduce plans they use replaced by numpy stand-ins."""
    from baracuda_dsl.ops.elementwise.elementwise import ElementwisePlan
    from baracuda_dsl.ops.losses import loss_pointwise as lp
    from baracuda_dsl.ops.reduction.reductions import ReducePlan, ReduceToPlan
    from baracuda_dsl.plan import Plan

    keep = []

    def alloc(nbytes, stream=None, ordinal=None):
        b = _Buf(nbytes)
        keep.append(b)
        return b

    def strided_copy(src, dst, stream=None):
        _view_np(dst)[...] = _view_np(src)

    def kernel(self, template, knobs, dev):
        assert template.name == "loss_pointwise"
        return _HostKernel(host_table, knobs)

    def copy_run(self, args, stream=None, workspace=None):
        _view_np(args.outputs[0])[...] = _view_np(args.inputs[0])

    def reduce_run(self, args, stream=None, workspace=None):
        x = _view_np(args.x).astype(np.float64)
        out = _view_np(args.out)
        if isinstance(self, ReduceToPlan):
            out[...] = _sum_to(x, out.shape).reshape(out.shape)
        else:
            out[...] = getattr(np, self.desc.op)(x, axis=self.desc.axes)

    monkeypatch.setattr(Plan, "_kernel", kernel)
    monkeypatch.setattr("baracuda_dsl.ops.shape.repeat.strided_copy", strided_copy)
    monkeypatch.setattr("baracuda_dsl.runtime.memory.allocate", alloc)
    monkeypatch.setattr("baracuda_dsl.runtime.memory.as_core_stream", lambda stream, dev: stream)
    monkeypatch.setattr(ElementwisePlan, "run", copy_run)
    monkeypatch.setattr(ReducePlan, "run", reduce_run)
    monkeypatch.setattr(ReduceToPlan, "run", reduce_run)
    return lp


def _np_operands(loss, shapes, rng):
    out = []
    names = LOSSES[loss]
    for nm, s in zip(names, shapes):
        if loss == "binary_cross_entropy":
            a = rng.uniform(0.05, 0.95, s) if nm == "input" else rng.uniform(0, 1, s)
        elif loss == "kl_div" and nm == "target":
            a = rng.uniform(0.05, 2.0, s)
        elif nm == "var":
            a = rng.uniform(0.1, 3.0, s)
        elif nm == "target" and loss in ("hinge_embedding_loss", "margin_ranking_loss",
                                         "soft_margin_loss"):
            a = rng.choice([-1.0, 1.0], s)
        elif nm == "target" and loss in ("binary_cross_entropy_with_logits",
                                         "multilabel_soft_margin_loss"):
            a = rng.uniform(0, 1, s)
        elif loss == "poisson_nll_loss":
            a = rng.uniform(0.05, 3.0, s)
        else:
            a = rng.standard_normal(s)
        out.append(np.asarray(a, np.float64))
    return out


def _strided(a):
    """``a`` as a non-contiguous (every other element of a wider buffer) view."""
    if a.ndim == 0:
        return a
    big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    big[..., ::2] = a
    return big[..., ::2]


_HOST_CASES = [
    ("mse_loss", ((37, 29), (29,)), {}, None, None),
    ("huber_loss", ((1000,), (1000,)), dict(delta=0.5), None, None),
    ("smooth_l1_loss", ((5, 7), (5, 7)), dict(beta=0.0), None, None),
    ("kl_div", ((6, 5), (6, 5)), dict(log_target=False), None, None),
    ("gaussian_nll_loss", ((9, 4), (9, 4), (9,)), dict(full=True), None, None),
    ("gaussian_nll_loss", ((9, 4), (4,), (9, 1)), {}, None, None),
    ("binary_cross_entropy_with_logits", ((8, 6), (8, 6)), {}, (6,), (6,)),
    ("binary_cross_entropy", ((8, 6), (8, 6)), {}, (8, 1), None),
    ("margin_ranking_loss", ((40,), (40,), (40,)), dict(margin=0.3), None, None),
    ("multilabel_soft_margin_loss", ((7, 5), (7, 5)), {}, (5,), None),
    ("poisson_nll_loss", ((3000,), (3000,)), dict(log_input=False, full=True), None, None),
]


@pytest.mark.parametrize("case", _HOST_CASES, ids=[c[0] + str(i) for i, c in enumerate(_HOST_CASES)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_plans_on_host_vs_torch(host_plans, case, reduction):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    lp = host_plans
    loss, shapes, kw, wshape, pwshape = case
    rng = np.random.default_rng(len(shapes) * 7 + len(loss))
    ops = _np_operands(loss, shapes, rng)
    w = rng.uniform(0.3, 2.0, wshape) if wshape else None
    pw = rng.uniform(0.3, 2.0, pwshape) if pwshape else None
    for dt in ("float64", "float32"):
        npdt = np.float64 if dt == "float64" else np.float32
        o = [_strided(a.astype(npdt)) if i == 0 else np.ascontiguousarray(a, npdt)
             for i, a in enumerate(ops)]
        wv = None if w is None else np.ascontiguousarray(w, npdt)
        pwv = None if pw is None else np.ascontiguousarray(pw, npdt)
        desc = lp.PointwiseLossDescriptor(loss, shapes, dt, reduction, wshape, pwshape, **kw)
        plan = lp.PointwiseLossPlan.select(desc, PREF)
        out = np.full(desc.out_shape, np.nan, npdt)
        wsbuf = _Buf(plan.workspace_size())
        ws = bd.vocabulary.Workspace(wsbuf.handle, plan.workspace_size(), wsbuf)
        plan.run(lp.PointwiseLossArgs([_tv(a) for a in o], _tv(out),
                                      None if wv is None else _tv(wv),
                                      None if pwv is None else _tv(pwv)), workspace=ws)
        tk = dict(kw)
        if w is not None:
            tk["weight"] = torch.tensor(w)
        if pw is not None:
            tk["pos_weight"] = torch.tensor(pw)
        leaves = [torch.tensor(a.astype(npdt).astype(np.float64), requires_grad=True)
                  for a in ops]
        ref = getattr(F, loss)(*leaves, reduction=reduction, **tk)
        tol = 1e-12 if dt == "float64" else 2e-5
        np.testing.assert_allclose(out.astype(np.float64), ref.detach().numpy(), rtol=tol,
                                   atol=tol)
        # backward
        names = grad_names(loss)
        all_names = LOSSES[loss]
        dl = rng.standard_normal(tuple(ref.shape))
        ref.backward(torch.tensor(dl))
        bdesc = lp.PointwiseLossBackwardDescriptor(loss, shapes, dt, reduction, wshape, pwshape,
                                                   **kw)
        bplan = lp.PointwiseLossBackwardPlan.select(bdesc, PREF)
        grads = [np.full(shapes[all_names.index(nm)], np.nan, npdt) for nm in names]
        wsbuf = _Buf(bplan.workspace_size())
        bws = bd.vocabulary.Workspace(wsbuf.handle, bplan.workspace_size(), wsbuf)
        dlv = np.array(dl, npdt)
        bplan.run(lp.PointwiseLossBackwardArgs(
            _tv(dlv), [_tv(a) for a in o], [_tv(gv) for gv in grads],
            None if wv is None else _tv(wv), None if pwv is None else _tv(pwv)), workspace=bws)
        for nm, gv in zip(names, grads):
            tg = leaves[all_names.index(nm)].grad.numpy()
            np.testing.assert_allclose(gv.astype(np.float64), tg, rtol=tol * 10, atol=tol * 10,
                                       err_msg=f"{loss} {reduction} {dt} grad {nm}")


@pytest.mark.parametrize("loss,shape", [("mse_loss", (0,)), ("mse_loss", (0, 4)),
                                        ("multilabel_soft_margin_loss", (3, 0)),
                                        ("multilabel_soft_margin_loss", (0, 5)),
                                        ("multilabel_soft_margin_loss", (0,))])
def test_empty_on_host_vs_torch(host_plans, loss, shape):
    torch = pytest.importorskip("torch")
    lp = host_plans
    for red in ("none", "mean", "sum"):
        desc = lp.PointwiseLossDescriptor(loss, (shape, shape), "float32", red)
        plan = lp.PointwiseLossPlan.select(desc, PREF)
        out = np.full(desc.out_shape, 7.0, np.float32)
        wsbuf = _Buf(plan.workspace_size())
        ws = bd.vocabulary.Workspace(wsbuf.handle, plan.workspace_size(), wsbuf)
        x = np.zeros(shape, np.float32)
        plan.run(lp.PointwiseLossArgs([_tv(x), _tv(x.copy())], _tv(out)), workspace=ws)
        t = torch.zeros(shape, dtype=torch.float64)
        ref = getattr(torch.nn.functional, loss)(t, t, reduction=red).numpy()
        assert out.shape == ref.shape
        np.testing.assert_array_equal(np.isnan(out), np.isnan(ref), err_msg=f"{red}")
        np.testing.assert_allclose(np.nan_to_num(out), np.nan_to_num(ref))


def test_strided_none_output_on_host(host_plans):
    lp = host_plans
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((6, 5)), rng.standard_normal((6, 5))
    out = np.full((5, 12), np.nan)[:, ::2].T  # (6, 5), strided
    plan = lp.PointwiseLossPlan.select(lp.PointwiseLossDescriptor(
        "l1_loss", ((6, 5), (6, 5)), "float64", "none"), PREF)
    plan.run(lp.PointwiseLossArgs([_tv(x), _tv(y)], _tv(out)))
    np.testing.assert_allclose(out, np.abs(x - y), rtol=1e-15)
