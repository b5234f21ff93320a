"""Pure-Python kernel specs of the image family (no DSL import): importing this package registers its templates."""

from . import interpolate, nms, roi, sampling  # noqa: F401
