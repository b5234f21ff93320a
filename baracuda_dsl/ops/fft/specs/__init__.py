"""Kernel specs of the fft family: none.  The family has no CuTe DSL templates — its backend is a
vendor library, cuFFT (through nvmath-python's bindings, :mod:`baracuda_dsl.runtime.vendor`);
the copies and the norm scaling it needs run the shape and elementwise families' prebuilt
kernels."""
