"""Region and detection extensions (torchvision.ops semantics): ``roi_align`` / ``roi_pool`` and
their backward functions, ``nms`` and ``batched_nms``, dispatching to
:mod:`baracuda_dsl.ops.image.roi` and :mod:`baracuda_dsl.ops.image.nms`.

``input`` is (N, C, H, W), any strides; ``boxes`` is (K, 5) ``[batch_index, x1, y1, x2, y2]``
(converted to the input's dtype when it differs; a list of per-image (Ki, 4) boxes is not
accepted: concatenate with the batch index column first).  Results are new dense arrays.  Dtypes
float16, bfloat16, float32, float64 (half types compute in float32); other dtypes are a
``TypeError``.  The backward functions scatter with atomic adds: the summation order varies
between runs (non-deterministic in the last bits).

``nms`` / ``batched_nms`` return the int64 indices of the kept boxes in decreasing score order
(equal scores: increasing index); the kept count is read back to the host (one sync).
"""

from __future__ import annotations

from . import _dispatch
from . import _dtypes as _dt
from . import _elementwise_functions as _ef
from . import _plans
from ._array_object import Array

_CAT = "real floating-point"


def _input(x, name: str):
    _plans.check_array(x, "input")
    _ef.check_dtype(x.dtype, _CAT, name)
    if x.ndim != 4:
        raise ValueError(f"{name}: input must be (N, C, H, W), got shape {tuple(x.shape)}")


def _boxes(boxes, dtype, name: str, cols: int = 5):
    _plans.check_array(boxes, "boxes")
    if boxes.ndim != 2 or boxes.shape[1] != cols:
        raise ValueError(f"{name}: boxes must be (K, {cols}), got shape {tuple(boxes.shape)}")
    if boxes.dtype != dtype:
        boxes = _dispatch.cast(boxes, dtype)
    return boxes


def _shape4(input_shape, name: str):
    s = tuple(int(v) for v in input_shape)
    if len(s) != 4:
        raise ValueError(f"{name}: input_shape must be (N, C, H, W), got {s}")
    return s


def _grad(grad, boxes, name: str):
    _plans.check_array(grad, "grad")
    _ef.check_dtype(grad.dtype, _CAT, name)
    if grad.ndim != 4:
        raise ValueError(f"{name}: grad must be (K, C, PH, PW), got shape {tuple(grad.shape)}")
    return _boxes(boxes, grad.dtype, name)


def roi_align(input, boxes, output_size, spatial_scale: float = 1.0, sampling_ratio: int = -1,
              aligned: bool = False) -> Array:
    """torchvision.ops.roi_align: (K, C, PH, PW), per bin the mean of bilinear samples
    (``sampling_ratio`` per side, <= 0: ``ceil(roi / output)``; ``aligned``: −0.5 pixel
    shift)."""
    from baracuda_dsl.ops.image.roi import RoIAlignArgs, RoIAlignDescriptor, RoIAlignPlan

    _input(input, "roi_align")
    boxes = _boxes(boxes, input.dtype, "roi_align")
    desc = RoIAlignDescriptor(tuple(input.shape), int(boxes.shape[0]), output_size,
                              spatial_scale, sampling_ratio, aligned, input.dtype)
    y = Array._empty(desc.out_shape, input.dtype, input.device)
    _plans.run(_plans.select(RoIAlignPlan, desc), RoIAlignArgs(input, boxes, y), input)
    return y


def roi_align_backward(grad, boxes, input_shape, spatial_scale: float = 1.0,
                       sampling_ratio: int = -1, aligned: bool = False) -> Array:
    """Gradient of :func:`roi_align` with respect to its input (output size = ``grad``'s last
    two extents); atomic scatter (non-deterministic)."""
    from baracuda_dsl.ops.image.roi import (RoIAlignBackwardArgs, RoIAlignBackwardPlan,
                                            RoIAlignDescriptor)

    boxes = _grad(grad, boxes, "roi_align_backward")
    s = _shape4(input_shape, "roi_align_backward")
    desc = RoIAlignDescriptor(s, int(boxes.shape[0]), tuple(grad.shape[2:]), spatial_scale,
                              sampling_ratio, aligned, grad.dtype)
    if tuple(grad.shape) != desc.out_shape:
        raise ValueError(f"roi_align_backward: grad has shape {tuple(grad.shape)}, expected "
                         f"{desc.out_shape}")
    dx = Array._empty(s, grad.dtype, grad.device)
    _plans.run(_plans.select(RoIAlignBackwardPlan, desc), RoIAlignBackwardArgs(grad, boxes, dx),
               grad)
    return dx


