"""What every torch adapter op shares: the Plan cache (one selected Plan per descriptor), torch's
current stream as the launch stream, and workspaces from torch's caching allocator."""

from __future__ import annotations

import functools

import torch



@functools.lru_cache(maxsize=4096)
def plan(plan_cls, desc, pref=None):
    """``plan_cls.select(desc, pref)``, once per (class, descriptor, preference)."""
    return plan_cls.select(desc) if pref is None else plan_cls.select(desc, pref)


def stream() -> int:
    """The raw handle of torch's current CUDA stream (the ops run where torch's would)."""
    return torch.cuda.current_stream().cuda_stream


def workspace(p, device):
    """``p``'s workspace as a uint8 tensor from torch's caching allocator (None when it needs
    none)."""
    n = p.workspace_size()
    return torch.empty(n, dtype=torch.uint8, device=device) if n else None


def run(p, args, device) -> None:
    """Run plan ``p`` on torch's current stream with a workspace from torch's allocator."""
    p.run(args, stream=stream(), workspace=workspace(p, device))


def stats_dtype(t: torch.Tensor):
    """The torch dtype of saved row statistics of ``t``'s dtype (float64 for float64, else
    float32: the row-norm plans' rule)."""
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def rows_of(shape, normalized_ndim: int) -> int:
    """The number of rows (product of the leading dims) of a row-wise op."""
    n = 1
    for s in tuple(shape)[:len(shape) - normalized_ndim]:
        n *= int(s)
    return n


__all__ = ["plan", "stream", "workspace", "run", "stats_dtype", "rows_of"]
