"""What every torch adapter op shares: the Plan cache (one selected Plan per descriptor), torch's
current stream as the launch stream, workspaces from torch's caching allocator, and
:func:`autograd_pair` — one forward / backward pair registered as ``torch.library`` custom ops
(what ``torch.compile`` traces) and as a plain ``torch.autograd.Function`` over the same
functions (what eager mode runs: the custom-op dispatcher adds tens of µs of host time per
call, more than the kernels' own launch path)."""

from __future__ import annotations

import functools

import torch

from ..plan import prod


@functools.lru_cache(maxsize=4096)
def plan(plan_cls, desc, pref=None):
    """``plan_cls.select(desc, pref)``, once per (class, descriptor, preference)."""
    return plan_cls.select(desc) if pref is None else plan_cls.select(desc, pref)


_BY_KEY: dict = {}


def plan_by_key(key: tuple, plan_cls, make_desc):
    """The selected Plan for a cheap hashable ``key`` (op name, extents, torch dtypes, flags):
    ``plan(plan_cls, make_desc())`` on the first call, a dict lookup after (the hot path skips
    building and validating the Descriptor)."""
    p = _BY_KEY.get(key)
    if p is None:
        if len(_BY_KEY) >= 4096:                    # shapes keep changing: start over
            _BY_KEY.clear()
        p = _BY_KEY[key] = plan(plan_cls, make_desc())
    return p


_RAW_STREAM = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def stream(device=None) -> int:
    """The raw handle of torch's current CUDA stream on ``device`` (a torch.device; None: the
    current device) — the ops run where torch's would."""
    if _RAW_STREAM is not None:
        idx = device.index if device is not None and device.index is not None \
            else torch.cuda.current_device()
        return _RAW_STREAM(idx)
    return torch.cuda.current_stream(device).cuda_stream


def workspace(p, device):
    """``p``'s workspace as a uint8 tensor from torch's caching allocator (None when it needs
    none)."""
    n = p.workspace_size()
    return torch.empty(n, dtype=torch.uint8, device=device) if n else None


def run(p, args, device) -> None:
    """Run plan ``p`` on torch's current stream with a workspace from torch's allocator."""
    p.run(args, stream=stream(device), workspace=workspace(p, device))


def stats_dtype(t: torch.Tensor):
    """The torch dtype of saved row statistics of ``t``'s dtype (float64 for float64, else
    float32: the row-norm plans' rule)."""
    return torch.float64 if t.dtype == torch.float64 else torch.float32


def rows_of(shape, normalized_ndim: int) -> int:
    """The number of rows (product of the leading dims) of a row-wise op."""
    return prod(tuple(shape)[:len(shape) - normalized_ndim])


def autograd_pair(name: str, fw, fw_fake, bw, bw_fake, setup, backward):
    """Register ``baracuda::<name>`` over ``fw`` and ``baracuda::<name>_backward`` over ``bw``
    (each with its fake kernel), the forward's autograd as ``setup(ctx, inputs, output)`` and
    ``backward(ctx, bw_fn, *grads)``, and return ``(call, op, bw_op)``: ``call(*inputs)`` runs the
    custom op while torch.compile traces (no graph break) and, in eager mode, an
    autograd.Function that calls ``fw`` / ``setup`` / ``backward`` with ``bw`` directly — the
    same functions, without the dispatcher's per-call cost.  Unused outputs get zero gradients
    (materialised, as the custom op's autograd does)."""
    op = torch.library.custom_op(f"baracuda::{name}", fw, mutates_args=())
    op.register_fake(fw_fake)
    bw_op = torch.library.custom_op(f"baracuda::{name}_backward", bw, mutates_args=())
    bw_op.register_fake(bw_fake)
    op.register_autograd(lambda ctx, *grads: backward(ctx, bw_op, *grads), setup_context=setup)

    def forward(ctx, *inputs):
        out = fw(*inputs)
        setup(ctx, inputs, out)
        return out

    eager = type(f"{name}_eager", (torch.autograd.Function,), {
        "forward": staticmethod(forward),
        "backward": staticmethod(lambda ctx, *grads: backward(ctx, bw, *grads)),
        "__doc__": f"Eager autograd of baracuda::{name} (see autograd_pair)."})
    apply = eager.apply
    compiling = torch.compiler.is_compiling

    def call(*inputs):
        return op(*inputs) if compiling() else apply(*inputs)

    call.__name__ = call.__qualname__ = name
    return call, op, bw_op


__all__ = ["plan", "plan_by_key", "stream", "workspace", "run", "stats_dtype", "rows_of",
           "autograd_pair"]
