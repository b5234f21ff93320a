"""CuTe DSL kernels of the normalization family; imported only by the compiler worker processes."""
