"""How namespace functions drive the Plans: one cached ``select`` per descriptor, workspaces from
the stream-ordered pool per call, the out-of-range index check, and the argument checks
(``check_array``, ``check_operand``, ``check_index_array``) the function modules share.

Index checking: every namespace function that takes integer indices (``take``,
``take_along_axis``, integer-array ``__getitem__`` / ``__setitem__``, ``gather``, ``scatter``,
``index_select``, ``index_add``, ``one_hot``, ``embedding``, ``segment_*``) hands the plan a
4-byte device status word; the kernels never touch memory outside the arrays (a bad index reads
zero / is skipped) and set the word when they meet an index outside ``[-n, n)``.  After the launch
the word is read back (one 4-byte device-to-host copy, which waits for the stream: ~10-20 µs), and
a set word raises ``IndexError``.  ``set_index_checking(False)`` skips the read (bad indices then
give zeros / skipped writes silently, like the plans themselves).
"""

from __future__ import annotations

import functools

import numpy as np

from baracuda_dsl.runtime.stream import AMBIENT
from baracuda_dsl.runtime.trace import STATE
from baracuda_dsl.vocabulary import Workspace

from . import _copy
from . import _device as _dev
from . import _dispatch
from . import _dtypes as _dt
from ._array_object import Array
from ._device import as_device

#: ``INDEX_CHECKING[0]``: the out-of-range index check is on (``set_index_checking``)
INDEX_CHECKING = [True]


def set_index_checking(enabled: bool) -> bool:
    """Turn the namespace's out-of-range index check on or off (extension); returns the old
    setting.  On (default): IndexError after any call that met a bad index (one device sync)."""
    old = INDEX_CHECKING[0]
    INDEX_CHECKING[0] = bool(enabled)
    return old


def check_array(x, name: str) -> None:
    """TypeError ``'<name> must be an array_api Array'`` unless ``x`` is an Array."""
    if not isinstance(x, Array):
        raise TypeError(f"{name} must be an array_api Array, got {type(x).__name__}")


def check_operand(x, fn: str) -> None:
    """TypeError ``'<fn>: expected an array_api Array'`` unless ``x`` is an Array."""
    if not isinstance(x, Array):
        raise TypeError(f"{fn}: expected an array_api Array, got {type(x).__name__}")


def check_index_array(idx, name: str) -> None:
    """``check_array`` plus TypeError unless ``idx`` has an integer dtype."""
    check_array(idx, name)
    if not _dt.isdtype(idx.dtype, "integral"):
        raise TypeError(f"{name} must have an integer dtype, got {idx.dtype.name}")


def index_dtype_array(idx: Array) -> Array:
    """``idx`` as int32 / int64 (the index dtypes the kernels read); other ints are converted."""
    if idx.dtype in (_dt.int32, _dt.int64):
        return idx
    return _dispatch.cast(idx, _dt.int64)


@functools.lru_cache(maxsize=512)
def select(plan_cls, desc):
    """``plan_cls.select(desc)``, once per descriptor."""
    return plan_cls.select(desc)


def workspace(plan, device):
    """(Workspace or None, keep-alive buffer) for ``plan`` from the pool on ``device`` (a Device,
    or an Array whose device is used)."""
    if isinstance(device, Array):
        device = device.device
    n = plan.workspace_size()
    if not n:
        return None, None
    buf = Array._empty((n,), _dt.uint8, device)
    return Workspace(buf._ptr, n, buf), buf


def run(plan, args, device) -> None:
    """Run ``plan`` with a pool workspace of the size it asks for (``device``: a Device or an
    Array on it)."""
    ws, _keep = workspace(plan, device)
    plan.run(args, workspace=ws)


def status_word(device):
    """A zeroed int32 device word for a plan's ``status`` (None when checking is off)."""
    if not INDEX_CHECKING[0] or AMBIENT.arena is not None:
        return None                # checking off, or a CUDA graph capture (no readback there)
    status = Array._empty((1,), _dt.int32, as_device(device))
    _copy.fill(status, 0)
    return status


def raise_if_bad(status, what: str) -> None:
    """IndexError when a kernel flagged an out-of-range index in ``status`` (a traced call
    records the check, so its replays read the word back too)."""
    if status is None:
        return
    t = STATE.tracer
    if t is not None:
        t.check(check_status_word, status._ptr, what)
    check_status_word(status._ptr, what)


def check_status_word(ptr: int, what: str) -> None:
    """Read the int32 status word at ``ptr`` (waits for the stream); IndexError when set."""
    word = np.zeros(1, np.int32)
    _dev.read_back(word, ptr)
    if int(word[0]):
        raise IndexError(f"{what}: an index is out of range (valid: -n <= i < n for an axis of "
                         f"size n)")


def run_checked(plan, make_args, device, what: str) -> None:
    """Run ``plan`` with ``make_args(status)`` and raise IndexError if it met a bad index."""
    st = status_word(device)
    run(plan, make_args(st), device)
    raise_if_bad(st, what)
