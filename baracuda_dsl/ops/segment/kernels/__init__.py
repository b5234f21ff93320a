"""CuTe DSL kernels of the segment family; imported only by the compiler worker processes."""
