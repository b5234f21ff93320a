"""CuTe DSL kernels of the conv family — ``im2col`` and ``col2im`` (unfold / fold); imported only
by the compiler worker processes.  The convolutions run on cuDNN (see ``specs``)."""
