"""Typed errors raised by baracuda-dsl.

Every validation failure is raised *before* any kernel launch.  The hierarchy
mirrors the Rust crate's ``Error`` enum; each class also derives from the
closest Python built-in so that array-API consumers catching ``TypeError`` /
``ValueError`` keep working.
"""

from __future__ import annotations


class BaracudaError(Exception):
    """Root of every error raised by this package."""


class UnsupportedError(BaracudaError, NotImplementedError):
    """The op / dtype / arch / layout combination is not wired.

    The message always names what *is* wired.
    """


class InvalidProblemError(BaracudaError, ValueError):
    """The problem description is malformed (negative extents, rank > 8, shape mismatch, ...)."""


class DeviceMismatchError(InvalidProblemError):
    """An operand lives on the wrong device (host memory, or another GPU)."""


class MisalignedOperandError(InvalidProblemError):
    """A device pointer or stride does not meet the alignment the chosen kernel needs."""


class BufferTooSmallError(InvalidProblemError):
    """A caller buffer holds fewer bytes than the view needs."""

    def __init__(self, needed: int, got: int, what: str = "buffer"):
        self.needed = int(needed)
        self.got = int(got)
        super().__init__(f"{what} too small: needs {self.needed} bytes, got {self.got}")


class WorkspaceTooSmallError(BaracudaError, ValueError):
    """The workspace passed to ``Plan.run`` is smaller than ``plan.workspace_size()``."""

    def __init__(self, needed: int, got: int):
        self.needed = int(needed)
        self.got = int(got)
        super().__init__(f"workspace too small: needs {self.needed} bytes, got {self.got}")


class KernelNotCachedError(BaracudaError, RuntimeError):
    """A kernel SKU is not in the on-disk cache and JIT is disabled (``BARACUDA_DSL_JIT=0``)."""

    def __init__(self, sku_key: str, arch: str, cache_dir: str, family: str,
                 reason: str = "JIT is disabled (BARACUDA_DSL_JIT=0)"):
        self.sku_key = sku_key
        self.arch = arch
        super().__init__(
            f"kernel {sku_key} for {arch} is not in the cache at {cache_dir} and {reason}. "
            f"Build it with:\n"
            f"    python -m baracuda_dsl prebuild --arch {arch} --ops {family} --cache-dir {cache_dir}"
        )


class CompileError(BaracudaError, RuntimeError):
    """CuTe DSL failed to compile a kernel SKU."""


class DriverError(BaracudaError, RuntimeError):
    """A CUDA driver call failed."""

    def __init__(self, call: str, status: object):
        self.call = call
        self.status = status
        super().__init__(f"{call} failed: {status}")


class DeviceOutOfMemoryError(BaracudaError, MemoryError):
    """A device allocation could not be satisfied, even after the cached free blocks were
    handed back to the driver and the allocation retried once."""

    def __init__(self, nbytes: int, ordinal: int, detail: str = ""):
        self.nbytes = nbytes
        self.ordinal = ordinal
        super().__init__(f"out of memory on CUDA device {ordinal}: could not allocate "
                         f"{nbytes} bytes ({nbytes / 2**30:.2f} GiB) after releasing cached "
                         f"blocks{': ' + detail if detail else ''}")


class NoDeviceError(BaracudaError, RuntimeError):
    """No CUDA device / driver is available on this machine."""
