"""Pure-Python kernel specs of the conv family (no DSL import): importing this package registers
its CuTe DSL templates — ``im2col`` / ``col2im`` (unfold / fold, :mod:`.im2col`).  The
convolutions themselves have no templates: their backend is a vendor library, cuDNN (through
NVIDIA's Python frontend, :mod:`..cudnn_backend`); the epilogue it cannot fuse runs the
elementwise family's prebuilt kernels."""

from . import im2col  # noqa: F401
