"""Shared CuTe DSL building blocks (row reductions, cluster exchange, online softmax merges, ...):
imported only by the kernels of the op families, inside compiler worker processes.  Their
pure-Python counterparts (shapes, ladders, geometry) are in :mod:`baracuda_dsl.common`."""
