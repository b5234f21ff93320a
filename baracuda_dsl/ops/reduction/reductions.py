"""Reductions over any set of axes: ``ReducePlan`` (sum, prod, max, min, mean; norm2, logsumexp,
var and std are served by the composite ``StatReducePlan``), ``ArgReducePlan`` (argmax / argmin
over one axis or all) and ``ReduceToPlan`` (sum down to a broadcast-compatible shape: the gradient
of every broadcasting op).

All three run the ``axis_reduce`` kernel through :class:`.axis_reduce.AxisReducePlan` (canonical
form, split reductions, dtypes and empty reductions: see that module).  Deterministic: every
combine order is fixed, no atomics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ...dtypes import DType, dtype as as_dtype, float32
from ...errors import InvalidProblemError, UnsupportedError
from ...plan import align_up, view_arg
from ...tensor import TensorView, check_shape, contiguous_strides
from .axis_reduce import STAT_OPS, AxisReducePlan, ReduceArgs, ReduceDescriptor
from .composites import StatReducePlan

__all__ = ["ArgReducePlan", "ReduceArgs", "ReduceDescriptor", "ReducePlan", "ReduceToDescriptor",
           "ReduceToPlan"]


class ReducePlan(AxisReducePlan):
    """Sum / prod / max / min / mean over axes (the ``axis_reduce`` kernel); ``select`` returns
    a :class:`StatReducePlan` for norm2 / logsumexp / var / std."""

    @classmethod
    def _plan_type(cls, desc: ReduceDescriptor) -> type:
        return StatReducePlan if desc.op in STAT_OPS else cls


class ArgReducePlan(AxisReducePlan):
    """argmax / argmin over ``axes`` (one axis, or all for a flat index) → int64 ``indices``;
    first occurrence among equal extremes; NaN counts as the extreme."""

    _arg = True

    def _plan(self) -> None:
        super()._plan()
        d = self.desc
        if len(d.axes) not in (1, len(d.shape)) and len(d.shape) > 1:
            raise UnsupportedError("ArgReduce: one axis or all axes (a flat index) are wired")

    def workspace_size(self) -> int:
        # a split pass keeps value and index partials; the final values go to scratch too
        return super().workspace_size() + align_up(self._n_out * self.desc.dtype.itemsize)


@dataclass(frozen=True)
class ReduceToDescriptor:
    """Sum an input of ``shape`` down to ``target`` (broadcast-compatible: ``target`` broadcasts
    to ``shape``), floats and ints (ints in the input dtype, wrapping)."""

    shape: Tuple[int, ...]
    target: Tuple[int, ...]
    dtype: DType = float32

    def __post_init__(self):
        shape = check_shape(self.shape, "ReduceTo")
        target = check_shape(self.target, "ReduceTo target")
        if len(target) > len(shape):
            raise InvalidProblemError(f"ReduceTo: target {target} has more dims than {shape}")
        pad = (1,) * (len(shape) - len(target)) + tuple(target)
        if any(t not in (1, s) for t, s in zip(pad, shape)):
            raise InvalidProblemError(f"ReduceTo: {target} does not broadcast to {shape}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "dtype", as_dtype(self.dtype))

    @property
    def axes(self) -> Tuple[int, ...]:
        pad = (1,) * (len(self.shape) - len(self.target)) + tuple(self.target)
        return tuple(i for i, (t, s) in enumerate(zip(pad, self.shape)) if t == 1 and s != 1)


class ReduceToPlan(AxisReducePlan):
    """out (shape ``target``, dense) = Σ of x over the broadcast dims (reverse broadcasting)."""

    descriptor = ReduceToDescriptor

    def _reduce_desc(self) -> ReduceDescriptor:
        d = self.desc
        return ReduceDescriptor(d.shape, d.axes, "sum", d.dtype, keep_dtype=True)

    def _bind(self, args):
        d = self.desc
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype)
        o = view_arg(args.out, "out", shape=d.target, dtype=d.dtype, device=x.device)
        if o.numel > 1 and tuple(o.strides) != contiguous_strides(o.shape):
            raise UnsupportedError("ReduceTo: the output must be dense row-major")
        flat = TensorView._trusted(o.ptr, self._rd.out_shape,
                                   contiguous_strides(self._rd.out_shape), o.dtype, o.device, None)
        return x, flat
