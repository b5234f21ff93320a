"""CuTe DSL kernels of the gemm family; imported only by the compiler worker processes."""
