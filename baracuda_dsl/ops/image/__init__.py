"""The image family: resampling and region ops over (N, C, *spatial) images, forward and
backward — ``interpolate`` (nearest / nearest-exact / linear / bilinear / bicubic / trilinear /
area, antialias), ``grid_sample`` and ``affine_grid``, ``roi_align`` / ``roi_pool`` and ``nms``.
One Plan module per op group; this package gathers their public names."""

from . import interpolate, nms, roi, sampling

__all__ = [*interpolate.__all__, *sampling.__all__, *roi.__all__, *nms.__all__]
globals().update({_n: getattr(_m, _n) for _m in (interpolate, sampling, roi, nms)
                  for _n in _m.__all__})
