"""Float64 numpy references for the attention family (issue 19): attention forward (output and
log-sum-exp) and backward, with every feature the plans take, and rotary embeddings.

Conventions (flash-attn's, which the plans follow):

* layouts: ``q`` (B, Sq, Hq, D), ``k`` (B, Sk, Hk, D), ``v`` (B, Sk, Hk, Dv); variable length:
  ``q`` (Tq, Hq, D), ``k`` / ``v`` (Tk, Hk, D[v]) with ``cu_seqlens_q`` / ``cu_seqlens_k``
  (B + 1 offsets).  GQA / MQA: ``Hq % Hk == 0``, query head ``h`` reads kv head
  ``h // (Hq // Hk)``.
* scores ``s = scale · q·k`` (``scale`` default ``1/sqrt(D)``); ``softcap`` c > 0:
  ``s = c · tanh(s / c)``; ALiBi slopes (Hq,) or (B, Hq): ``s -= slope · |i + off - j|``.
* masks, with ``off = Sk - Sq`` for ``align="bottom_right"`` (flash-attn, the default) and 0 for
  ``"top_left"`` (torch SDPA's ``is_causal``): causal keeps ``j <= i + off``; a window
  ``(left, right)`` (-1 = unbounded) keeps ``i + off - left <= j <= i + off + right`` (causal is
  the window ``(-1, 0)``); ``attn_mask``: bool (True keeps, torch's meaning) or additive float,
  broadcastable to (B, Hq, Sq, Sk).
* a row whose every key is masked gives output 0 and log-sum-exp ``-inf`` (flash-attn's
  result; torch SDPA gives NaN there).
* ``lse`` (B, Hq, Sq) (varlen: (Hq, Tq)) is the natural-log sum of ``exp(s)`` over the kept keys.

Rotary embeddings: ``x`` (..., S, H, D); the first ``rotary_dim`` features rotate in pairs —
``"half"`` (GPT-NeoX: feature i with i + r/2) or ``"interleaved"`` (GPT-J: 2i with 2i + 1) — by
the angles of ``cos`` / ``sin`` (S, r/2) (or gathered by ``position_ids``); the rest pass
through.  ``y1 = x1 cos - x2 sin``, ``y2 = x2 cos + x1 sin``; the backward is the rotation by the
opposite angle.
"""

from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np


# ------------------------------------------------------------------------------- attention
def _keep_mask(sq: int, sk: int, causal: bool, window: Tuple[int, int], align: str) -> np.ndarray:
    """(Sq, Sk) bool: the keys each query row may see under ``causal`` / ``window``."""
    if align not in ("bottom_right", "top_left"):
        raise ValueError(f"align must be 'bottom_right' or 'top_left', got {align!r}")
    off = sk - sq if align == "bottom_right" else 0
    i = np.arange(sq)[:, None] + off
    j = np.arange(sk)[None, :]
    left, right = window
    if causal:
        right = 0 if right < 0 else min(right, 0)
    keep = np.ones((sq, sk), bool)
    if left >= 0:
        keep &= j >= i - left
    if right >= 0:
        keep &= j <= i + right
    return keep


def _bias(sq: int, sk: int, slopes: Optional[np.ndarray], align: str) -> np.ndarray:
    """(…, Hq, Sq, Sk) ALiBi bias ``-slope · |i + off - j|`` (0 when no slopes)."""
    if slopes is None:
        return np.zeros((1, 1, sq, sk))
    off = sk - sq if align == "bottom_right" else 0
    dist = np.abs(np.arange(sq)[:, None] + off - np.arange(sk)[None, :]).astype(np.float64)
    s = np.asarray(slopes, np.float64)
    s = s[None, :] if s.ndim == 1 else s              # (1 or B, Hq)
    return -s[:, :, None, None] * dist


