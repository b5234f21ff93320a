"""What every JAX adapter op shares: the Plan cache (one selected Plan per descriptor and
preference), the trace-time preference, and :func:`call` — one Plan run as a JAX operation
through ``jax.experimental.buffer_callback``.

How a Plan runs inside JAX: :func:`call` adds a ``buffer_callback`` to the traced program whose
results are the Plan's outputs (``jax.ShapeDtypeStruct`` each) plus, when the Plan needs
scratch, a uint8 workspace of ``plan.workspace_size()`` bytes that XLA allocates like any other
result (and then drops).  When XLA executes the program it hands the Python callback the
*device* buffers of the operands and results and an execution context carrying its CUDA
stream; the callback views each buffer (DLPack: pointer, shape, dtype, device ordinal — no copy)
and calls ``plan.run(args, stream=<XLA's stream>, workspace=<the scratch result>)``, so the
kernels are ordered with the rest of the XLA program.  The Plan is selected when the function
is traced (``jax.jit`` tracing, or each eager call), so unsupported dtypes / shapes raise the
Plan's typed errors (``baracuda_dsl.errors``) at trace time.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Callable, Optional, Sequence

import jax
import numpy as np
from jax.experimental.buffer_callback import buffer_callback

from .. import dtypes as _dt
from ..dlpack import capsule_tensor
from ..errors import DeviceMismatchError, InvalidProblemError
from ..plan import prod
from ..tensor import TensorView, contiguous_strides
from ..vocabulary import PlanPreference, Workspace

_KDL_CUDA_DEVICES = (2, 13)          # kDLCUDA, kDLCUDAManaged

_PREF = threading.local()


def preference() -> Optional[PlanPreference]:
    """The PlanPreference plans are selected with on this thread (None: the defaults, for the
    current device's arch)."""
    return getattr(_PREF, "pref", None)


@contextlib.contextmanager
def use_preference(pref: Optional[PlanPreference]):
    """Select the adapter's Plans with ``pref`` while tracing inside this block (e.g.
    ``PlanPreference(arch="sm90a")`` to trace / lower without a GPU, or tuning overrides).
    It applies when a function is traced: a ``jax.jit`` function already traced keeps the
    Plans it selected."""
    old = preference()
    _PREF.pref = pref
    try:
        yield pref
    finally:
        _PREF.pref = old


@functools.lru_cache(maxsize=4096)
def _select(plan_cls, desc, pref):
    return plan_cls.select(desc) if pref is None else plan_cls.select(desc, pref)


def plan(plan_cls, desc):
    """``plan_cls.select(desc, preference())``, once per (class, descriptor, preference)."""
    return _select(plan_cls, desc, preference())


def bdtype(dt):
    """The baracuda DType of a JAX / numpy dtype (ml_dtypes' bfloat16 included)."""
    return _dt.dtype(np.dtype(dt))


def stats_dtype(dt):
    """The numpy dtype of saved row statistics for value dtype ``dt`` (float64 for float64,
    else float32: the row plans' rule)."""
    return np.dtype(np.float64) if np.dtype(dt) == np.float64 else np.dtype(np.float32)


def rows_of(shape, normalized_ndim: int) -> int:
    """The number of rows (product of the leading dims) of a row-wise op."""
    return prod(tuple(shape)[:len(shape) - normalized_ndim])


def view(buf) -> TensorView:
    """A TensorView over an XLA FFI buffer (``jax.experimental.buffer_callback.Buffer``) through
    its DLPack capsule: dense row-major, the buffer's dtype and CUDA device ordinal.  Valid only
    while the callback runs (XLA owns the memory)."""
    cap = buf.__dlpack__()
    dl = capsule_tensor(cap)
    if dl is None:
        raise InvalidProblemError("buffer_callback buffer: __dlpack__ gave no DLPack capsule")
    if dl.device.device_type not in _KDL_CUDA_DEVICES:
        raise DeviceMismatchError(
            f"baracuda_dsl.jax ops run on CUDA devices; this buffer is on DLPack device type "
            f"{dl.device.device_type} (put the arrays on a GPU: jax.device_put(x, "
            f"jax.devices('gpu')[0]))")
    dt = _dt.from_dlpack_code(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes)
    shape = tuple(int(dl.shape[i]) for i in range(dl.ndim))
    ptr = (dl.data or 0) + dl.byte_offset
    return TensorView(ptr, shape, contiguous_strides(shape), dt, int(dl.device.device_id),
                      None, (buf, cap))


@functools.lru_cache(maxsize=4096)
def _launcher(p, build: Callable, n_out: int, ws: int):
    """The buffer_callback callback running plan ``p``; one function object per (plan, build,
    result count), so eager calls hit JAX's compile cache (the callback is a primitive
    parameter)."""

    def callback(ctx, outs, *ins):
        vi = [view(b) for b in ins]
        vo = [view(b) for b in outs]
        w = None
        if ws:
            wv = vo.pop()
            w = Workspace(wv.ptr, ws, wv)
        p.run(build(p.desc, vi, vo), stream=int(ctx.stream), workspace=w)

    callback.__name__ = f"baracuda_{type(p).__name__}"
    callback.__qualname__ = callback.__name__
    return callback


def _check_device(x) -> None:
    """Eager calls: a concrete array that is not on a GPU is a DeviceMismatchError now, rather
    than an error from inside the XLA program (traced values are checked when they run)."""
    if isinstance(x, jax.core.Tracer) or not hasattr(x, "devices"):
        return
    bad = [d for d in x.devices() if d.platform not in ("gpu", "cuda")]
    if bad:
        raise DeviceMismatchError(
            f"baracuda_dsl.jax ops run on CUDA devices; an operand is on {bad[0]} (put it on a "
            f"GPU: jax.device_put(x, jax.devices('gpu')[0]))")


def call(p, build: Callable, out_types: Sequence[jax.ShapeDtypeStruct], *inputs):
    """Run plan ``p`` as a JAX operation: ``inputs`` (JAX arrays or tracers, dense row-major)
    → a list of arrays of ``out_types``.  ``build(desc, in_views, out_views)`` returns the
    Plan's Args from TensorViews of the operands (in ``inputs`` order) and results (in
    ``out_types`` order).  Under ``jax.vmap`` the callback runs once per batch element
    (``vmap_method="sequential"``)."""
    for x in inputs:
        _check_device(x)
    ws = int(p.workspace_size())
    results = list(out_types)
    if ws:
        results.append(jax.ShapeDtypeStruct((ws,), np.uint8))
    fn = buffer_callback(_launcher(p, build, len(out_types), ws), results,
                         vmap_method="sequential")
    outs = fn(*inputs)
    return list(outs[:len(out_types)])


__all__ = ["preference", "use_preference", "plan", "bdtype", "stats_dtype", "rows_of", "view",
           "call"]
