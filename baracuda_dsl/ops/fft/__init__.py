"""The fft family: discrete Fourier transforms (complex, real-to-complex, complex-to-real) over
any axes, on cuFFT (vendor backend, no DSL templates)."""

from .fft import FFTArgs, FFTCall, FFTDescriptor, FFTPlan

__all__ = ["FFTArgs", "FFTCall", "FFTDescriptor", "FFTPlan"]
