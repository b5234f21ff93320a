"""The linalg family has no CuTe DSL kernels (its backend is cuSOLVER / cuBLAS); this package is
empty so the family has the layout every family has."""
