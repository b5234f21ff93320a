"""Data type functions of the standard: ``astype``, ``can_cast``, ``result_type``, ``isdtype``,
``finfo``, ``iinfo``.  Promotion rules live in ``_promotion`` (the standard's lattice plus the
float16 / bfloat16 extensions); casts run on the device through ``_dispatch.cast``."""

from __future__ import annotations

import builtins

from baracuda_dsl.dtypes import DType
from baracuda_dsl.errors import UnsupportedError

from . import _dispatch
from . import _dtypes as _dt
from . import _promotion
from ._array_object import Array
from ._device import as_device
from ._dtypes import finfo, iinfo, isdtype  # noqa: F401  (re-exported)
from ._plans import check_operand
from ._records import recorded

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type"]


def _dtype_of(x, what: str) -> DType:
    """The dtype of an Array or a dtype (TypeError for anything else)."""
    if isinstance(x, DType):
        return x
    if isinstance(x, Array):
        return x.dtype
    raise TypeError(f"{what}: expected an array_api Array or dtype, got {type(x).__name__}")


@recorded
def astype(x, dtype, /, *, copy: builtins.bool = True, device=None):
    """``x`` converted to ``dtype`` (a new dense array; ``x`` itself when the dtype already
    matches and ``copy=False``).  Every dtype pair is wired except complex → non-complex, which
    the standard leaves undefined (TypeError, as array-api-strict; use ``real``/``abs``).
    ``device`` must be x's device (cross-device copies are not wired: UnsupportedError)."""
    check_operand(x, "astype")
    dt = _dt.as_dtype(dtype)
    if x.dtype.kind == "c" and dt.kind != "c":
        raise TypeError(f"astype: casting {x.dtype.name} to {dt.name} is not permitted by the "
                        f"standard (take real(x) or abs(x) first)")
    if device is not None and as_device(device) != x.device:
        raise UnsupportedError(f"astype: cross-device copies are not wired ({x.device} → "
                               f"{as_device(device)})")
    if dt == x.dtype and not copy:
        return x
    return _dispatch.cast(x, dt)


def can_cast(from_, to, /) -> builtins.bool:
    """True when ``from_`` (an Array or dtype) converts to dtype ``to`` per the standard's
    promotion rules (``result_type(from_, to) == to``): no bool → number, no int → float, no
    float → int, no signed ↔ unsigned narrowing."""
    f = _dtype_of(from_, "can_cast")
    if not isinstance(to, DType):
        raise TypeError(f"can_cast: 'to' must be a dtype, got {type(to).__name__}")
    return _promotion.can_cast(f, to)


def result_type(*arrays_and_dtypes) -> DType:
    """The dtype that results from promoting Arrays, dtypes and Python scalars (2024.12: at least
    one Array or dtype; scalars take the array dtype where kinds mix).  TypeError where the
    standard defines no promotion."""
    return _promotion.result_type(*arrays_and_dtypes)
