"""CuTe DSL kernels of the sorting family; imported only by the compiler worker processes."""
