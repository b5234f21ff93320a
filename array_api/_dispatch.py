"""The bridge from the namespace to the elementwise Plans: broadcasting, dtype conversion of
operands, output allocation, plan selection (cached per descriptor) and the launch on the calling
thread's current stream (``use_stream``; the legacy default stream unless set)."""

from __future__ import annotations

import builtins
import functools
from typing import Optional, Sequence

from baracuda_dsl.dtypes import DType
from baracuda_dsl.errors import DeviceMismatchError, UnsupportedError
from baracuda_dsl.ops.elementwise.elementwise import (ElementwiseArgs, ElementwiseDescriptor,
                                                      ElementwisePlan, broadcast_shapes)
from baracuda_dsl.ops.elementwise.specs.elementwise import OPS

from ._array_object import Array, tensor_view
from ._device import as_device, current_stream

_SCALARS = (builtins.bool, builtins.int, builtins.float, builtins.complex)


@functools.lru_cache(maxsize=4096)
def plan_for(op: str, shapes, dtype: DType, out_dtype: Optional[DType], params, shape):
    """The selected plan of one descriptor (selected once, then reused)."""
    return ElementwisePlan.select(ElementwiseDescriptor(op, shapes, dtype, out_dtype, params,
                                                        shape))


def _device_of(arrays, out):
    dev = None
    for a in list(arrays) + list(out or ()):
        if dev is None:
            dev = a.device
        elif a.device != dev:
            raise DeviceMismatchError(f"operands on different devices: {dev} and {a.device}")
    if dev is None:
        dev = as_device(None)
    return dev


def apply(op: str, operands: Sequence, dtype: DType, *, out_dtype: Optional[DType] = None,
          params=(), outs: Optional[Sequence[Array]] = None, shape=None):
    """Run elementwise ``op`` on ``operands`` (Arrays or Python scalars) with value dtype
    ``dtype``; array operands of another dtype are cast first.  Returns the output Arrays
    (new dense arrays, or ``outs`` when given: views written in place)."""
    if op not in OPS:
        raise UnsupportedError(f"elementwise op {op!r} is not wired")
    shapes = []
    dev = None
    for k, x in enumerate(operands):
        if isinstance(x, Array):
            shapes.append(x._shape)
            if dev is None:
                dev = x._device
            elif x._device != dev:
                raise DeviceMismatchError(f"operands on different devices: {dev} and "
                                          f"{x._device}")
        elif isinstance(x, _SCALARS):
            shapes.append(None)
        else:
            raise TypeError(f"{op}: operand {k} must be an array_api Array or a Python scalar, "
                            f"got {type(x).__name__}")
    if outs is not None or dev is None:
        dev = _device_of([x for x in operands if isinstance(x, Array)], outs)
    if type(params) is not tuple:
        params = tuple(float(p) for p in params)
    plan = plan_for(op, tuple(shapes), dtype, out_dtype, params,
                    None if shape is None else tuple(shape))
    want = plan._in_dts
    ins = []
    for k, x in enumerate(operands):
        if isinstance(x, Array):
            if x._dtype is not want[k]:
                x = cast(x, want[k])
            ins.append(tensor_view(x))
        else:
            ins.append(x)
    if outs is None:
        outs = [Array._empty(plan._out_shape, d, dev) for d in plan._out_dts]
        if plan._n == 0:
            return outs
        # fresh outputs of the right shape/dtype and trusted input views: skip re-validation
        plan._launch_views(ins, [tensor_view(o) for o in outs], dev.ordinal, current_stream(),
                           fresh=True)
        return outs
    plan.run(ElementwiseArgs(ins, [tensor_view(o) for o in outs]))
    return outs


def elementwise(op: str, operands: Sequence, in_dtype: DType, out_dtype: DType, *, params=(),
                out: Optional[Array] = None) -> Array:
    """One-output form of :func:`apply` (``out_dtype`` is what the caller expects the op to
    produce; for ``cast`` it is the target dtype)."""
    od = out_dtype if op == "cast" else None
    res = apply(op, operands, in_dtype, out_dtype=od, params=params,
                outs=None if out is None else [out], shape=None if out is None else out.shape)
    if res[0].dtype != out_dtype:
        raise UnsupportedError(f"{op}: produced {res[0].dtype}, expected {out_dtype}")
    return res[0]


def cast(x: Array, dtype: DType) -> Array:
    """A new dense array holding ``x`` converted to ``dtype`` (every dtype pair; complex → real
    keeps the real part, → bool is ``!= 0``)."""
    if x.dtype == dtype:
        return apply("copy", [x], dtype)[0]
    return apply("cast", [x], x.dtype, out_dtype=dtype)[0]


def fill(view: Array, value) -> None:
    """Write the Python scalar ``value`` (converted to view's dtype) into every element of the
    (possibly strided) view."""
    if view.size == 0:
        return
    apply("copy", [value], view.dtype, outs=[view], shape=view.shape)


def copy_into(src: Array, dst: Array) -> None:
    """``dst[...] = src``: broadcast ``src`` to ``dst``'s shape, convert to ``dst``'s dtype,
    write through any strides (overlapping source and destination are staged)."""
    if dst.size == 0:
        broadcast_shapes(src.shape, dst.shape)
        return
    if src.dtype == dst.dtype:
        apply("copy", [src], dst.dtype, outs=[dst], shape=dst.shape)
    else:
        apply("cast", [src], src.dtype, out_dtype=dst.dtype, outs=[dst], shape=dst.shape)
