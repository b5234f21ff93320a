"""NVIDIA's math libraries — cuSOLVER (dense), cuBLAS and cuFFT — through the pointer-level
bindings of ``nvmath-python`` (``nvmath.bindings``), for the families whose right backend is a
vendor library (linalg, fft).

- :func:`library` imports a binding module lazily: importing this package never loads a vendor
  library; a host without ``nvmath-python`` gets an UnsupportedError naming the install.
- :func:`solver_handle` / :func:`blas_handle`: one library handle per (thread, device), created on
  first use with the device's primary context current, bound to the caller's stream on every call
  (a handle is not thread-safe; one per thread makes the plans usable from any thread).
  :func:`solver_params` is the thread's ``cusolverDnParams`` (default algorithms).
- :func:`call` runs one library function and turns a failed status into a typed error
  (allocation failure → DeviceOutOfMemoryError, "not supported" → UnsupportedError, an invalid
  value → InvalidProblemError, anything else → VendorError).
- :data:`CUDA_DATA_TYPE`: our DType → ``cudaDataType`` for the 64-bit generic (X) API.
- LinAlgError and its subclasses: the numerical failures a solver reports through its ``info``
  word (not positive definite, singular, no convergence); they are ValueErrors, like NumPy's.
"""

from __future__ import annotations

import importlib
import threading

from ..dtypes import DType, complex64, complex128, float32, float64
from ..errors import (BaracudaError, DeviceOutOfMemoryError, DriverError, InvalidProblemError,
                      UnsupportedError)

#: cudaDataType of each dtype the solver and FFT plans take (CUDA_R_32F, CUDA_R_64F, CUDA_C_32F,
#: CUDA_C_64F)
CUDA_DATA_TYPE = {float32: 0, float64: 1, complex64: 4, complex128: 5}

#: the dtypes the vendor-backed plans take, in the standard's order
VENDOR_DTYPES = (float32, float64, complex64, complex128)

INSTALL_HINT = ("install nvmath-python and the CUDA math libraries: "
                "pip install 'baracuda-dsl[cu13]' (or nvmath-python[cu13] / [cu12])")


class VendorError(DriverError):
    """A vendor library call (cuSOLVER, cuBLAS, cuFFT) returned a failure status."""


class LinAlgError(BaracudaError, ValueError):
    """A factorisation or solve met a matrix it cannot handle (like ``numpy.linalg.LinAlgError``):
    ``batch_index`` is the first failing matrix of the batch (flat index), ``info`` the solver's
    code for it."""

    def __init__(self, message: str, batch_index: int = 0, info: int = 0):
        self.batch_index = int(batch_index)
        self.info = int(info)
        super().__init__(message)


class NotPositiveDefiniteError(LinAlgError):
    """Cholesky: the leading minor of order ``info`` is not positive definite."""


class SingularMatrixError(LinAlgError):
    """LU / solve / inv: U[info-1, info-1] is exactly zero."""


class NoConvergenceError(LinAlgError):
    """An iterative eigen / singular value solver did not converge (``info`` off-diagonal
    elements did not go to zero)."""


_MODULES: dict = {}
_LOCK = threading.Lock()


def library(name: str):
    """The ``nvmath.bindings`` module ``name`` ('cusolverDn', 'cublas', 'cufft', 'cusolver'),
    imported once; UnsupportedError when nvmath-python is not installed."""
    mod = _MODULES.get(name)
    if mod is not None:
        return mod
    with _LOCK:
        mod = _MODULES.get(name)
        if mod is None:
            try:
                mod = importlib.import_module(f"nvmath.bindings.{name}")
            except ImportError as e:
                raise UnsupportedError(f"the {name} backend needs nvmath-python ({e}); "
                                       f"{INSTALL_HINT}") from None
            _MODULES[name] = mod
    return mod


def is_available() -> bool:
    """True when nvmath-python's bindings import (the libraries themselves load on first call)."""
    try:
        library("cusolverDn")
        return True
    except UnsupportedError:
        return False


class _ThreadHandles(threading.local):
    def __init__(self):
        self.handles = {}


_HANDLES = _ThreadHandles()

#: (create, destroy, set_stream) function names of each handle kind, and its library
_KINDS = {
    "cusolverDn": ("cusolverDn", "create", "set_stream"),
    "cusolverDn.params": ("cusolverDn", "create_params", None),
    "cublas": ("cublas", "create", "set_stream"),
}


def _handle(kind: str, ordinal: int) -> int:
    key = (kind, ordinal)
    h = _HANDLES.handles.get(key)
    if h is None:
        from .device import bind_thread

        bind_thread(ordinal)
        lib, create, _ = _KINDS[kind]
        h = _HANDLES.handles[key] = call(lib, create)
    return h


def solver_handle(ordinal: int, stream: int) -> int:
    """This thread's cuSOLVER dense handle for device ``ordinal``, bound to ``stream``."""
    h = _handle("cusolverDn", ordinal)
    call("cusolverDn", "set_stream", h, int(stream))
    return h


def solver_params(ordinal: int) -> int:
    """This thread's ``cusolverDnParams`` for device ``ordinal`` (default algorithms)."""
    return _handle("cusolverDn.params", ordinal)


def blas_handle(ordinal: int, stream: int) -> int:
    """This thread's cuBLAS handle for device ``ordinal``, bound to ``stream``."""
    h = _handle("cublas", ordinal)
    call("cublas", "set_stream", h, int(stream))
    return h


def _status_name(e: BaseException) -> str:
    status = getattr(e, "status", None)
    name = getattr(status, "name", None)
    return str(name or status or e)


def call(lib: str, fn: str, *args):
    """``nvmath.bindings.<lib>.<fn>(*args)``, a failure status raised as a typed error."""
    mod = library(lib)
    try:
        return getattr(mod, fn)(*args)
    except Exception as e:
        if _is_library_failure(e):
            raise _typed(lib, fn, e) from None
        raise


def _is_library_failure(e: BaseException) -> bool:
    """nvmath raises cuSOLVERError / cuBLASError / cuFFTError for a failed status, and OSError /
    RuntimeError ("... not found") when the shared library cannot be loaded."""
    if type(e).__name__.lower().startswith("cu") or isinstance(e, OSError):
        return True
    text = str(e).lower()
    return isinstance(e, RuntimeError) and ("not found" in text or "symbol" in text)


def _typed(lib: str, fn: str, e: BaseException) -> BaracudaError:
    name = _status_name(e).upper()
    where = f"{lib}.{fn}"
    if isinstance(e, (OSError, ImportError)) or "NOT FOUND" in name or "SYMBOL" in name:
        return UnsupportedError(f"{where}: the vendor library could not be loaded ({e}); "
                                f"{INSTALL_HINT}")
    if "ALLOC" in name:
        return DeviceOutOfMemoryError(0, -1, f"{where}: {name}")
    if "NOT_SUPPORTED" in name or "ARCH_MISMATCH" in name:
        return UnsupportedError(f"{where}: {name}")
    if "INVALID_VALUE" in name or "INVALID_SIZE" in name or "INVALID_TYPE" in name:
        return InvalidProblemError(f"{where}: {name} (an argument the plan passed was rejected)")
    return VendorError(where, name)


def data_type(dt: DType) -> int:
    """The ``cudaDataType`` of ``dt``; UnsupportedError naming the wired dtypes otherwise."""
    try:
        return CUDA_DATA_TYPE[dt]
    except KeyError:
        raise UnsupportedError(f"dtype {dt.name} has no vendor backend; wired: "
                               f"{', '.join(d.name for d in VENDOR_DTYPES)}") from None
