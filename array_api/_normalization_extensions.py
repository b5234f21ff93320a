"""Normalization extensions (torch.nn.functional semantics, not in the standard), dispatching to
the normalization Plans: ``rms_norm``, ``layer_norm`` (row norms over trailing
``normalized_shape`` dims), ``batch_norm``, ``group_norm``, ``instance_norm`` (over (N, C,
*spatial)).  Outputs are new dense arrays; strided inputs are made dense first when the plan needs
it.  Plans are selected once per descriptor (``functools.lru_cache``) and run on the legacy
default stream; workspaces are allocated from the stream-ordered pool per call."""

from __future__ import annotations

from baracuda_dsl.errors import InvalidProblemError, UnsupportedError

from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._manipulation_functions import ascontiguousarray
from ._records import recorded


def _norm_shape(normalized_shape):
    if isinstance(normalized_shape, int):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


def _opt(v):
    return None if v is None else ascontiguousarray(v)


def _run_rowwise(plan, make_args, x: Array):
    """Run with x as is; if the plan cannot take its strides, with a dense copy."""
    try:
        plan.can_implement(make_args(x))
    except UnsupportedError:
        x = ascontiguousarray(x)
    args = make_args(x)
    ws, _keep = _plans.workspace(plan, x)
    plan.run(args, workspace=ws)


def _row_norm_common(x, normalized_shape, what):
    _plans.check_array(x, "x")
    ns = _norm_shape(normalized_shape)
    k = len(ns)
    if k == 0 or k > x.ndim or tuple(x.shape[x.ndim - k:]) != ns:
        raise InvalidProblemError(f"{what}: normalized_shape {ns} must match the trailing dims of "
                                  f"x.shape {x.shape}")
    return k


@recorded
def rms_norm(x: Array, normalized_shape, weight: Array = None, eps: float = None) -> Array:
    """y = x / sqrt(mean(x²) + eps) · weight over the trailing ``normalized_shape`` dims
    (torch.nn.functional.rms_norm; ``eps=None`` → finfo(x.dtype).eps).  f32/f16/bf16/f64."""
    from baracuda_dsl.ops.normalization.row_norm import RMSNormArgs, RMSNormDescriptor, RMSNormPlan

    k = _row_norm_common(x, normalized_shape, "rms_norm")
    if eps is None:
        eps = _dt.finfo(x.dtype).eps
    plan = _plans.select(RMSNormPlan, RMSNormDescriptor(x.shape, k, x.dtype, float(eps),
                                                  weight is not None))
    y = Array._empty(x.shape, x.dtype, x.device)
    w = _opt(weight)
    _run_rowwise(plan, lambda xx: RMSNormArgs(xx, y, weight=w), x)
    return y


@recorded
def layer_norm(x: Array, normalized_shape, weight: Array = None, bias: Array = None,
               eps: float = 1e-5) -> Array:
    """y = (x − mean)/sqrt(var + eps) · weight + bias over the trailing dims (biased variance;
    torch.nn.functional.layer_norm).  f32/f16/bf16/f64."""
    from baracuda_dsl.ops.normalization.row_norm import (LayerNormArgs, LayerNormDescriptor,
                                                         LayerNormPlan)

    k = _row_norm_common(x, normalized_shape, "layer_norm")
    plan = _plans.select(LayerNormPlan, LayerNormDescriptor(x.shape, k, x.dtype, float(eps),
                                                      weight is not None, bias is not None))
    y = Array._empty(x.shape, x.dtype, x.device)
    w, b = _opt(weight), _opt(bias)
    _run_rowwise(plan, lambda xx: LayerNormArgs(xx, y, weight=w, bias=b), x)
    return y


def _param_dtype(*vs):
    for v in vs:
        if v is not None:
            return v.dtype
    return None


def batch_norm(x: Array, running_mean: Array, running_var: Array, weight: Array = None,
               bias: Array = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Array:
    """torch.nn.functional.batch_norm over (N, C, *spatial): training uses batch statistics and
    updates ``running_mean``/``running_var`` in place when given; inference uses them."""
    from baracuda_dsl.ops.normalization.channel_norm import (BatchNormArgs, BatchNormDescriptor,
                                                             BatchNormPlan)

    _plans.check_array(x, "x")
    track = running_mean is not None and running_var is not None
    if (running_mean is None) != (running_var is None):
        raise InvalidProblemError("batch_norm: pass running_mean and running_var together")
    if not training and not track:
        raise InvalidProblemError("batch_norm: inference (training=False) needs running stats")
    for name, v in (("running_mean", running_mean), ("running_var", running_var)):
        if v is not None and not v.is_contiguous():
            raise UnsupportedError(f"batch_norm: {name} must be contiguous (updated in place)")
    desc = BatchNormDescriptor(x.shape, x.dtype, float(eps), float(momentum), bool(training),
                               weight is not None, bias is not None, track,
                               _param_dtype(weight, bias, running_mean, running_var))
    plan = _plans.select(BatchNormPlan, desc)
    xx = ascontiguousarray(x)
    y = Array._empty(x.shape, x.dtype, x.device)
    ws, _keep = _plans.workspace(plan, xx)
    plan.run(BatchNormArgs(xx, y, weight=_opt(weight), bias=_opt(bias),
                           running_mean=running_mean, running_var=running_var), workspace=ws)
    return y


def group_norm(x: Array, num_groups: int, weight: Array = None, bias: Array = None,
               eps: float = 1e-5) -> Array:
    """torch.nn.functional.group_norm over (N, C, *spatial)."""
    from baracuda_dsl.ops.normalization.channel_norm import (GroupNormArgs, GroupNormDescriptor,
                                                             GroupNormPlan)

    _plans.check_array(x, "x")
    desc = GroupNormDescriptor(x.shape, int(num_groups), x.dtype, float(eps), weight is not None,
                               bias is not None, _param_dtype(weight, bias))
    plan = _plans.select(GroupNormPlan, desc)
    xx = ascontiguousarray(x)
    y = Array._empty(x.shape, x.dtype, x.device)
    ws, _keep = _plans.workspace(plan, xx)
    plan.run(GroupNormArgs(xx, y, weight=_opt(weight), bias=_opt(bias)), workspace=ws)
    return y


def instance_norm(x: Array, running_mean: Array = None, running_var: Array = None,
                  weight: Array = None, bias: Array = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Array:
    """torch.nn.functional.instance_norm over (N, C, *spatial).  Only ``use_input_stats=True``
    without running statistics is wired (others raise UnsupportedError)."""
    from baracuda_dsl.ops.normalization.channel_norm import (InstanceNormArgs,
                                                             InstanceNormDescriptor,
                                                             InstanceNormPlan)

    _plans.check_array(x, "x")
    if running_mean is not None or running_var is not None:
        raise UnsupportedError("instance_norm: running statistics are not wired; wired: "
                               "use_input_stats=True without running_mean/running_var")
    desc = InstanceNormDescriptor(x.shape, x.dtype, float(eps), weight is not None,
                                  bias is not None, bool(use_input_stats),
                                  _param_dtype(weight, bias))
    plan = _plans.select(InstanceNormPlan, desc)
    xx = ascontiguousarray(x)
    y = Array._empty(x.shape, x.dtype, x.device)
    ws, _keep = _plans.workspace(plan, xx)
    plan.run(InstanceNormArgs(xx, y, weight=_opt(weight), bias=_opt(bias)), workspace=ws)
    return y


__all__ = ["rms_norm", "layer_norm", "batch_norm", "group_norm", "instance_norm"]
