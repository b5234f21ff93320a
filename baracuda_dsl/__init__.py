"""baracuda-dsl: GPU kernels for machine learning in CuTe DSL, behind a Plan API.

Layers (ARCHITECTURE.md): ``array_api`` (the namespace) → ``baracuda_dsl.ops.<family>``
(Descriptor → Plan.select → run; each family's pure-Python kernel specs and CuTe DSL kernels beside
its plans) → ``baracuda_dsl.jit`` (per-SKU compile, on-disk cubin cache) →
``baracuda_dsl.runtime`` (cuda.core devices, streams, memory, module loading and launches).
Importing this package needs neither a GPU nor the DSL.
"""

from . import dtypes
from ._version import __version__
from .dtypes import (FP4, DType, bfloat16, bool_, complex64, complex128, float8_e4m3, float8_e5m2,
                     float16, float32, float64, int8, int16, int32, int64, uint8, uint16, uint32,
                     uint64)
from .errors import (BaracudaError, BufferTooSmallError, CompileError, DeviceMismatchError,
                     DeviceOutOfMemoryError, DriverError, InvalidProblemError,
                     KernelNotCachedError,
                     MisalignedOperandError, NoDeviceError, UnsupportedError,
                     WorkspaceTooSmallError)
from .runtime.vendor import (LinAlgError, NoConvergenceError, NotPositiveDefiniteError,
                             SingularMatrixError, VendorError)
from .ops import PUBLIC as _ops_public
from .ops import *  # noqa: F401,F403  (every family's Descriptors, Args and Plans)
from .tensor import MAX_RANK, TensorView, as_view
from .vocabulary import (ArchSku, BackendKind, KernelSku, OpCategory, PlanPreference,
                         PrecisionGuarantee, Workspace)

f16, bf16, f32, f64 = float16, bfloat16, float32, float64

__all__ = [
    "__version__", "dtypes", "DType", "FP4", "bool_", "int8", "int16", "int32", "int64", "uint8",
    "uint16", "uint32", "uint64", "float16", "bfloat16", "float32", "float64", "float8_e4m3",
    "float8_e5m2", "complex64", "complex128", "f16", "bf16", "f32", "f64",
    "BaracudaError", "UnsupportedError", "InvalidProblemError", "DeviceMismatchError",
    "MisalignedOperandError", "BufferTooSmallError", "WorkspaceTooSmallError",
    "KernelNotCachedError", "CompileError", "DriverError", "NoDeviceError",
    "DeviceOutOfMemoryError", "VendorError", "LinAlgError", "NotPositiveDefiniteError",
    "SingularMatrixError", "NoConvergenceError",
    "TensorView", "as_view", "MAX_RANK",
    "ArchSku", "BackendKind", "OpCategory", "KernelSku", "PrecisionGuarantee", "PlanPreference",
    "Workspace",
] + list(_ops_public)
