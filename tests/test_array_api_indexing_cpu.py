"""Host-side logic of the manipulation / indexing namespace (no GPU): pad-width forms and the
advanced-index detection."""

import pytest

from array_api._indexing_functions import is_advanced
from array_api._layout_extensions import _pairs


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
