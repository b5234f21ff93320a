"""``__array_namespace_info__()``: the standard's inspection API (2023.12+, 2024.12 capabilities).

``xp.__array_namespace_info__()`` returns an info object (as numpy's, the "function" is the
class itself) with ``capabilities() default_device() devices() default_dtypes() dtypes()``.
The dtypes reported are the standard's 13 plus the float16 / bfloat16 extensions (the fp8
storage types are left out: they do not promote and most functions do not take them).
"""

from __future__ import annotations

from baracuda_dsl.tensor import MAX_RANK

from . import _dtypes as _dt
from ._device import Device, as_device

#: the standard's 13 dtypes (float16 / bfloat16 are extensions usable everywhere, but the
#: inspection API lists only what the standard defines)
_DTYPES = tuple(d for d in _dt.BOOLEAN_DTYPES + _dt.NUMERIC_DTYPES
                if d not in (_dt.float16, _dt.bfloat16))


def _check_device(device) -> None:
    if device is not None:
        as_device(device)  # raises for host / unknown devices


class __array_namespace_info__:
    """Inspection namespace of ``array_api`` (CUDA devices only)."""

    __slots__ = ()

    def capabilities(self) -> dict:
        """What this namespace supports: boolean-mask indexing (``x[mask]``, ``x[mask] = v``),
        functions whose output shape depends on data (``nonzero``, ``unique_*``, boolean
        indexing) and at most ``MAX_RANK`` (8) dimensions."""
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": MAX_RANK}

    def extensions(self) -> list:
        """The standard's extensions this namespace implements, complete: ``['fft', 'linalg']``
        (``xp.fft``, ``xp.linalg``)."""
        return ["fft", "linalg"]

    def default_device(self) -> Device:
        """The current CUDA device (``Device(n)``)."""
        return as_device(None)

    def devices(self) -> list:
        """Every CUDA device of this process (an empty list when there is no driver)."""
        try:
            from baracuda_dsl.runtime.device import device_count

            return [Device(i) for i in range(device_count())]
        except Exception:
            return []

    def default_dtypes(self, *, device=None) -> dict:
        """``{'real floating': float32, 'complex floating': complex64, 'integral': int64,
        'indexing': int64}`` on every device."""
        _check_device(device)
        return {"real floating": _dt.float32, "complex floating": _dt.complex64,
                "integral": _dt.int64, "indexing": _dt.int64}

    def dtypes(self, *, device=None, kind=None) -> dict:
        """``{name: dtype}`` of the dtypes of ``kind`` (None = all; a kind name such as
        ``'real floating'``, a dtype, or a tuple of those, as ``isdtype``)."""
        _check_device(device)
        try:
            hit = _BY_KIND.get(kind)
        except TypeError:            # an unhashable kind: isdtype raises the standard's error
            hit = None
        if hit is None:
            hit = {d.name: d for d in _DTYPES if kind is None or _dt.isdtype(d, kind)}
            if len(_BY_KIND) < 256:
                _BY_KIND[kind] = hit
        return dict(hit)            # a fresh dict: callers may change theirs


#: dtypes() by kind (array-API consumers ask for the same kinds again and again)
_BY_KIND: dict = {}
