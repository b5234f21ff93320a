"""CuTe DSL kernels of the random family; imported only by the compiler worker processes."""
