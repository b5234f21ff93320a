"""The linalg family has no CuTe DSL kernel templates: its backend is a vendor library (cuSOLVER /
cuBLAS through nvmath-python, :mod:`baracuda_dsl.runtime.vendor`); the copies around the library
calls run the shape and elementwise families' prebuilt kernels.  Importing this package registers
nothing."""
