"""CTC loss (torch.nn.functional.ctc_loss semantics), forward and backward.

``CTCLossPlan``: log_probs (T, N, C) (log-probabilities, any strides), targets padded (N, S) or
concatenated 1-D (``concatenated=True``, length ``total``), input_lengths / target_lengths (N,)
int64.  Per sample n the negative log-likelihood of its target under the CTC alignment model
(alpha recursion in log space over the extended labels, blank = ``blank``); ``zero_infinity``
maps infinite losses (target longer than the input allows) to 0.  Reductions: ``none`` (out
(N,)), ``sum``, ``mean`` (each loss divided by max(target_length, 1), then the batch mean — as
torch) — out shape ().  Labels equal to ``blank`` are not rejected (as torch; the recursion then
treats them as the blank symbol would be treated at those positions).  A label outside [0, C) or
an invalid length (input length outside [0, T], target length outside [0, S], concatenated targets
running past ``total``) never touches memory out of bounds: that sample's loss is NaN and the
optional ``status`` word is set to 1.

``CTCLossBackwardPlan``: grad (T, N, C) = torch's ctc_loss gradient with respect to log_probs,
scaled by ``dloss`` ((N,) for none, () otherwise): ``exp(lp) − exp(log Σ_{s: l'_s = c} α_t(s)β_t(s)
+ nll − lp)`` for t < input_length, 0 after (it reruns the forward recursion, then the beta
recursion).  Dtypes f32, f16, bf16, f64; math in f32 (f64 for f64).  Workspace: alpha (and beta)
rows N·T·(2S+1) compute-type values each, plus 2N values.  Deterministic (no atomics).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...dtypes import FP4, DType, int32, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...plan import Plan, align_up, check_dtype, check_writable_no_overlap, view_arg
from ._common import (check_exact_descriptor, check_int, check_reduction, loss_ct,
                      loss_out_shape, loss_sku)
from .specs import ctc as spec
from .specs import loss_row as lspec


@dataclass(frozen=True)
class CTCLossDescriptor:
    """``t`` time steps, ``n`` batch, ``c`` classes (blank included); ``s``: padded target width
    (targets (n, s)), or with ``concatenated`` the largest target length allowed (it sizes the
    workspace; ``total`` is the length of the 1-D targets); ``blank``; ``reduction``;
    ``zero_infinity``."""

    t: int
    n: int
    c: int
    dtype: DType
    s: int
    concatenated: bool = False
    total: int = 0
    blank: int = 0
    reduction: str = "mean"
    zero_infinity: bool = False

    def __post_init__(self):
        who = type(self).__name__
        for f in ("t", "n", "c", "s", "total"):
            v = getattr(self, f)
            check_int(v, f, who)
            if v >= 2 ** 31:
                raise UnsupportedError(f"{who}: {f} must be < 2^31")
        if self.c < 1:
            raise InvalidProblemError(f"{who}: c must be >= 1 (the blank is a class)")
        if not isinstance(self.blank, int) or not 0 <= self.blank < self.c:
            raise InvalidProblemError(f"{who}: blank must be in [0, c), got {self.blank!r}")
        check_reduction(self.reduction, who)
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, who))
        object.__setattr__(self, "concatenated", bool(self.concatenated))
        object.__setattr__(self, "zero_infinity", bool(self.zero_infinity))
        if not self.concatenated and self.total:
            raise InvalidProblemError(f"{who}: total is only for concatenated targets")


@dataclass(frozen=True)
class CTCLossBackwardDescriptor(CTCLossDescriptor):
    """As :class:`CTCLossDescriptor`."""


@dataclass
class CTCLossArgs:
    """log_probs (t, n, c); targets (n, s) or (total,) int64; input_lengths, target_lengths (n,)
    int64; out (n,) or (); status: optional int32 word (1 = bad label / length)."""

    log_probs: object
    targets: object
    input_lengths: object
    target_lengths: object
    out: object
    status: object = None


@dataclass
class CTCLossBackwardArgs:
    """dloss ((n,) or ()), log_probs, targets, input_lengths, target_lengths; output grad
    (t, n, c); status as in :class:`CTCLossArgs`."""

    dloss: object
    log_probs: object
    targets: object
    input_lengths: object
    target_lengths: object
    grad: object
    status: object = None


class _CTC(Plan):
    """What the CTC plans share: the SKU, the workspace layout and the views of the inputs."""

    _backward = False

    def _plan(self) -> None:
        check_exact_descriptor(self)
        d = self.desc
        self._knobs = spec.CTCKnobs(dtype=d.dtype.short)
        self._final_knobs = lspec.LossFinalizeKnobs(dtype=d.dtype.short)
        tmpl = spec.CTC_BW if self._backward else spec.CTC_FW
        self._sku = loss_sku(d, self._arch, "ctc_bw" if self._backward else "ctc", tmpl,
                             self._knobs, aux_element=int64)

    # workspace layout: alpha | beta (backward) | nll | part
    def _layout(self):
        d = self.desc
        ct = loss_ct(d.dtype).itemsize
        rows = align_up(d.n * d.t * (2 * d.s + 1) * ct)
        lay = {"alpha": 0}
        off = rows
        if self._backward:
            lay["beta"] = off
            off += rows
        lay["nll"] = off
        off += align_up(max(d.n, 1) * ct)
        lay["part"] = off
        off += align_up(max(d.n, 1) * ct)
        return lay, off

    def workspace_size(self) -> int:
        return self._layout()[1]

    def _input_views(self, args):
        """(lp, tg, il, tl, status) views of the Args."""
        d = self.desc
        lp = view_arg(args.log_probs, "log_probs", shape=(d.t, d.n, d.c), dtype=d.dtype)
        dev = lp.device
        tshape = (d.total,) if d.concatenated else (d.n, d.s)
        tg = view_arg(args.targets, "targets", shape=tshape, dtype=int64, device=dev)
        il = view_arg(args.input_lengths, "input_lengths", shape=(d.n,), dtype=int64, device=dev)
        tl = view_arg(args.target_lengths, "target_lengths", shape=(d.n,), dtype=int64,
                      device=dev)
        stv = view_arg(args.status, "status", shape=(1,), dtype=int32, device=dev, optional=True)
        return lp, tg, il, tl, stv

    def _target_strides(self, tg, flags):
        """(target stride over samples, over labels, flags with CONCAT for 1-D targets)."""
        if self.desc.concatenated:
            return 0, tg.strides[0], flags | spec.CONCAT
        return tg.strides[0], tg.strides[1], flags

    def _fw_args(self, lp, tg, il, tl, ws, out, stv, flags, os0):
        d = self.desc
        lay, _ = self._layout()
        ts0, ts1, flags = self._target_strides(tg, flags)
        return [lp.ptr, tg.ptr, il.ptr, tl.ptr, ws.ptr + lay["alpha"], ws.ptr + lay["nll"],
                out, ws.ptr + lay["part"], stv.ptr if stv is not None else 0,
                1 if stv is not None else 0, d.t, d.n, d.c, d.s, d.blank, lp.strides[0],
                lp.strides[1], lp.strides[2], ts0, ts1, il.strides[0], tl.strides[0], os0,
                d.total, flags]


class CTCLossPlan(_CTC):
    """torch.nn.functional.ctc_loss forward (see the module docstring)."""

    descriptor = CTCLossDescriptor

    def is_empty(self) -> bool:
        return self.desc.n == 0 and self.desc.reduction == "none"

    def _bind(self, args):
        """(lp, tg, il, tl, status, out) views of the Args."""
        lp, tg, il, tl, stv = self._input_views(args)
        out = view_arg(args.out, "out", shape=loss_out_shape(self.desc), dtype=self.desc.dtype,
                       device=lp.device)
        check_writable_no_overlap(out, "out")
        return lp, tg, il, tl, stv, out

    def _launch(self, bound, stream, ws) -> None:
        lp, tg, il, tl, stv, out = bound
        d = self.desc
        red = d.reduction
        flags = (spec.ZERO_INF if d.zero_infinity else 0) | (
            spec.WRITE_OUT if red == "none" else spec.WRITE_PART) | (
            spec.MEAN if red == "mean" else 0)
        if d.n:
            lk = self._kernel(spec.CTC_FW, self._knobs, lp.device)
            lk.launch((d.n, 1, 1), self._fw_args(lp, tg, il, tl, ws, out.ptr, stv, flags,
                                                 out.strides[0] if red == "none" else 0), stream)
        if red != "none":
            lay, _ = self._layout()
            scale = 1.0 if red == "sum" else (1.0 / d.n if d.n else math.nan)
            lk = self._kernel(lspec.LOSS_FINALIZE, self._final_knobs, lp.device)
            lk.launch((1, 1, 1), [ws.ptr + lay["part"], out.ptr, d.n, scale], stream)


class CTCLossBackwardPlan(_CTC):
    """Gradient of ctc_loss with respect to log_probs (see the module docstring)."""

    descriptor = CTCLossBackwardDescriptor
    _backward = True

    def is_empty(self) -> bool:
        d = self.desc
        return d.n == 0 or d.t == 0 or d.c == 0

    def _bind(self, args):
        """(lp, tg, il, tl, status, dloss, grad) views of the Args."""
        lp, tg, il, tl, stv = self._input_views(args)
        d = self.desc
        dl = view_arg(args.dloss, "dloss", shape=loss_out_shape(d), dtype=d.dtype,
                      device=lp.device)
        g = view_arg(args.grad, "grad", shape=(d.t, d.n, d.c), dtype=d.dtype, device=lp.device)
        check_writable_no_overlap(g, "grad")
        return lp, tg, il, tl, stv, dl, g

    def _launch(self, bound, stream, ws) -> None:
        lp, tg, il, tl, stv, dl, g = bound
        d = self.desc
        lay, _ = self._layout()
        fw = self._kernel(spec.CTC_FW, self._knobs, lp.device)
        fw.launch((d.n, 1, 1), self._fw_args(lp, tg, il, tl, ws, 0, stv, 0, 0), stream)
        flags = (spec.ZERO_INF if d.zero_infinity else 0) | (
            spec.MEAN if d.reduction == "mean" else 0)
        ts0, ts1, flags = self._target_strides(tg, flags)
        scale = 1.0 / d.n if d.reduction == "mean" else 1.0
        bw = self._kernel(spec.CTC_BW, self._knobs, lp.device)
        bw.launch((d.n, 1, 1), [
            dl.ptr, lp.ptr, tg.ptr, il.ptr, tl.ptr, ws.ptr + lay["alpha"], ws.ptr + lay["beta"],
            ws.ptr + lay["nll"], g.ptr, d.t, d.n, d.c, d.s, d.blank, lp.strides[0],
            lp.strides[1], lp.strides[2], ts0, ts1, il.strides[0], tl.strides[0], g.strides[0],
            g.strides[1], g.strides[2], dl.strides[0] if d.reduction == "none" else 0, d.total,
            scale, flags], stream)
