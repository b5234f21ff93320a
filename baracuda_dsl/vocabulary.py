"""The Plan vocabulary shared by every op family (Python counterparts of the Rust types).

``ArchSku`` (which GPU generation a kernel is built for), ``BackendKind``, ``OpCategory``,
``PrecisionGuarantee``, ``KernelSku`` (hashable identity of the kernel a plan picked),
``PlanPreference`` and ``Workspace`` (caller-owned scratch memory; plans never allocate).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional, Tuple

from .dtypes import DType
from .errors import InvalidProblemError, UnsupportedError


class ArchSku(str, enum.Enum):
    """GPU generation a cubin is compiled for. A cubin runs on GPUs of the same major compute
    capability and equal or newer minor one, so sm80 serves sm86/sm87 as well; sm90a is Hopper
    with its arch-specific instructions (wgmma, setmaxnreg)."""

    SM80 = "sm80"
    SM89 = "sm89"
    SM90A = "sm90a"

    @property
    def cute_arch(self) -> str:
        """The ``CUTE_DSL_ARCH`` spelling (``sm_90a``)."""
        return {"sm80": "sm_80", "sm89": "sm_89", "sm90a": "sm_90a"}[self.value]

    @property
    def compute_capability(self) -> Tuple[int, int]:
        return {"sm80": (8, 0), "sm89": (8, 9), "sm90a": (9, 0)}[self.value]

    @classmethod
    def parse(cls, text: str) -> "ArchSku":
        """Accepts ``sm80``, ``sm_80``, ``80``, ``sm90``, ``sm_90a`` ..."""
        t = text.strip().lower().replace("_", "")
        if not t.startswith("sm"):
            t = "sm" + t
        if t == "sm90":
            t = "sm90a"
        for a in cls:
            if a.value == t:
                return a
        raise UnsupportedError(f"unknown arch {text!r}; wired: {[a.value for a in cls]}")

    @classmethod
    def for_compute_capability(cls, major: int, minor: int) -> "ArchSku":
        """The newest SKU whose cubins run on a device of this compute capability."""
        if major == 9:
            return cls.SM90A
        if major == 8:
            return cls.SM89 if minor >= 9 else cls.SM80
        raise UnsupportedError(
            f"compute capability {major}.{minor} has no kernel SKUs; wired: sm80 (8.0-8.7), "
            f"sm89 (8.9), sm90a (9.0)"
        )


class BackendKind(str, enum.Enum):
    """Where a plan's work runs: a CuTe DSL kernel of this package, a vendor library, or nothing
    (a no-op plan, e.g. an empty problem)."""

    CUTE_DSL = "cute_dsl"
    VENDOR = "vendor"
    NONE = "none"


class OpCategory(str, enum.Enum):
    """Op families (one per row of the op table in the docs)."""

    GEMM = "gemm"
    ELEMENTWISE = "elementwise"
    SHAPE = "shape"
    REDUCTION = "reduction"
    SCAN = "scan"
    SOFTMAX = "softmax"
    NORMALIZATION = "normalization"
    LOSS = "loss"
    RANDOM = "random"
    ATTENTION = "attention"
    LINALG = "linalg"
    CONV = "conv"
    POOLING = "pooling"
    FFT = "fft"
    INDEXING = "indexing"
    EMBEDDING = "embedding"
    SEGMENT = "segment"
    QUANTIZATION = "quantization"
    MOE = "moe"
    IMAGE = "image"
    SORT = "sort"


@dataclass(frozen=True)
class PrecisionGuarantee:
    """Numerical contract of a kernel: the precision its math runs in, the accumulator type,
    whether reruns on the same GPU are bit-identical, and whether the result is independent of
    scheduling (no float atomics)."""

    math_precision: DType
    accumulator: DType
    bit_stable_on_same_hardware: bool = True
    deterministic: bool = True


@dataclass(frozen=True)
class KernelSku:
    """Hashable identity of the kernel a plan picked: family, op, element types, layout/epilogue
    tags, the arch it was built for, the backend, its precision contract, the template and the
    compile-time specialisation knobs (never shapes)."""

    category: OpCategory
    op: str
    element: DType
    arch: ArchSku
    backend: BackendKind
    precision_guarantee: PrecisionGuarantee
    aux_element: Optional[DType] = None
    layout: Optional[str] = None
    epilogue: Optional[str] = None
    template: Optional[str] = None
    knobs: Tuple[Tuple[str, object], ...] = ()

    def __str__(self) -> str:
        kn = ",".join(f"{k}={v}" for k, v in self.knobs)
        return (f"{self.category.value}/{self.op}[{self.element.short}] {self.backend.value}:"
                f"{self.template or '-'}({kn}) @{self.arch.value}")


@dataclass(frozen=True)
class PlanPreference:
    """What the caller allows a plan to pick: a workspace budget (None = unbounded), whether
    Hopper-only (sm90a) kernels may be used, a preferred backend, an arch override (compile /
    select for that arch instead of the current device's), and tuning overrides.

    ``tuning`` holds frozen per-family tuning records (``SoftmaxTuning``, ``GemmTuning``, ...:
    each family's heuristics as data — cluster ladders, forced tiles or split counts); a plan
    reads its family's with :meth:`tuning_for` and falls back to the record's defaults.  One
    record or a tuple of them; at most one per type."""

    max_workspace_bytes: Optional[int] = None
    allow_sm90a: bool = True
    prefer_backend: Optional[BackendKind] = None
    arch: Optional[ArchSku] = None
    tuning: Tuple[object, ...] = ()

    def __post_init__(self):
        t = self.tuning
        if not isinstance(t, tuple):
            t = (t,)
        kinds = [type(x) for x in t]
        if len(set(kinds)) != len(kinds):
            raise InvalidProblemError("PlanPreference.tuning: at most one record per tuning type")
        for x in t:
            try:
                hash(x)
            except TypeError:
                raise InvalidProblemError(f"PlanPreference.tuning: {type(x).__name__} is not a "
                                          f"frozen (hashable) record") from None
        object.__setattr__(self, "tuning", t)

    def tuning_for(self, kind: type):
        """The ``kind`` tuning record given in :attr:`tuning`, else ``kind()`` (the defaults)."""
        for x in self.tuning:
            if type(x) is kind:
                return x
        return kind()


@dataclass(frozen=True)
class Workspace:
    """Caller-owned device scratch memory: a device pointer and its size in bytes.
    ``Workspace.none()`` is the empty workspace. Build one from any object with a ``.ptr`` /
    ``.handle`` and ``.size`` (a ``cuda.core.Buffer``) via :meth:`from_buffer`."""

    ptr: int = 0
    nbytes: int = 0
    owner: object = field(default=None, compare=False, repr=False)

    @classmethod
    def none(cls) -> "Workspace":
        return cls(0, 0)

    @classmethod
    def from_buffer(cls, buf) -> "Workspace":
        """A Workspace over ``buf``: a Workspace, a ``cuda.core.Buffer`` (``.handle``/``.size``),
        any object with ``.ptr``/``.nbytes``, or a CUDA tensor (torch: ``data_ptr()``, cupy:
        ``.data.ptr``).  The workspace keeps ``buf`` alive."""
        if isinstance(buf, Workspace):
            return buf
        if hasattr(buf, "data_ptr") and hasattr(buf, "element_size"):  # torch.Tensor
            if not buf.is_cuda:
                from .errors import DeviceMismatchError

                raise DeviceMismatchError("workspace must be device memory (a CUDA tensor)")
            return cls(int(buf.data_ptr()), int(buf.numel() * buf.element_size()), buf)
        data = getattr(buf, "data", None)
        if data is not None and hasattr(data, "ptr") and hasattr(buf, "nbytes"):  # cupy
            return cls(int(data.ptr), int(buf.nbytes), buf)
        ptr = getattr(buf, "ptr", None)
        if ptr is None:
            ptr = getattr(buf, "handle", 0)
        size = getattr(buf, "size", None)
        if size is None:
            size = getattr(buf, "nbytes", 0)
        return cls(int(ptr), int(size), buf)
