"""Template spec of the axis-reduction kernel behind ``ReducePlan``, ``ArgReducePlan`` and the
reductions built on them (mean, var, std, norm2, logsumexp, all, any, count_nonzero, trace,
reduce-to).

The problem is canonical: ``n_out`` outputs, each over ``R`` reduced elements, optionally split
into ``nseg`` segments of ``seg`` elements (pass 1 writes one partial per segment, pass 2 reduces
the partials); kept and reduced index spaces are each at most 2-D with run-time strides.

Knobs:
``op``      sum, prod, max, min (NaN propagates) / argmax, argmin (first occurrence; NaN is the
            extreme)
``dtype``   input element type: every integer dtype, f32 f16 bf16 f64 (bool: max/min/sum)
``out``     output element type: the input type or the accumulator type (f32 for f16/bf16,
            int64 for signed ints and bool, uint64 for unsigned) — pass 2 of a split reduction
            reads accumulator-typed partials and writes the final dtype
``tpo``     threads per output: 1 (one thread walks its outputs' reduced range: coalesced when
            the kept stride is 1), 32 (a warp per output), 256 (a CTA per output)
``stage2``  arg ops only: 1 when the input is (value, index) partials of a split pass
``vec``     1, or 16 / itemsize for float inputs: 16-byte loads along a unit reduced stride
            (tpo 32/256) or across adjacent outputs of a unit kept stride (tpo 1)
"""

from __future__ import annotations

from dataclasses import dataclass

from ....jit import KernelTemplate, LaunchGeometry, params, register

THREADS = 256
TPOS = (1, 32, 256)
INTS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
FLOATS = ("f32", "f16", "bf16", "f64")
VALUE_OPS = ("sum", "prod", "max", "min")
ARG_OPS = ("argmax", "argmin")
OPS = VALUE_OPS + ARG_OPS
ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8}


@dataclass(frozen=True)
class AxisReduceKnobs:
    """One ``axis_reduce`` SKU (see the module doc for each knob)."""

    op: str
    dtype: str
    out: str
    tpo: int
    stage2: int
    vec: int


def acc_of(op: str, dt: str) -> str:
    """Accumulator / compute type of ``op`` over ``dt``."""
    if dt in ("f16", "bf16"):
        return "f32"
    if op in ("sum", "prod"):
        if dt in ("bool",) or dt.startswith("i"):
            return "i64"
        if dt.startswith("u"):
            return "u64"
    return dt


def dtypes_of(op: str):
    if op in ("sum", "max", "min"):
        return ("bool",) + INTS + FLOATS
    return INTS + FLOATS


def out_types(op: str, dt: str):
    """Output types a SKU of (op, dt) may write: the input type, the accumulator type."""
    if op in ARG_OPS:
        return (dt,)
    acc = acc_of(op, dt)
    return (dt,) if acc == dt else (dt, acc)


def _space():
    for op in OPS:
        for dt in dtypes_of(op):
            outs = list(out_types(op, dt))
            for out in outs:
                for tpo in TPOS:
                    for st in ((0, 1) if op in ARG_OPS else (0,)):
                        yield AxisReduceKnobs(op, dt, out, tpo, st, 1)
                    if dt in FLOATS and (tpo > 1 or op in VALUE_OPS):
                        yield AxisReduceKnobs(op, dt, out, tpo, 0, 16 // ITEMSIZE[dt])
        # pass 2 of a split reduction: accumulator partials in, the input dtype out
        if op in VALUE_OPS:
            for dt in dtypes_of(op):
                acc = acc_of(op, dt)
                if acc != dt and acc not in dtypes_of(op):
                    continue
                if acc != dt:
                    for tpo in TPOS:
                        yield AxisReduceKnobs(op, acc, dt, tpo, 0, 1)


def _dedup():
    seen = set()
    for k in _space():
        if k not in seen:
            seen.add(k)
            yield k


AXIS_REDUCE = register(KernelTemplate(
    name="axis_reduce",
    family="reduction",
    module="baracuda_dsl.ops.reduction.kernels.axis_reduce",
    params=params("x:ptr xi:ptr out:ptr oi:ptr n_out:i64 R:i64 k1:i64 ks0:i64 ks1:i64 r1:i64 "
                  "rs0:i64 rs1:i64 seg:i64 nseg:i64 scale:f64"),
    space=_dedup,
    geometry=lambda k: LaunchGeometry(threads=THREADS, smem_bytes=256),
    knobs=AxisReduceKnobs,
))