def roi_pool(input, boxes, output_size, spatial_scale: float = 1.0,
             return_argmax: bool = False):
    """torchvision.ops.roi_pool: (K, C, PH, PW) bin maxima; with ``return_argmax`` also the int64
    argmax ``h·W + w`` per output (−1 for empty bins)."""
    from baracuda_dsl.ops.image.roi import RoIPoolArgs, RoIPoolDescriptor, RoIPoolPlan

    _input(input, "roi_pool")
    boxes = _boxes(boxes, input.dtype, "roi_pool")
    desc = RoIPoolDescriptor(tuple(input.shape), int(boxes.shape[0]), output_size,
                             spatial_scale, input.dtype)
    y = Array._empty(desc.out_shape, input.dtype, input.device)
    arg = Array._empty(desc.out_shape, _dt.int64, input.device) if return_argmax else None
    _plans.run(_plans.select(RoIPoolPlan, desc), RoIPoolArgs(input, boxes, y, arg), input)
    return (y, arg) if return_argmax else y


def roi_pool_backward(grad, boxes, argmax, input_shape, spatial_scale: float = 1.0) -> Array:
    """Gradient of :func:`roi_pool`: ``grad`` added at the saved ``argmax`` of each output
    (atomic scatter)."""
    from baracuda_dsl.ops.image.roi import (RoIPoolBackwardArgs, RoIPoolBackwardPlan,
                                            RoIPoolDescriptor)

    boxes = _grad(grad, boxes, "roi_pool_backward")
    _plans.check_index_array(argmax, "argmax")
    if argmax.dtype != _dt.int64:
        argmax = _dispatch.cast(argmax, _dt.int64)
    s = _shape4(input_shape, "roi_pool_backward")
    desc = RoIPoolDescriptor(s, int(boxes.shape[0]), tuple(grad.shape[2:]), spatial_scale,
                             grad.dtype)
    if tuple(grad.shape) != desc.out_shape:
        raise ValueError(f"roi_pool_backward: grad has shape {tuple(grad.shape)}, expected "
                         f"{desc.out_shape}")
    dx = Array._empty(s, grad.dtype, grad.device)
    _plans.run(_plans.select(RoIPoolBackwardPlan, desc),
               RoIPoolBackwardArgs(grad, boxes, argmax, dx), grad)
    return dx


def _nms(boxes, scores, idxs, iou_threshold, name: str) -> Array:
    from baracuda_dsl.ops.image.nms import NMSArgs, NMSDescriptor, NMSPlan

    _plans.check_array(boxes, "boxes")
    _ef.check_dtype(boxes.dtype, _CAT, name)
    boxes = _boxes(boxes, boxes.dtype, name, 4)
    _plans.check_array(scores, "scores")
    k = int(boxes.shape[0])
    if tuple(scores.shape) != (k,):
        raise ValueError(f"{name}: scores must be ({k},), got shape {tuple(scores.shape)}")
    if scores.dtype != boxes.dtype:
        scores = _dispatch.cast(scores, boxes.dtype)
    if idxs is not None:
        _plans.check_index_array(idxs, "idxs")
        if tuple(idxs.shape) != (k,):
            raise ValueError(f"{name}: idxs must be ({k},), got shape {tuple(idxs.shape)}")
        if idxs.dtype != _dt.int64:
            idxs = _dispatch.cast(idxs, _dt.int64)
    desc = NMSDescriptor(k, float(iou_threshold), boxes.dtype, idxs is not None)
    keep = Array._empty((k,), _dt.int64, boxes.device)
    if k == 0:
        return keep
    cnt = Array._empty((1,), _dt.int64, boxes.device)
    _plans.run(_plans.select(NMSPlan, desc), NMSArgs(boxes, scores, keep, cnt, idxs), boxes)
    return keep[:int(cnt.to_numpy()[0])]


def nms(boxes, scores, iou_threshold: float) -> Array:
    """torchvision.ops.nms: int64 indices of the boxes kept (IoU > ``iou_threshold`` with a
    higher-scored kept box suppresses), by decreasing score."""
    return _nms(boxes, scores, None, iou_threshold, "nms")


def batched_nms(boxes, scores, idxs, iou_threshold: float) -> Array:
    """torchvision.ops.batched_nms: nms within each category ``idxs`` (boxes of different
    categories never suppress each other); kept indices by decreasing score."""
    return _nms(boxes, scores, idxs, iou_threshold, "batched_nms")


__all__ = ["roi_align", "roi_align_backward", "roi_pool", "roi_pool_backward", "nms",
           "batched_nms"]
