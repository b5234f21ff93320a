"""CuTe DSL kernels of the elementwise family; imported only by the compiler worker processes."""
