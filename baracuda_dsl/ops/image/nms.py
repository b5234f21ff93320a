"""Non-maximum suppression with torchvision.ops semantics: ``nms`` and its per-category form
``batched_nms``.

``boxes`` (K, 4) ``[x1, y1, x2, y2]`` (x1 <= x2, y1 <= y2 expected, not checked), ``scores`` (K,)
in the boxes' dtype, any strides.  The boxes are taken in decreasing score order (a stable
descending argsort: equal scores keep increasing index order; NaN scores first, like
``torch.sort(descending=True)``); a box is kept unless a kept box before it overlaps it with
``IoU > iou_threshold``, where ``IoU = inter / (area_a + area_b − inter)`` in f32 (f64 for f64)
— a NaN IoU (two empty boxes) suppresses nothing.  The output is the original indices of the kept
boxes in that order (int64), and their count.

``idxs`` (optional, int64 (K,), any stride): boxes of different categories never suppress each
other — ``batched_nms``.  torchvision reaches the same by offsetting every box by
``idx · (max coordinate + 1)`` and running nms; the category test gives the result that offset
aims at without its rounding (in f16 / bf16 the offset boxes lose precision).

GPU form (``NMSPlan``, four launches, output on the device): the sorting family's stable
descending ``ArgsortPlan`` → ``order``; ``nms_mask`` — a (ceil(K/64))² grid of 64-thread CTAs
writing, per sorted box, one 64-bit word per later column block of 64 boxes with the bits of the
later boxes it suppresses; ``nms_sweep`` — one CTA walking the boxes in order with a ``removed``
bit set, writing ``keep[0:count]`` and ``count``.  Deterministic.  Workspace (``workspace_size()``):
the order (8·K bytes), the mask (8·K·ceil(K/64) bytes), the removed words (8·ceil(K/64) bytes)
and the argsort's scratch.  K <= 65535·64.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import FP4, DType, float32, float64, int64
from ...errors import InvalidProblemError, UnsupportedError
from ...jit import freeze_knobs
from ...plan import Plan, align_up, check_dtype, check_finite, view_arg
from ...tensor import TensorView, contiguous_strides
from ...vocabulary import BackendKind, KernelSku, OpCategory, PrecisionGuarantee, Workspace
from .specs import nms as spec
from .specs.nms import NmsMaskKnobs, NmsSweepKnobs

__all__ = ["NMSDescriptor", "NMSArgs", "NMSPlan"]

_MAX_K = 65535 * spec.BLOCK


@dataclass(frozen=True)
class NMSDescriptor:
    """nms over ``num_boxes`` (K >= 0) boxes of ``dtype`` (f32, f16, bf16, f64) with
    ``iou_threshold`` (finite; IoU > threshold suppresses); ``batched``: the Args carry int64
    category ``idxs`` (batched_nms)."""

    num_boxes: int
    iou_threshold: float
    dtype: DType = float32
    batched: bool = False

    def __post_init__(self):
        k = self.num_boxes
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidProblemError(f"NMS: num_boxes must be an int >= 0, got {k!r}")
        object.__setattr__(self, "iou_threshold",
                           check_finite(self.iou_threshold, "NMS: iou_threshold"))
        object.__setattr__(self, "dtype", check_dtype(self.dtype, FP4, "NMS"))
        object.__setattr__(self, "batched", bool(self.batched))


@dataclass
class NMSArgs:
    """``boxes`` (K, 4) and ``scores`` (K,) of the descriptor's dtype, any strides; ``keep``: a
    dense int64 (K,) buffer receiving the kept indices in its first ``count`` entries; ``count``:
    an int64 (1,) (or ()) device scalar receiving the number kept; ``idxs``: int64 (K,)
    categories, required exactly when the descriptor is ``batched``."""

    boxes: object
    scores: object
    keep: object
    count: object
    idxs: object = None


class NMSPlan(Plan):
    """keep[:count] = nms(boxes, scores, iou_threshold) (or batched_nms with ``idxs``): argsort,
    suppression mask, sweep — all on the device (see the module docstring).  Deterministic.
    K = 0 still writes count = 0 (one launch)."""

    descriptor = NMSDescriptor

    def _plan(self) -> None:
        from ..sorting.sort import ArgsortDescriptor, ArgsortPlan

        d = self.desc
        k = d.num_boxes
        if k > _MAX_K:
            raise UnsupportedError(f"NMS: at most {_MAX_K} boxes (the mask grid limit), got {k}")
        self._cb = -(-k // spec.BLOCK)
        self._sortp = ArgsortPlan.select(ArgsortDescriptor((k,), 0, d.dtype, True), self.pref) \
            if k else None
        self._o_mask = align_up(8 * k)
        self._o_rem = self._o_mask + align_up(8 * k * self._cb)
        self._o_sort = self._o_rem + align_up(8 * max(self._cb, 1))
        self._ws = self._o_sort + (self._sortp.workspace_size() if self._sortp else 0)
        self._mknobs = NmsMaskKnobs(d.dtype.short)
        self._sknobs = NmsSweepKnobs()
        ct = float64 if d.dtype is float64 else float32
        self._sku = KernelSku(OpCategory.IMAGE, "batched_nms" if d.batched else "nms", d.dtype,
                              self._arch, BackendKind.CUTE_DSL,
                              PrecisionGuarantee(math_precision=ct, accumulator=ct),
                              aux_element=int64, template=spec.NMS_MASK.name,
                              knobs=freeze_knobs(self._mknobs))

    def workspace_size(self) -> int:
        """order + mask + removed words + the argsort's scratch (bytes, 256-aligned slots)."""
        return self._ws

    def _bind(self, args):
        d = self.desc
        k = d.num_boxes
        b = view_arg(args.boxes, "boxes", shape=(k, 4), dtype=d.dtype)
        s = view_arg(args.scores, "scores", shape=(k,), dtype=d.dtype, device=b.device)
        keep = view_arg(args.keep, "keep", shape=(k,), dtype=int64, device=b.device)
        if k > 1 and keep.strides[0] != 1:
            raise UnsupportedError(f"keep: must be dense, got stride {keep.strides[0]}")
        cnt = view_arg(args.count, "count", dtype=int64, device=b.device)
        if cnt.numel != 1:
            raise InvalidProblemError(f"count: must hold one int64, got shape {tuple(cnt.shape)}")
        idx = view_arg(args.idxs, "idxs", shape=(k,), dtype=int64, device=b.device,
                       optional=not d.batched)
        if idx is not None and not d.batched:
            raise InvalidProblemError("idxs: given to a plan whose descriptor is not batched")
        return b, s, keep, cnt, idx

    def _launch(self, bound, stream: int, ws: Workspace) -> None:
        from ..sorting.sort import ArgsortArgs

        b, s, keep, cnt, idx = bound
        d = self.desc
        k, cb, dev = d.num_boxes, self._cb, b.device
        order = TensorView._trusted(ws.ptr, (k,), contiguous_strides((k,)), int64, dev, None)
        mask = ws.ptr + self._o_mask
        rem = ws.ptr + self._o_rem
        if k:
            self._sortp.run(ArgsortArgs(s, order), stream,
                            Workspace(ws.ptr + self._o_sort, ws.nbytes - self._o_sort, None))
            mk = self._kernel(spec.NMS_MASK, self._mknobs, dev)
            mk.launch((cb, cb, 1), [b.ptr, order.ptr, idx.ptr if idx is not None else order.ptr,
                                    mask, k, cb, b.strides[0], b.strides[1],
                                    idx.strides[0] if idx is not None else 0,
                                    1 if idx is not None else 0, float(d.iou_threshold)],
                      stream)
        sk = self._kernel(spec.NMS_SWEEP, self._sknobs, dev)
        sk.launch((1, 1, 1), [mask, order.ptr, rem, keep.ptr, cnt.ptr, k, cb], stream)
