"""CuTe DSL kernels of the histogram family; imported only by the compiler worker processes."""
