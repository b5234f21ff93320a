"""The op table of the scan template: one combine function per op, traced into the kernel.

A scan state is a tuple of one or two DSL scalars (components).  Each op gives

* ``ct``       component types (compute types),
* ``identity`` the neutral state (combining it first changes nothing: -0.0 for sums),
* ``combine(a, b)``  the state of "segment a followed by segment b" (a earlier in scan order;
  associative, not necessarily commutative),
* ``element(v)``     the state of one element from its loaded values ``v`` (dict),
* ``emit(v, incl, excl, exclusive)``  (value to store, optional int64 index to store).

All functions are trace-time Python without data-dependent Python control flow (selects only).

Ops (``x`` = input element, scan order = logical order of the (possibly reversed) views):

``sum``   s' = s + x                         (floats in f32 / f64; ints and bool in 64 bits, wrapping)
``prod``  s' = s · x
``max``   (v, i): later element wins when it is NaN, or when v is not NaN and x >= v (torch
          cummax: ties → last index, NaN propagates with the index of the latest NaN); ``min``: <=
``lse``   s' = log(exp s + exp x) = hi + log1p(exp(lo − hi))  (hi == lo: hi + ln 2)
``prod_bw``  affine maps t ↦ B + A·t with element (A, B) = (x, x·dy); the exclusive state's B at
          position ℓ is U = Σ_{j after ℓ} dy_j Π_{ℓ<k≤j} x_k, and dx = E·(dy + U) with E the
          forward exclusive product (= y of the scan-order next element, 1 at the end) — exact
          with zeros, no division
``max_bw``  segmented sum (s, f): a segment starts where idx differs from the scan-order
          previous idx; dx = s where idx == own position else 0
``lse_bw``  scaled signed sum (m, s) ≙ s·e^m with element (−y, dy); dx = s·exp(m + x) (m + x ≤ 0)
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
from cutlass import Float32, Float64, Int64, Uint64

from ....blocks.scalar_math import isnan, sel

M = cute.math
INF = float("inf")
LN2 = math.log(2.0)

STORAGE = {"f32": cutlass.Float32, "f16": cutlass.Float16, "bf16": cutlass.BFloat16,
           "f64": cutlass.Float64, "i8": cutlass.Int8, "i16": cutlass.Int16,
           "i32": cutlass.Int32, "i64": cutlass.Int64, "u8": cutlass.Uint8,
           "u16": cutlass.Uint16, "u32": cutlass.Uint32, "u64": cutlass.Uint64,
           "bool": cutlass.Uint8}
FLOATS = ("f32", "f16", "bf16", "f64")
UNSIGNED = ("u8", "u16", "u32", "u64")


def compute_type(dt: str):
    if dt == "f64":
        return Float64
    if dt in FLOATS:
        return Float32
    return Uint64 if dt in UNSIGNED else Int64


def _b(cond, a, b):
    return Int64(cutlass.select_(cond, Int64(a), Int64(b)))


def select_state(cond, a, b):
    """Select between two states (tuples)."""
    return tuple(sel(cond, x, y) for x, y in zip(a, b))


class ScanOp:
    """Trace-time description of one (op, dtype, odt) SKU (see module doc)."""

    def __init__(self, op: str, dt: str, odt: str):
        self.op, self.dt, self.odt = op, dt, odt
        self.is_float = dt in FLOATS
        ct = compute_type(dt)
        self.c = ct
        self.st_a = STORAGE[dt] if op != "max_bw" else Int64   # max_bw: a = indices
        self.st_b = STORAGE[dt]
        self.st_c = STORAGE[dt]
        self.st_o = STORAGE[odt]
        if op in ("max", "min"):
            self.ct = (ct, Int64)
        elif op == "max_bw":
            self.ct = (ct, Int64)
        elif op in ("prod_bw", "lse_bw"):
            self.ct = (ct, ct)
        else:
            self.ct = (ct,)
        # which operands the element / emit read: a always; neighbours: (operand, logical step)
        self.uses_b = op in ("prod_bw", "max_bw", "lse_bw")
        self.uses_c = op == "lse_bw"
        self.neighbour = {"prod_bw": ("c", 1), "max_bw": ("a", -1)}.get(op)
        self.has_index = op in ("max", "min")

    # ---------------------------------------------------------------- constants
    def _extreme(self, low: bool):
        ct = self.c
        if self.is_float:
            return ct(-INF if low else INF)
        if ct is Uint64:
            return Uint64(0) if low else Uint64(2**64 - 1)
        return Int64(-2**63) if low else Int64(2**63 - 1)

    def identity(self):
        return self._norm(self._identity())

    def _identity(self):
        op, ct = self.op, self.c
        zero = ct(-0.0) if self.is_float else ct(0)
        if op == "sum":
            return (zero,)
        if op == "prod":
            return (ct(1.0) if self.is_float else ct(1),)
        if op == "max":
            return (self._extreme(True), Int64(-1))
        if op == "min":
            return (self._extreme(False), Int64(-1))
        if op == "lse":
            return (ct(-INF),)
        if op == "prod_bw":
            return (ct(1.0), ct(-0.0))
        if op == "max_bw":
            return (ct(-0.0), Int64(0))
        return (ct(-INF), ct(-0.0))  # lse_bw

    # ---------------------------------------------------------------- combine
    def combine(self, a, b):
        return self._norm(self._combine(a, b))

    def _norm(self, st):
        """Cast each component to its compute type (type-stable loop-carried values)."""
        return tuple(t(x) for t, x in zip(self.ct, st))

    def _combine(self, a, b):
        op = self.op
        if op == "sum":
            return (a[0] + b[0],)
        if op == "prod":
            return (a[0] * b[0],)
        if op in ("max", "min"):
            if op == "max":
                better = b[0] >= a[0]
            else:
                better = b[0] <= a[0]
            if self.is_float:
                nb = isnan(b[0])
                na = isnan(a[0])
                keep = cutlass.Boolean(cutlass.select_(na, cutlass.Boolean(False), better))
                take = cutlass.Boolean(cutlass.select_(nb, cutlass.Boolean(True), keep))
            else:
                take = better
            return select_state(take, b, a)
        if op == "lse":
            return (_logaddexp(a[0], b[0]),)
        if op == "prod_bw":
            return (b[0] * a[0], b[1] + b[0] * a[1])
        if op == "max_bw":
            f = b[1] != Int64(0)
            return (sel(f, b[0], a[0] + b[0]), _b(f, 1, a[1]))
        # lse_bw: (m, s) ≙ s·e^m
        ct = self.c
        m = sel(a[0] > b[0], a[0], b[0])
        ta = sel(a[0] == ct(-INF), ct(0.0), a[1] * M.exp(a[0] - m))
        tb = sel(b[0] == ct(-INF), ct(0.0), b[1] * M.exp(b[0] - m))
        return (m, ta + tb)

    # ---------------------------------------------------------------- element / emit
    def element(self, v):
        """State of one element; ``v``: 'a' 'b' 'c' raw loaded values, 'nb' neighbour value,
        'has_nb' Boolean (the neighbour exists), 'pos' Int64 physical position."""
        return self._norm(self._element(v))

    def _element(self, v):
        op, ct = self.op, self.c
        if op in ("sum", "prod", "lse"):
            return (ct(v["a"]),)
        if op in ("max", "min"):
            return (ct(v["a"]), Int64(v["pos"]))
        if op == "prod_bw":
            x = ct(v["a"])
            return (x, x * ct(v["b"]))
        if op == "max_bw":
            start = cutlass.Boolean(cutlass.select_(v["has_nb"], Int64(v["nb"]) != Int64(v["a"]),
                                                    cutlass.Boolean(True)))
            return (ct(v["b"]), _b(start, 1, 0))
        return (-ct(v["c"]), ct(v["b"]))  # lse_bw: (−y, dy)

    def emit(self, v, incl, excl, exclusive):
        op, ct = self.op, self.c
        if op == "sum" and self.is_float:
            # + 0.0 turns the identity's -0.0 into the +0.0 of include_initial
            return self._out(sel(exclusive, excl[0] + ct(0.0), incl[0])), None
        if op in ("sum", "prod", "lse"):
            return self._out(sel(exclusive, excl[0], incl[0])), None
        if op in ("max", "min"):
            return self._out(incl[0]), incl[1]
        if op == "prod_bw":
            e = sel(v["has_nb"], ct(v["nb"]), ct(1.0))
            return self._out(e * (ct(v["b"]) + excl[1])), None
        if op == "max_bw":
            hit = Int64(v["a"]) == Int64(v["pos"])
            return self._out(sel(hit, incl[0], ct(0.0))), None
        return self._out(incl[1] * M.exp(incl[0] + ct(v["a"]))), None  # lse_bw

    def out_value(self, state):
        """Stored value of a bare state (the total written at position L of exclusive scans;
        an empty sum is +0.0)."""
        if self.op == "sum" and self.is_float:
            return self._out(state[0] + self.c(0.0))
        return self._out(state[0])

    def _out(self, x):
        o = self.st_o
        if o is cutlass.Boolean:
            return cutlass.Boolean(x != type(x)(0))
        return o(x)


def _logaddexp(a, b):
    """log(e^a + e^b) with NaN propagation and exact ±inf handling."""
    t = type(a)
    gt = a > b
    hi = sel(gt, a, b)
    lo = sel(gt, b, a)
    r = hi + M.log1p(M.exp(lo - hi))
    return sel(lo == hi, hi + t(LN2), r)


def make(op: str, dt: str, odt: str) -> ScanOp:
    return ScanOp(op, dt, odt)
