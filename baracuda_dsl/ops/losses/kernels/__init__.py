"""CuTe DSL kernels of the losses family; imported only by the compiler worker processes."""
