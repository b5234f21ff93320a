"""Backward of the reductions: ``ReduceBackwardPlan`` — dx (x's shape, dense) from x, the forward
result y and its gradient dy (both of the kept shape), for

    sum        dx = dy                              mean  dx = dy · (1/N)  (1/N in f32 / f64)
    max, min   dx = dy · [x == y] / #{x == y}       (ties share the gradient evenly, torch.amax)
    logsumexp  dx = dy · exp(x − y)                 norm2 dx = dy · x / y   (0 where y == 0)
    var        dx = dy · 2 (x − mean) / (N − c)     std   dx = dy · (x − mean) / ((N − c) · y)

over any axes (N = the reduced count, c = ``correction``).  f32 f16 bf16 f64.  A composite of
ElementwisePlan launches (dy, y, mean broadcast from the kept shape with zero strides) and, for
max/min and var/std, one ReducePlan (tie counts / the mean).  Workspace: the tie mask and counts
(max/min) or the mean (var/std) plus kept-shape temporaries.  Deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from ...dtypes import DType, FP4, bool_ as bool_dt, dtype as as_dtype, int64
from ...errors import UnsupportedError
from ...plan import check_dtype, norm_axes, prod, view_arg
from ...tensor import check_shape, contiguous_strides
from ...vocabulary import Workspace
from .axis_reduce import AxisReducePlan, ReduceArgs, ReduceDescriptor
from .composites import CompositePlan

BW_OPS = ("sum", "mean", "max", "min", "logsumexp", "norm2", "var", "std")


@dataclass(frozen=True)
class ReduceBackwardDescriptor:
    """Gradient of ``op`` over ``axes`` (None = all) of an input of ``shape`` and ``dtype``;
    ``correction`` for var / std."""

    shape: Tuple[int, ...]
    axes: Optional[Tuple[int, ...]] = None
    op: str = "sum"
    dtype: DType = FP4[0]
    correction: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "shape", check_shape(self.shape, "ReduceBackward"))
        if self.op not in BW_OPS:
            raise UnsupportedError(f"ReduceBackward: op {self.op!r} is not wired; wired: "
                                   f"{', '.join(BW_OPS)}")
        object.__setattr__(self, "dtype", check_dtype(as_dtype(self.dtype), FP4,
                                                      "ReduceBackward"))
        object.__setattr__(self, "axes", norm_axes(self.axes, len(self.shape), "ReduceBackward"))

    @property
    def out_shape(self) -> Tuple[int, ...]:
        return tuple(n for d, n in enumerate(self.shape) if d not in self.axes)

    @property
    def keep_shape(self) -> Tuple[int, ...]:
        return tuple(1 if d in self.axes else n for d, n in enumerate(self.shape))


@dataclass
class ReduceBackwardArgs:
    """dy: the kept-shape gradient; dx: dense, x's shape; x and y (the forward input and result)
    where the op needs them (max/min/logsumexp/norm2/var/std: x; max/min/logsumexp/norm2/std: y)."""

    dy: object
    dx: object
    x: object = None
    y: object = None


class ReduceBackwardPlan(CompositePlan):
    """dx of a reduction (see the module doc)."""

    descriptor = ReduceBackwardDescriptor

    def _plan(self) -> None:
        desc = self.desc
        self._n = prod(desc.shape)
        self._nk = prod(desc.out_shape)
        self._N = prod(desc.shape[a] for a in desc.axes)
        dt, op = desc.dtype, desc.op
        self._lay, self._off = {}, 0
        sub = None
        slots = ()
        if op in ("max", "min"):
            sub = AxisReducePlan.select(ReduceDescriptor(desc.shape, desc.axes, "sum", bool_dt),
                                        self.pref)
            slots = (("mask", self._n), ("cnt", self._nk * 8), ("cntf", self._nk * dt.itemsize),
                     ("g", self._nk * dt.itemsize))
        elif op in ("var", "std"):
            sub = AxisReducePlan.select(ReduceDescriptor(desc.shape, desc.axes, "mean", dt),
                                        self.pref)
            slots = (("mean", self._nk * dt.itemsize), ("g", self._nk * dt.itemsize))
        elif op == "norm2":
            slots = (("g", self._nk * dt.itemsize), ("m0", self._nk))
        for name, nbytes in slots:
            self._slot(name, nbytes)
        self._sub = sub
        self._ws = self._off + (0 if sub is None else sub.workspace_size())
        self._sku = self._composite_sku(op + "_bw", dt, dt)

    def is_empty(self) -> bool:
        return self._n == 0

    def _bind(self, args):
        d = self.desc
        need_x = d.op not in ("sum", "mean")
        need_y = d.op in ("max", "min", "logsumexp", "norm2", "std")
        dy = view_arg(args.dy, "dy", shape=d.out_shape, dtype=d.dtype)
        dev = dy.device
        dx = view_arg(args.dx, "dx", shape=d.shape, dtype=d.dtype, device=dev)
        if dx.numel > 1 and tuple(dx.strides) != contiguous_strides(dx.shape):
            raise UnsupportedError("ReduceBackward: dx must be dense row-major")
        x = view_arg(args.x, "x", shape=d.shape, dtype=d.dtype, device=dev, optional=not need_x)
        y = view_arg(args.y, "y", shape=d.out_shape, dtype=d.dtype, device=dev,
                     optional=not need_y)
        return dy, dx, x, y

    def _launch(self, bound, st: int, ws: Workspace) -> None:
        dy, dx, x, y = bound
        d, dt, dev = self.desc, self.desc.dtype, dy.device
        os_, sh, ax = d.out_shape, d.shape, d.axes
        N, c = self._N, float(d.correction)
        sub_ws = self._sub_ws(ws)

        def keep(v):
            return self._keep(v, sh, ax)

        def tmp(name, shape, t):
            return self._tmp(ws, name, shape, t, dev)

        if d.op == "sum":
            self._ew("copy", [keep(dy)], dx, dt, st)
        elif d.op == "mean":
            # dy·(1/N) with 1/N a compute-precision parameter (a scalar operand would be
            # rounded to the value dtype first: 1/7 in bf16 is 0.2 % off)
            self._ew("affine", [keep(dy)], dx, dt, st, params=(1.0 / N if N else float("nan"), 0.0))
        elif d.op in ("max", "min"):
            mask = tmp("mask", d.shape, bool_dt)
            self._ew("equal", [x, keep(y)], mask, dt, st)
            cnt = tmp("cnt", os_, int64)
            self._sub.run(ReduceArgs(mask, cnt), st, sub_ws)
            cntf = tmp("cntf", os_, dt)
            self._ew("cast", [cnt], cntf, int64, st, out_dtype=dt)
            g = tmp("g", os_, dt)
            self._ew("divide", [dy, cntf], g, dt, st)
            self._ew("where", [mask, keep(g), 0.0], dx, dt, st)
        elif d.op == "logsumexp":
            self._ew("subtract", [x, keep(y)], dx, dt, st)
            self._ew("exp", [dx], dx, dt, st)
            self._ew("multiply", [dx, keep(dy)], dx, dt, st)
        elif d.op == "norm2":
            g = tmp("g", os_, dt)
            m0 = tmp("m0", os_, bool_dt)
            self._ew("divide", [dy, y], g, dt, st)
            self._ew("equal", [y, 0.0], m0, dt, st)
            self._ew("where", [m0, 0.0, g], g, dt, st)
            self._ew("multiply", [x, keep(g)], dx, dt, st)
        else:  # var, std
            dof = N - c
            m = tmp("mean", os_, dt)
            self._sub.run(ReduceArgs(x, m), st, sub_ws)
            self._ew("subtract", [x, keep(m)], dx, dt, st)
            g = tmp("g", os_, dt)
            scale = (2.0 if d.op == "var" else 1.0) / dof if dof > 0 else float("nan")
            # the scale as a compute-precision parameter (not a value-dtype scalar operand)
            if d.op == "var":
                self._ew("affine", [dy], g, dt, st, params=(scale, 0.0))
            else:
                self._ew("divide", [dy, y], g, dt, st)
                self._ew("affine", [g], g, dt, st, params=(scale, 0.0))
            self._ew("multiply", [dx, keep(g)], dx, dt, st)
