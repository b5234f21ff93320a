"""CuTe DSL kernels of the image family (imported only by compiler worker processes)."""