def _expand_kv(x: np.ndarray, hq: int) -> np.ndarray:
    """(B, Sk, Hk, D) → (B, Sk, Hq, D): each kv head repeated for its query heads."""
    hk = x.shape[2]
    if hq % hk:
        raise ValueError(f"query heads {hq} are not a multiple of kv heads {hk}")
    return np.repeat(x, hq // hk, axis=2)


def _scores(q, k, scale, softcap, slopes, align, attn_mask, causal, window):
    """(raw scaled scores before softcap, final scores, keep mask), all (B, Hq, Sq, Sk)."""
    b, sq, hq, d = q.shape
    sk = k.shape[1]
    ke = _expand_kv(k, hq)
    raw = scale * np.einsum("bqhd,bkhd->bhqk", q, ke)
    s = softcap * np.tanh(raw / softcap) if softcap else raw.copy()
    s = s + _bias(sq, sk, slopes, align)
    keep = np.broadcast_to(_keep_mask(sq, sk, causal, window, align), s.shape).copy()
    if attn_mask is not None:
        m = np.asarray(attn_mask)
        if m.dtype == bool:
            keep &= np.broadcast_to(m, s.shape)
        else:
            s = s + np.broadcast_to(m.astype(np.float64), s.shape)
    keep &= ~np.isneginf(s)
    return raw, s, keep


def attention(q, k, v, *, scale: Optional[float] = None, causal: bool = False,
              window: Tuple[int, int] = (-1, -1), softcap: float = 0.0, alibi_slopes=None,
              attn_mask=None, align: str = "bottom_right",
              cu_seqlens_q: Optional[Sequence[int]] = None,
              cu_seqlens_k: Optional[Sequence[int]] = None):
    """(out, lse) in float64 — see the module docstring for every option."""
    if cu_seqlens_q is not None:
        return _varlen(attention, q, k, v, cu_seqlens_q, cu_seqlens_k, scale=scale,
                       causal=causal, window=window, softcap=softcap,
                       alibi_slopes=alibi_slopes, align=align)
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else float(scale)
    _raw, s, keep = _scores(q, k, scale, softcap, alibi_slopes, align, attn_mask, causal, window)
    s = np.where(keep, s, -np.inf)
    m = s.max(-1, keepdims=True, initial=-np.inf)   # no keys at all: -inf
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.where(keep, np.exp(s - m), 0.0)
    z = e.sum(-1, keepdims=True)
    p = np.divide(e, z, out=np.zeros_like(e), where=z > 0)
    out = np.einsum("bhqk,bkhd->bqhd", p, _expand_kv(v, q.shape[2]))
    with np.errstate(divide="ignore"):
        lse = np.where(z[..., 0] > 0, np.log(z[..., 0]) + m[..., 0], -np.inf)
    return out, lse


def attention_backward(q, k, v, dout, *, scale: Optional[float] = None, causal: bool = False,
                       window: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
                       alibi_slopes=None, attn_mask=None, align: str = "bottom_right",
                       cu_seqlens_q=None, cu_seqlens_k=None):
    """(dq, dk, dv) in float64 for the loss ``sum(out · dout)``: ``dV = Pᵀ dO``,
    ``dS = P ∘ (dO Vᵀ − rowsum(dO ∘ O))``, through the softcap's tanh, ``dQ = scale · dS K``,
    ``dK = scale · dSᵀ Q``; GQA sums dK / dV over each kv head's query heads."""
    if cu_seqlens_q is not None:
        return _varlen(attention_backward, q, k, v, cu_seqlens_q, cu_seqlens_k, dout=dout,
                       scale=scale, causal=causal, window=window, softcap=softcap,
                       alibi_slopes=alibi_slopes, align=align)
    q, k, v, dout = (np.asarray(t, np.float64) for t in (q, k, v, dout))
    b, sq, hq, d = q.shape
    hk = k.shape[2]
    scale = 1.0 / np.sqrt(d) if scale is None else float(scale)
    raw, s, keep = _scores(q, k, scale, softcap, alibi_slopes, align, attn_mask, causal, window)
    out, lse = attention(q, k, v, scale=scale, causal=causal, window=window, softcap=softcap,
                         alibi_slopes=alibi_slopes, attn_mask=attn_mask, align=align)
    fin = np.isfinite(lse)[..., None]
    p = np.where(keep & fin, np.exp(np.where(keep, s, 0.0) - np.where(fin, lse[..., None], 0.0)),
                 0.0)
    ve, ke = _expand_kv(v, hq), _expand_kv(k, hq)
    dve = np.einsum("bhqk,bqhd->bkhd", p, dout)
    dp = np.einsum("bqhd,bkhd->bhqk", dout, ve)
    delta = np.einsum("bqhd,bqhd->bhq", dout, out)[..., None]
    ds = p * (dp - delta)
    if softcap:
        ds = ds * (1.0 - np.tanh(raw / softcap) ** 2)
    dq = scale * np.einsum("bhqk,bkhd->bqhd", ds, ke)
    dke = scale * np.einsum("bhqk,bqhd->bkhd", ds, q)
    g = hq // hk
    dk = dke.reshape(b, k.shape[1], hk, g, d).sum(3)
    dv = dve.reshape(b, v.shape[1], hk, g, v.shape[3]).sum(3)
    return dq, dk, dv


def _varlen(fn, q, k, v, cu_q, cu_k, dout=None, alibi_slopes=None, **kw):
    """Run ``fn`` per sequence of a packed batch and re-pack: (out (Tq, Hq, Dv), lse (Hq, Tq))
    for the forward, (dq, dk, dv) packed like q / k / v for the backward."""
    if cu_k is None:
        raise ValueError("varlen attention needs cu_seqlens_k with cu_seqlens_q")
    cu_q, cu_k = list(cu_q), list(cu_k)
    if len(cu_q) != len(cu_k):
        raise ValueError("cu_seqlens_q and cu_seqlens_k must have the same length")
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    hq, dv_ = q.shape[1], v.shape[2]
    slopes = None if alibi_slopes is None else np.asarray(alibi_slopes, np.float64)
    parts = []
    for i in range(len(cu_q) - 1):
        sl_q, sl_k = slice(cu_q[i], cu_q[i + 1]), slice(cu_k[i], cu_k[i + 1])
        sl = None if slopes is None else (slopes if slopes.ndim == 1 else slopes[i:i + 1])
        args = [q[None, sl_q], k[None, sl_k], v[None, sl_k]]
        if dout is not None:
            args.append(np.asarray(dout, np.float64)[None, sl_q])
        if q[sl_q].shape[0] == 0:
            parts.append(None)
            continue
        parts.append(fn(*args, alibi_slopes=sl, **kw))
    if dout is None:
        out = np.zeros((q.shape[0], hq, dv_))
        lse = np.full((hq, q.shape[0]), -np.inf)
        for i, r in enumerate(parts):
            if r is not None:
                out[cu_q[i]:cu_q[i + 1]] = r[0][0]
                lse[:, cu_q[i]:cu_q[i + 1]] = r[1][0]
        return out, lse
    dq, dk, dv = np.zeros_like(q), np.zeros_like(k), np.zeros_like(v)
    for i, r in enumerate(parts):
        if r is not None:
            dq[cu_q[i]:cu_q[i + 1]] = r[0][0]
            dk[cu_k[i]:cu_k[i + 1]] = r[1][0]
            dv[cu_k[i]:cu_k[i + 1]] = r[2][0]
    return dq, dk, dv


def attention_flops(b: int, sq: int, sk: int, hq: int, d: int, dv: Optional[int] = None, *,
                    causal: bool = False, backward: bool = False) -> float:
    """The FLOP count benchmarks report: 2·B·Hq·Sq·Sk·(D + Dv) forward (halved when causal
    with Sq == Sk), 2.5 × that for the backward (five GEMMs instead of two)."""
    dv = d if dv is None else dv
    f = 2.0 * b * hq * sq * sk * (d + dv)
    if causal and sq == sk:
        f /= 2
    return f * (2.5 if backward else 1.0)


# ------------------------------------------------------------------------------- rotary
def rope_tables(positions, rotary_dim: int, base: float = 10000.0,
                linear_scale: float = 1.0) -> Tuple[np.ndarray, np.ndarray]:
    """(cos, sin), each (len(positions), rotary_dim / 2), of the angles
    ``(position / linear_scale) · base^(-2i / rotary_dim)``."""
    if rotary_dim % 2:
        raise ValueError("rotary_dim must be even")
    inv = base ** (-np.arange(0, rotary_dim, 2, dtype=np.float64) / rotary_dim)
    ang = (np.asarray(positions, np.float64)[..., None] / linear_scale) * inv
    return np.cos(ang), np.sin(ang)


def _pairs(x: np.ndarray, r: int, layout: str):
    if layout == "half":
        return x[..., :r // 2], x[..., r // 2:r]
    if layout == "interleaved":
        return x[..., 0:r:2], x[..., 1:r:2]
    raise ValueError(f"layout must be 'half' or 'interleaved', got {layout!r}")


def _rotate(x, cos, sin, rotary_dim, layout, sign, position_ids):
    x = np.asarray(x, np.float64)
    r = x.shape[-1] if rotary_dim is None else int(rotary_dim)
    if r % 2 or r > x.shape[-1]:
        raise ValueError(f"rotary_dim {r} must be even and <= the head dim {x.shape[-1]}")
    cos, sin = np.asarray(cos, np.float64), np.asarray(sin, np.float64)
    if position_ids is not None:                 # (B, S) → (B, S, r/2)
        cos, sin = cos[np.asarray(position_ids)], sin[np.asarray(position_ids)]
    c, s = cos[..., None, :], sign * sin[..., None, :]   # broadcast over heads
    x1, x2 = _pairs(x, r, layout)
    y = x.copy()
    y1, y2 = _pairs(y, r, layout)
    y1[...] = x1 * c - x2 * s
    y2[...] = x2 * c + x1 * s
    return y


def rope(x, cos, sin, *, rotary_dim: Optional[int] = None, layout: str = "half",
         position_ids=None) -> np.ndarray:
    """Rotary embedding of ``x`` (..., S, H, D) in float64 (module docstring); ``cos`` /
    ``sin`` (S, r/2), or (P, r/2) tables indexed by ``position_ids`` (B, S)."""
    return _rotate(x, cos, sin, rotary_dim, layout, 1.0, position_ids)


def rope_backward(dy, cos, sin, *, rotary_dim: Optional[int] = None, layout: str = "half",
                  position_ids=None) -> np.ndarray:
    """The gradient of :func:`rope`: the rotation by the opposite angles."""
    return _rotate(dy, cos, sin, rotary_dim, layout, -1.0, position_ids)


# -------------------------------------------------------------------------------- dropout
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_U32 = np.uint64(0xFFFFFFFF)


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 on numpy uint64 arrays holding 32-bit words (vectorised): the four output
    words (Random123's known answer: counter 0, key 0 → 6627e8d5 e169c58d bc57ac4c 9b00dbd8)."""
    c0, c1, c2, c3, k0, k1 = (np.asarray(x, np.uint64) & _U32 for x in (c0, c1, c2, c3, k0, k1))
    for r in range(10):
        p0 = c0 * np.uint64(_PHILOX_M[0])
        p1 = c2 * np.uint64(_PHILOX_M[1])
        c0, c1, c2, c3 = ((p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & _U32,
                          (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & _U32)
        if r < 9:
            k0 = (k0 + np.uint64(_PHILOX_W[0])) & _U32
            k1 = (k1 + np.uint64(_PHILOX_W[1])) & _U32
    return c0, c1, c2, c3


def dropout_factors(seed: int, offset: int, p: float, batch: int, heads: int, sq: int, sk: int):
    """(B, Hq, Sq, Sk) float64 attention-dropout factors: 1 / (1 − p) where kept, 0 where dropped
    — element e = ((b·Hq + h)·sq + i)·sk + j keeps iff word e mod 4 of Philox block
    offset + e div 4 (key = seed) is >= round(p·2³²) (the flash plans' convention)."""
    thr = min(1 << 32, int(round(p * 2.0 ** 32)))      # round(p·2³²), as the random family
    e = np.arange(batch * heads * sq * sk, dtype=np.uint64)
    blk = np.uint64(offset) + (e >> np.uint64(2))
    w = philox4x32_10(blk & _U32, blk >> np.uint64(32), 0, 0, seed & 0xFFFFFFFF,
                      (seed >> 32) & 0xFFFFFFFF)
    word = np.choose((e & np.uint64(3)).astype(np.int64), w)
    keep = word >= np.uint64(thr)
    z = np.where(keep, 1.0 / max(1.0 - thr * 2.0 ** -32, 2.0 ** -32), 0.0)   # none kept at 2³²
    return z.reshape(batch, heads, sq, sk)


def attention_dropout(q, k, v, z, *, scale=None, causal=False, align="bottom_right"):
    """(out, lse) in float64 with dropout factors ``z`` (B, Hq, Sq, Sk) applied to the
    normalised probabilities (the lse is the undropped one)."""
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else float(scale)
    _raw, s, keep = _scores(q, k, scale, 0.0, None, align, None, causal, (-1, -1))
    _, lse = attention(q, k, v, scale=scale, causal=causal, align=align)
    fin = np.isfinite(lse)[..., None]
    p = np.where(keep & fin, np.exp(np.where(keep, s, 0.0) - np.where(fin, lse[..., None], 0)),
                 0.0)
    return np.einsum("bhqk,bkhd->bqhd", p * z, _expand_kv(v, q.shape[2])), lse


def attention_dropout_backward(q, k, v, dout, z, *, scale=None, causal=False,
                               align="bottom_right"):
    """(dq, dk, dv) in float64 of :func:`attention_dropout`'s output for the loss
    sum(out · dout): dV = (P∘Z)ᵀ dO, dS = P ∘ (dO Vᵀ ∘ Z − rowsum(dO ∘ O))."""
    q, k, v, dout = (np.asarray(t, np.float64) for t in (q, k, v, dout))
    b, sq, hq, d = q.shape
    hk = k.shape[2]
    scale = 1.0 / np.sqrt(d) if scale is None else float(scale)
    _raw, s, keep = _scores(q, k, scale, 0.0, None, align, None, causal, (-1, -1))
    out, lse = attention_dropout(q, k, v, z, scale=scale, causal=causal, align=align)
    fin = np.isfinite(lse)[..., None]
    p = np.where(keep & fin, np.exp(np.where(keep, s, 0.0) - np.where(fin, lse[..., None], 0)),
                 0.0)
    ve, ke = _expand_kv(v, hq), _expand_kv(k, hq)
    dve = np.einsum("bhqk,bqhd->bkhd", p * z, dout)
    dp = np.einsum("bqhd,bkhd->bhqk", dout, ve)
    delta = np.einsum("bqhd,bqhd->bhq", dout, out)[..., None]
    ds = p * (dp * z - delta)
    dq = scale * np.einsum("bhqk,bkhd->bqhd", ds, ke)
    dke = scale * np.einsum("bhqk,bqhd->bkhd", ds, q)
    g = hq // hk
    return (dq, dke.reshape(b, k.shape[1], hk, g, d).sum(3),
            dve.reshape(b, v.shape[1], hk, g, v.shape[3]).sum(3))
