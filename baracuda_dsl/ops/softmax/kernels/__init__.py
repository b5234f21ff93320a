"""CuTe DSL kernels of the softmax family; imported only by the compiler worker processes."""
