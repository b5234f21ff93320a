"""Kernel specs of the conv family: none.  The family has no CuTe DSL templates — its backend is
a vendor library, cuDNN (through NVIDIA's Python frontend, :mod:`..cudnn_backend`); the
epilogue it cannot fuse runs the elementwise family's prebuilt kernels.  Importing this package
registers nothing."""
