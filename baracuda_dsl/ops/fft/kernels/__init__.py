"""CuTe DSL kernels of the fft family: none (its backend is cuFFT, see ``specs``)."""
