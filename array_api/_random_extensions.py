"""Random-noise layers (extensions): ``dropout`` and ``gumbel_softmax`` (forward; the backward
plans live in ``baracuda_dsl.ops.random.random``).

The noise comes from a :class:`array_api.random.Generator` (``generator=``; its offset advances
by the blocks consumed) or, for ``dropout``, a bare ``seed`` (offset 0); with neither, a
module-level generator seeded from the OS is used.
"""

from __future__ import annotations

from baracuda_dsl.errors import InvalidProblemError
from baracuda_dsl.ops.random.random import (DropoutArgs, DropoutDescriptor, DropoutPlan,
                                            GumbelSoftmaxArgs, GumbelSoftmaxDescriptor,
                                            GumbelSoftmaxPlan)

from . import _copy
from . import _plans
from ._array_object import Array
from .random import Generator

__all__ = ["dropout", "gumbel_softmax"]

_DEFAULT = []


def resolve_generator(generator, seed=None) -> Generator:
    """``generator`` (an array_api.random.Generator) itself, else a fresh Generator(seed) when
    ``seed`` is given, else the module's default generator (OS-seeded once)."""
    if generator is not None:
        if not isinstance(generator, Generator):
            raise TypeError(f"generator must be an array_api.random.Generator, got "
                            f"{type(generator).__name__}")
        return generator
    if seed is not None:
        return Generator(seed)
    if not _DEFAULT:
        _DEFAULT.append(Generator(None))
    return _DEFAULT[0]


def _dense_aligned(x: Array) -> Array:
    """x when C-contiguous and 16-byte aligned, else a dense copy (fresh pool allocation)."""
    if x.is_contiguous() and x._ptr % min(16, 4 * x.dtype.itemsize) == 0:
        return x
    return _copy.contiguous_copy(x)


def dropout(x: Array, p: float = 0.5, training: bool = True, *, seed=None,
            generator=None) -> Array:
    """torch.nn.functional.dropout: y = x·keep/(1−p), keep ~ Bernoulli(1−p) from Philox
    (f32, f16, bf16, f64).  ``training=False`` or p = 0 returns x itself; p = 1 gives zeros.
    ``seed``: a fresh Generator(seed) (offset 0); ``generator``: draws at its offset."""
    _plans.check_array(x, "x")
    desc = DropoutDescriptor(x.shape, x.dtype, float(p))
    if not training or desc.p == 0.0:
        return x
    g = resolve_generator(generator, seed)
    plan = _plans.select(DropoutPlan, desc)
    xd = _dense_aligned(x)
    y = Array._empty(x.shape, x.dtype, x.device)
    off = g.take_offset(plan.blocks())
    plan.run(DropoutArgs(xd, y, g.seed, off))
    return y


def gumbel_softmax(logits: Array, tau: float = 1.0, hard: bool = False, axis: int = -1, *,
                   generator=None) -> Array:
    """torch.nn.functional.gumbel_softmax (forward): softmax((logits + g)/τ) along ``axis``,
    g ~ Gumbel(0, 1); ``hard``: one_hot(argmax) along the axis.  f32, f16, bf16, f64."""
    _plans.check_array(logits, "logits")
    if logits.ndim == 0:
        raise InvalidProblemError("gumbel_softmax: logits must have at least one dimension")
    g = resolve_generator(generator)
    plan = _plans.select(GumbelSoftmaxPlan, GumbelSoftmaxDescriptor(
        logits.shape, logits.dtype, axis, float(tau), bool(hard)))
    y = Array._empty(logits.shape, logits.dtype, logits.device)
    off = g.take_offset(plan.blocks())
    _plans.run(plan, GumbelSoftmaxArgs(logits, y, g.seed, off), logits)
    return y
