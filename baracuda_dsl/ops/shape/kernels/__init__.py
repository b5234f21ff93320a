"""CuTe DSL kernels of the shape family; imported only by the compiler worker processes."""
