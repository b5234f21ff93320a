"""CuTe DSL kernels of the indexing family; imported only by the compiler worker processes."""
