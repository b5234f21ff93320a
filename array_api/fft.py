"""``array_api.fft``: the standard's Fourier transform extension (2024.12), complete, on cuFFT.

- ``fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift ifftshift``:
  ``array_api._fft_functions`` (the FFT family's ``FFTPlan``; semantics and dtypes as NumPy's
  ``numpy.fft`` and the standard, documented there).
- Extensions ``fft_backward rfftn_backward irfftn_backward``: the transforms' adjoints for
  autograd frameworks (``array_api._fft_backward``).
"""

from __future__ import annotations

from ._fft_backward import fft_backward, irfftn_backward, rfftn_backward
from ._fft_functions import (fft, fftfreq, fftn, fftshift, hfft, ifft, ifftn, ifftshift, ihfft,
                             irfft, irfftn, rfft, rfftfreq, rfftn)

__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift",
           # extensions: the transforms' backward
           "fft_backward", "rfftn_backward", "irfftn_backward"]
