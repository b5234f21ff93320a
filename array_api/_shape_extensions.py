"""Shape extensions (torch / numpy, not in the standard): ``pad`` (constant / reflect /
replicate / circular), ``pixel_shuffle``, ``pixel_unshuffle``.  ``pad`` dispatches to ``PadPlan``
(one launch, a new dense array); the pixel shuffles are a reshape + permutation view materialised
by the transpose-aware dense copy."""

from __future__ import annotations

import operator

from . import _plans
from ._array_object import Array
from ._manipulation_functions import ascontiguousarray, permute_dims, reshape

_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "replicate",
          "edge": "replicate", "circular": "circular", "wrap": "circular"}


def _pairs(x: Array, pad):
    """Per-dim (lo, hi) pairs from torch's flat form (last dim first: ``(l_last, r_last,
    l_prev, r_prev, ...)``) or numpy's per-dim form (``((lo, hi), ...)`` for every dim, or one
    pair / one int for all dims)."""
    if isinstance(pad, int):
        return ((pad, pad),) * x.ndim
    pad = tuple(pad)
    if pad and all(isinstance(p, (tuple, list)) for p in pad):
        pairs = tuple((operator.index(p[0]), operator.index(p[1])) for p in pad)
        if len(pairs) == 1:
            return pairs * x.ndim
        if len(pairs) != x.ndim:
            raise ValueError(f"pad: {len(pairs)} (lo, hi) pairs for a {x.ndim}-D array")
        return pairs
    flat = tuple(operator.index(p) for p in pad)
    if len(flat) % 2 or len(flat) // 2 > x.ndim:
        raise ValueError(f"pad: the flat (torch) form needs an even count <= 2·ndim, got "
                         f"{len(flat)} for a {x.ndim}-D array")
    pairs = [(0, 0)] * x.ndim
    for j in range(len(flat) // 2):
        pairs[x.ndim - 1 - j] = (flat[2 * j], flat[2 * j + 1])
    return tuple(pairs)


def pad(x: Array, pad, mode: str = "constant", value=0) -> Array:
    """``x`` padded by ``pad`` (torch flat form, last dim first, or numpy per-dim pairs; negative
    constant pads crop).  Modes: ``constant`` (``value``), ``reflect`` (mirror without the edge,
    pad < size), ``replicate`` / ``edge``, ``circular`` / ``wrap``.  Every dtype, bit-exact
    (``PadPlan``, one launch)."""
    from baracuda_dsl.ops.shape.pad import PadArgs, PadDescriptor, PadPlan

    _plans.check_array(x, "x")
    if mode not in _MODES:
        raise ValueError(f"pad: mode must be one of {sorted(_MODES)}, got {mode!r}")
    pairs = _pairs(x, pad)
    plan = _plans.select(PadPlan, PadDescriptor(x.shape, pairs, _MODES[mode], value, x.dtype))
    out = Array._empty(plan.desc.out_shape, x.dtype, x.device)
    if out.size:
        plan.run(PadArgs(x, out))
    return out


def pixel_shuffle(x: Array, upscale_factor: int) -> Array:
    """torch.nn.functional.pixel_shuffle: (*, C·r², H, W) → (*, C, H·r, W·r)."""
    r = operator.index(upscale_factor)
    if x.ndim < 3 or r <= 0 or x.shape[-3] % (r * r):
        raise ValueError(f"pixel_shuffle: need (*, C·r², H, W) with r > 0, got {x.shape}, r={r}")
    *b, c, h, w = x.shape
    nb = len(b)
    y = reshape(x, (*b, c // (r * r), r, r, h, w))
    y = permute_dims(y, tuple(range(nb)) + (nb, nb + 3, nb + 1, nb + 4, nb + 2))
    return reshape(ascontiguousarray(y), (*b, c // (r * r), h * r, w * r))


def pixel_unshuffle(x: Array, downscale_factor: int) -> Array:
    """torch.nn.functional.pixel_unshuffle: (*, C, H·r, W·r) → (*, C·r², H, W)."""
    r = operator.index(downscale_factor)
    if x.ndim < 3 or r <= 0 or x.shape[-1] % r or x.shape[-2] % r:
        raise ValueError(f"pixel_unshuffle: need (*, C, H·r, W·r) with r > 0, got {x.shape}, "
                         f"r={r}")
    *b, c, h, w = x.shape
    nb = len(b)
    y = reshape(x, (*b, c, h // r, r, w // r, r))
    y = permute_dims(y, tuple(range(nb)) + (nb, nb + 2, nb + 4, nb + 1, nb + 3))
    return reshape(ascontiguousarray(y), (*b, c * r * r, h // r, w // r))


__all__ = ["pad", "pixel_shuffle", "pixel_unshuffle"]
