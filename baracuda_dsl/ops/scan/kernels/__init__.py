"""CuTe DSL kernels of the scan family; imported only by the compiler worker processes."""
