"""CuTe DSL kernels of the attention family; imported only by the compiler worker processes."""
