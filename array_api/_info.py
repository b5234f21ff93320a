"""``__array_namespace_info__``: capabilities, devices and default / supported dtypes."""

from __future__ import annotations

from . import _dtypes as _dt
from ._device import Device, as_device


class __array_namespace_info__:
    """Inspection API (array API 2023.12)."""

    def capabilities(self):
        return {"boolean indexing": False, "data-dependent shapes": False,
                "max dimensions": 8}

    def default_device(self):
        return as_device(None)

    def devices(self):
        from baracuda_dsl.runtime.device import device_count

        return [Device(i) for i in range(device_count())]

    def default_dtypes(self, *, device=None):
        return {"real floating": _dt.float32, "complex floating": _dt.complex64,
                "integral": _dt.int64, "indexing": _dt.int64}

    def dtypes(self, *, device=None, kind=None):
        if kind is None:
            sel = _dt._boolean_dtypes + _dt._numeric_dtypes
        else:
            sel = tuple(d for d in _dt._boolean_dtypes + _dt._numeric_dtypes
                        if _dt.isdtype(d, kind))
        return {d.name: d for d in sel}
