"""CuTe DSL kernels of the reduction family; imported only by the compiler worker processes."""
