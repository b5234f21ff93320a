"""Counter-based random numbers (Philox4x32-10) with a numpy-like ``Generator`` (extension).

    rng = xp.random.Generator(1234)          # or xp.random.default_rng(1234)
    u = rng.random((4, 5))                   # [0, 1), float32 by default
    z = rng.normal(0.0, 2.0, size=1000, dtype=xp.float64)

A Generator keeps ``(seed, offset)``; each draw uses the stream at its current offset and then
advances the offset by the Philox blocks it consumed, so successive draws are independent and a
Generator built with the same seed reproduces the whole sequence.  The values of a draw depend
only on (seed, offset, flat index), never on the launch shape (stream definition:
``baracuda_dsl.blocks.philox``).  Outputs are new dense arrays on ``device`` (default: the
current device).  ``permutation`` argsorts random keys with the stable sort (uint32 keys up to
2¹⁶ elements, uint64 beyond; equal keys keep index order: bias ≤ n²/2³³ resp. n²/2⁶⁵).
"""

from __future__ import annotations

import builtins
import operator
import os

from baracuda_dsl.dtypes import dtype as as_dtype
from baracuda_dsl.errors import InvalidProblemError
from baracuda_dsl.ops.random.random import RandomArgs, RandomDescriptor, RandomPlan

from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._device import as_device
from ._indexing_functions import take
from ._manipulation_functions import reshape
from ._sorting_functions import argsort

__all__ = ["Generator", "default_rng"]


def _size(size):
    if size is None:
        return ()
    if isinstance(size, builtins.int) or hasattr(size, "__index__"):
        return (operator.index(size),)
    return tuple(operator.index(s) for s in size)


def _dtype(dtype, default):
    if dtype is None:
        return default
    return as_dtype(dtype)


class Generator:
    """Philox4x32-10 generator state ``(seed, offset)`` with numpy-like draw methods.

    ``seed``: int in [−2⁶³, 2⁶⁴) (None: 64 random bits from the OS); ``offset``: starting Philox
    block (default 0).  ``device``: where draws are allocated (default the current device)."""

    def __init__(self, seed=None, offset: int = 0, device=None):
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        if isinstance(seed, builtins.bool) or not isinstance(seed, builtins.int):
            seed = operator.index(seed)
        if not -(1 << 63) <= seed < (1 << 64):
            raise InvalidProblemError(f"Generator: seed {seed} outside [-2**63, 2**64)")
        self.seed = seed % (1 << 64)
        self.offset = int(offset)
        self.device = device

    def __repr__(self) -> str:
        return f"Generator(seed={self.seed}, offset={self.offset})"

    # -- core ---------------------------------------------------------------------------
    def _draw(self, dist, shape, dtype, **params) -> Array:
        desc = RandomDescriptor(shape, dist, dtype)
        plan = _plans.select(RandomPlan, desc)
        out = Array._empty(desc.shape, desc.dtype, as_device(self.device))
        plan.run(RandomArgs(out, self.seed, self.offset, **params))
        self.offset += plan.blocks()
        return out

    def take_offset(self, blocks: int) -> int:
        """Reserve ``blocks`` Philox blocks (for plans driven by hand, e.g. dropout); returns the
        offset to pass them."""
        off = self.offset
        self.offset += int(blocks)
        return off

    # -- numpy-like methods -------------------------------------------------------------
    def random(self, size=None, dtype=None) -> Array:
        """Uniform [0, 1) (float32 default; f16, bf16, f64)."""
        return self._draw("uniform", _size(size), _dtype(dtype, _dt.float32), a=0.0, b=1.0)

    def uniform(self, low: float = 0.0, high: float = 1.0, size=None, dtype=None) -> Array:
        """Uniform [low, high)."""
        return self._draw("uniform", _size(size), _dtype(dtype, _dt.float32), a=float(low),
                          b=float(high))

    def standard_normal(self, size=None, dtype=None) -> Array:
        """N(0, 1) (Box–Muller)."""
        return self._draw("normal", _size(size), _dtype(dtype, _dt.float32), a=0.0, b=1.0)

    def normal(self, loc: float = 0.0, scale: float = 1.0, size=None, dtype=None) -> Array:
        """N(loc, scale²)."""
        return self._draw("normal", _size(size), _dtype(dtype, _dt.float32), a=float(loc),
                          b=float(scale))

    def gumbel(self, loc: float = 0.0, scale: float = 1.0, size=None, dtype=None) -> Array:
        """Gumbel(loc, scale): loc − scale·log(−log u)."""
        return self._draw("gumbel", _size(size), _dtype(dtype, _dt.float32), a=float(loc),
                          b=float(scale))

    def integers(self, low: int, high=None, size=None, dtype=None, endpoint: bool = False):
        """Integers in [low, high) ([low, high] with ``endpoint``; high=None: [0, low)); int64
        default, int32."""
        if high is None:
            low, high = 0, low
        low, high = operator.index(low), operator.index(high)
        if endpoint:
            high += 1
        return self._draw("randint", _size(size), _dtype(dtype, _dt.int64), low=low, high=high)

    def bernoulli(self, p: float = 0.5, size=None, dtype=None) -> Array:
        """True with probability ``p`` (bool default; uint8 or a float dtype give 1/0)."""
        return self._draw("bernoulli", _size(size), _dtype(dtype, _dt.bool), p=float(p))

    def bits(self, size=None, dtype=None) -> Array:
        """The raw Philox words (uint32) or 64-bit words (uint64)."""
        return self._draw("bits", _size(size), _dtype(dtype, _dt.uint32))

    def permutation(self, x) -> Array:
        """A random permutation of ``arange(x)`` (int64) or of ``x`` along axis 0 (a copy)."""
        if isinstance(x, Array):
            if x.ndim == 0:
                raise InvalidProblemError("permutation: x must have at least one dimension")
            return take(x, self.permutation(x.shape[0]), axis=0)
        n = operator.index(x)
        if n < 0:
            raise InvalidProblemError(f"permutation: n must be >= 0, got {n}")
        keys = self.bits((n,), _dt.uint32 if n <= (1 << 16) else _dt.uint64)
        return argsort(keys, axis=0, stable=True)

    def permuted(self, x: Array, axis=None) -> Array:
        """``x`` permuted along ``axis`` (None: the flattened array, reshaped back) — each
        slice along the axis gets the same permutation here (numpy's are independent)."""
        if axis is None:
            flat = reshape(x, (-1,))
            return reshape(take(flat, self.permutation(flat.shape[0]), axis=0), x.shape)
        ax = operator.index(axis)
        return take(x, self.permutation(x.shape[ax]), axis=ax)


def default_rng(seed=None) -> Generator:
    """``Generator(seed)`` (a Generator passes through)."""
    if isinstance(seed, Generator):
        return seed
    return Generator(seed)
