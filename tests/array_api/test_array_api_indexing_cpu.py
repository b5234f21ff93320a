"""Host-side logic of the manipulation / indexing namespace (no GPU): pad-width forms and the
advanced-index detection."""

import numpy as np
import pytest

from array_api._array_object import is_advanced
from array_api._shape_extensions import _pairs


class _Shape:
    def __init__(self, ndim):
        self.ndim = ndim


def test_pad_forms():
    x = _Shape(3)
    assert _pairs(x, (1, 2)) == ((0, 0), (0, 0), (1, 2))
    assert _pairs(x, (1, 2, 3, 4)) == ((0, 0), (3, 4), (1, 2))
    assert _pairs(x, ((1, 2),)) == ((1, 2),) * 3
    assert _pairs(x, ((1, 2), (0, 0), (3, 3))) == ((1, 2), (0, 0), (3, 3))
    assert _pairs(x, 2) == ((2, 2),) * 3
    with pytest.raises(ValueError):
        _pairs(x, (1, 2, 3))
    with pytest.raises(ValueError):
        _pairs(x, (1,) * 8)
    with pytest.raises(ValueError):
        _pairs(x, ((1, 2), (3, 4)))


def test_is_advanced():
    assert not is_advanced((slice(None), 3, None, Ellipsis))
    assert is_advanced(True)
    assert is_advanced((slice(None), False))


def _fake(shape, dtype, device=0):
    import array_api as xp
    from baracuda_dsl.tensor import contiguous_strides

    return xp.Array._new(1 << 20, shape, contiguous_strides(shape), dtype, xp.Device(device), None)


def test_assignment_values_and_masked_assign(monkeypatch):
    """x[mask] = value: the value rules (those of basic __setitem__) and the one in-place
    ``where`` launch, on fake arrays (nothing touches device memory)."""
    import array_api as xp
    from array_api import _dispatch
    from array_api._indexing_functions import _assign_value, _masked_assign
    from baracuda_dsl.errors import DeviceMismatchError

    x = _fake((4, 3), xp.float32)
    assert _assign_value(x, 2) == 2.0 and type(_assign_value(x, 2)) is float
    assert _assign_value(x, np.float64(0.5)) == 0.5
    v = _fake((), xp.float32)
    assert _assign_value(x, v) is v
    with pytest.raises(TypeError):
        _assign_value(x, 1j)
    with pytest.raises(TypeError):
        _assign_value(x, _fake((), xp.float64))          # float64 does not cast to float32
    with pytest.raises(DeviceMismatchError):
        _assign_value(x, _fake((), xp.float32, device=1))
    i = _fake((3,), xp.int8)
    with pytest.raises(TypeError):
        _assign_value(i, 1.5)
    with pytest.raises(OverflowError):
        _assign_value(i, 200)
    calls = []
    monkeypatch.setattr(_dispatch, "apply", lambda op, ops, dt, outs=None, shape=None:
                        calls.append((op, ops, dt, outs, shape)))
    m = _fake((4,), xp.bool)
    _masked_assign(x, m, 7)
    op, ops, dt, outs, shape = calls[-1]
    assert op == "where" and dt == xp.float32 and outs == [x] and shape == (4, 3)
    assert ops[0].shape == (4, 3) and ops[0].strides == (1, 0) and ops[1] == 7.0
    assert ops[2] is x
    _masked_assign(x, m, v)                                # 0-D array value, broadcast view
    assert calls[-1][1][1].shape == (4, 3) and calls[-1][1][1].strides == (0, 0)
    with pytest.raises(IndexError):
        _masked_assign(x, _fake((3,), xp.bool), 1.0)
    n = len(calls)
    _masked_assign(x, _fake((0,), xp.bool), 1.0)           # selects nothing: no launch
    assert len(calls) == n
