"""triu / tril as a masked copy: ``out[..., i, j] = x[..., i, j]`` if ``j - i >= kd`` (triu) /
``j - i <= kd`` (tril), else all-bits-zero (zero of every dtype, bool and complex included).
The same row × col remapping kernel as :mod:`baracuda_dsl.ops.shape.kernels.pad` (mode
``triu``/``tril``,
no pads): the last outer dim is the matrix row ``i``, the innermost the column ``j``; masked
elements are never read.  Opaque ``itemsize``-byte words."""

from __future__ import annotations

from .pad import build

__all__ = ["build"]
