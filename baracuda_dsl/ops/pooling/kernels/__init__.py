"""CuTe DSL kernels of the pooling family; imported only by the compiler worker processes."""
