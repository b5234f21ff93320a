"""The optional int32 ``status`` word that Args of several families carry: the kernels store a
nonzero code into its first element when they meet a bad index / target / position (they never
clear it: the caller zeroes it before the run)."""

from __future__ import annotations

from ..dtypes import int32
from ..errors import InvalidProblemError
from ..plan import view_arg


def status_view(obj, device):
    """The optional ``status`` operand as an int32 view on ``device`` (None when ``obj`` is
    None); InvalidProblemError when it holds no element."""
    s = view_arg(obj, "status", optional=True, dtype=int32, device=device)
    if s is not None and s.numel < 1:
        raise InvalidProblemError("status: needs at least one int32 element")
    return s


def status_ptr(obj, device):
    """(device pointer, 1) of the optional ``status`` operand, or (0, 0) when it is absent —
    the (pointer, has_status) pair the kernels take; checked as :func:`status_view`."""
    s = status_view(obj, device)
    return (0, 0) if s is None else (s.ptr, 1)


__all__ = ["status_view", "status_ptr"]
