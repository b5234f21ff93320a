"""Attention extensions (not in the standard), dispatching to the attention Plans:

* :func:`flash_attention` / :func:`flash_attention_backward` — flash-attn's layout and options
  (q (B, Sq, Hq, D), k / v (B, Sk, Hk, D), or packed variable-length batches), causal in both
  alignments, sliding windows, softcap, ALiBi, GQA; f16 / bf16 with head dims 64 / 96 / 128 /
  192 / 256 run the flash kernels, anything else the general ``SdpaPlan`` kernels;
* :func:`scaled_dot_product_attention` — ``torch.nn.functional.scaled_dot_product_attention``'s
  signature and layout ((…, H, L, E)), with an additive or boolean ``attn_mask``.

Outputs are new arrays.  A query row that sees no key gives 0 (torch gives NaN there) and a
log-sum-exp of −inf.  Attention dropout runs in the flash kernels (Philox, the project's
generator convention).
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from baracuda_dsl.errors import UnsupportedError

from . import _dtypes as _dt
from . import _plans
from ._array_object import Array
from ._manipulation_functions import ascontiguousarray, permute_dims, reshape


def _flash():
    from baracuda_dsl.ops.attention import flash
    return flash


def _short(dtype) -> str:
    return {_dt.float16: "f16", _dt.bfloat16: "bf16", _dt.float32: "f32",
            _dt.float64: "f64"}.get(dtype, getattr(dtype, "name", str(dtype)))


def _flash_ok(q: Array, k: Array, v: Array) -> bool:
    """Whether the flash kernels take these operands (dtype, head dim, layout)."""
    fl = _flash()
    if q.dtype not in (_dt.float16, _dt.bfloat16) or q.shape[-1] not in fl.spec.HEAD_DIMS:
        return False
    return k.shape[-1] == q.shape[-1] == v.shape[-1]


def _dense_rows(x: Array) -> Array:
    """``x`` when the flash kernels take its strides (unit last stride, others multiples of 8,
    16-byte aligned), else a dense copy."""
    if x.strides[-1] == 1 and all(s % 8 == 0 for s in x.strides[:-1]) and x._ptr % 16 == 0:
        return x
    return ascontiguousarray(x)


def _flash_desc(cls, q, k, causal, window, softcap, scale, alibi_slopes, align,
                cu_seqlens_q, max_seqlen_q, max_seqlen_k, dropout_p=0.0):
    varlen = cu_seqlens_q is not None
    alibi = "none"
    if alibi_slopes is not None:
        alibi = "heads" if alibi_slopes.ndim == 1 else "batch_heads"
    if varlen:
        if max_seqlen_q is None or max_seqlen_k is None:
            raise ValueError("flash_attention: varlen batches need max_seqlen_q and "
                             "max_seqlen_k")
        return cls(cu_seqlens_q.shape[0] - 1, int(max_seqlen_q), int(max_seqlen_k),
                   q.shape[1], k.shape[1], q.shape[2], _short(q.dtype), causal=causal,
                   window=tuple(window), align=align, softcap=softcap, scale=scale,
                   alibi=alibi, varlen=True, total_q=q.shape[0], total_k=k.shape[0],
                   dropout_p=dropout_p)
    if q.ndim != 4:
        raise ValueError(f"flash_attention: q must be (B, Sq, Hq, D), got shape {q.shape}")
    return cls(q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3],
               _short(q.dtype), causal=causal, window=tuple(window), align=align,
               softcap=softcap, scale=scale, alibi=alibi, dropout_p=dropout_p)


def _aux(*arrays):
    """The optional small operands (cu_seqlens, slopes) dense, None kept."""
    return tuple(None if a is None else ascontiguousarray(a) for a in arrays)


def _check(name, *arrays):
    for n, a in arrays:
        if a is not None:
            _plans.check_array(a, f"{name}: {n}")


def flash_attention(q: Array, k: Array, v: Array, /, *, causal: bool = False,
                    window: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
                    scale: Optional[float] = None, alibi_slopes: Optional[Array] = None,
                    align: str = "bottom_right", cu_seqlens_q: Optional[Array] = None,
                    cu_seqlens_k: Optional[Array] = None, max_seqlen_q: Optional[int] = None,
                    max_seqlen_k: Optional[int] = None, return_lse: bool = False,
                    dropout_p: float = 0.0, generator=None):
    """softmax(scale·q·kᵀ [softcap, ALiBi, causal / window masks])·v in flash-attn's layout:
    q (B, Sq, Hq, D), k / v (B, Sk, Hk, D) → out (B, Sq, Hq, D); or packed variable-length
    batches q (Tq, Hq, D), k / v (Tk, Hk, D) with int32 ``cu_seqlens_q`` / ``cu_seqlens_k``
    (B + 1 offsets) and ``max_seqlen_q`` / ``max_seqlen_k``.  ``align`` places causal / window
    masks (``"bottom_right"``: flash-attn; ``"top_left"``: torch).  ``return_lse``: also the
    f32 log-sum-exp (B, Hq, Sq) (varlen: (Hq, Tq)), which :func:`flash_attention_backward`
    takes.  f16 / bf16, head dims 64 / 96 / 128 / 192 / 256 (f32 accumulation); other dtypes
    and head dims raise UnsupportedError naming scaled_dot_product_attention.
    ``dropout_p`` > 0: attention dropout drawn from ``generator`` (an
    ``array_api.random.Generator``; default the module's generator), which advances past the
    draw; with ``return_lse`` the result is then (out, lse, (seed, offset)) — pass that state
    to :func:`flash_attention_backward` to regenerate the same mask."""
    _check("flash_attention", ("q", q), ("k", k), ("v", v), ("alibi_slopes", alibi_slopes),
           ("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k))
    fl = _flash()
    desc = _flash_desc(fl.FlashAttentionDescriptor, q, k, causal, window, softcap, scale,
                       alibi_slopes, align, cu_seqlens_q, max_seqlen_q, max_seqlen_k, dropout_p)
    plan = _plans.select(fl.FlashAttentionPlan, desc)
    state = (0, 0)
    if desc.dropout_p > 0:
        from ._random_extensions import resolve_generator

        g = resolve_generator(generator)
        n = desc.batch * desc.heads_q * desc.seqlen_q * desc.seqlen_k
        state = (g.seed, g.take_offset(-(-n // 4)))
    q, k, v = _dense_rows(q), _dense_rows(k), _dense_rows(v)
    out = Array._empty(q.shape, q.dtype, q.device)
    lse = Array._empty(desc.lse_shape(), _dt.float32, q.device)
    cq, ck, sl = _aux(cu_seqlens_q, cu_seqlens_k, alibi_slopes)
    plan.run(fl.FlashAttentionArgs(q, k, v, out, lse, cq, ck, sl, *state))
    if not return_lse:
        return out
    return (out, lse, state) if desc.dropout_p > 0 else (out, lse)


def flash_attention_backward(dout: Array, q: Array, k: Array, v: Array, out: Array, lse: Array,
                             /, *, causal: bool = False, window: Tuple[int, int] = (-1, -1),
                             softcap: float = 0.0, scale: Optional[float] = None,
                             alibi_slopes: Optional[Array] = None, align: str = "bottom_right",
                             cu_seqlens_q: Optional[Array] = None,
                             cu_seqlens_k: Optional[Array] = None,
                             max_seqlen_q: Optional[int] = None,
                             max_seqlen_k: Optional[int] = None, dropout_p: float = 0.0,
                             dropout_state: Optional[Tuple[int, int]] = None):
    """(dq, dk, dv) of :func:`flash_attention` for the incoming gradient ``dout`` (out's shape),
    given the forward's ``out`` and ``lse`` and the same options (with dropout: the same
    ``dropout_p`` and the forward's ``dropout_state`` (seed, offset)).  f32 accumulation; the
    input dtype out; on sm90a at head dims 64 / 128 dQ is summed with atomics (the fast path)."""
    _check("flash_attention_backward", ("dout", dout), ("q", q), ("k", k), ("v", v),
           ("out", out), ("lse", lse), ("alibi_slopes", alibi_slopes),
           ("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k))
    fl = _flash()
    desc = _flash_desc(fl.FlashAttentionBackwardDescriptor, q, k, causal, window, softcap,
                       scale, alibi_slopes, align, cu_seqlens_q, max_seqlen_q, max_seqlen_k,
                       dropout_p)
    if desc.dropout_p > 0 and dropout_state is None:
        raise ValueError("flash_attention_backward: dropout_p > 0 needs the forward's "
                         "dropout_state (seed, offset)")
    state = tuple(dropout_state) if desc.dropout_p > 0 else (0, 0)
    plan = _plans.select(fl.FlashAttentionBackwardPlan, desc)
    q, k, v, out, dout = (_dense_rows(t) for t in (q, k, v, out, dout))
    lse = ascontiguousarray(lse)
    dq = Array._empty(q.shape, q.dtype, q.device)
    dk = Array._empty(k.shape, k.dtype, k.device)
    dv = Array._empty(v.shape, v.dtype, v.device)
    cq, ck, sl = _aux(cu_seqlens_q, cu_seqlens_k, alibi_slopes)
    _plans.run(plan, fl.FlashAttentionBackwardArgs(q, k, v, out, dout, lse, dq, dk, dv, cq, ck,
                                                   sl, *state), q)
    return dq, dk, dv


def _to_bshd(x: Array) -> Array:
    """(…, H, L, E) → (B, L, H, E) view (leading dims merged; a copy only when they cannot)."""
    if x.ndim < 3:
        raise ValueError(f"scaled_dot_product_attention: inputs need rank >= 3 (…, H, L, E), "
                         f"got shape {x.shape}")
    if x.ndim == 3:
        x = reshape(x, (1,) + tuple(x.shape))
    elif x.ndim > 4:
        lead = 1
        for n in x.shape[:-3]:
            lead *= n
        x = reshape(x, (lead,) + tuple(x.shape[-3:]))
    return permute_dims(x, (0, 2, 1, 3))


def scaled_dot_product_attention(query: Array, key: Array, value: Array, /,
                                 attn_mask: Optional[Array] = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False) -> Array:
    """``torch.nn.functional.scaled_dot_product_attention``: query (…, Hq, L, E), key
    (…, Hk, S, E), value (…, Hk, S, Ev) → (…, Hq, L, Ev).  ``attn_mask`` bool (True keeps) or
    additive, broadcastable to (…, Hq, L, S); ``is_causal`` is top-left aligned (torch);
    ``enable_gqa`` lets Hq be a multiple of Hk.  The flash kernels run when they can (f16 /
    bf16, E = Ev in 64 / 96 / 128 / 192 / 256, no mask); the general SdpaPlan kernels
    otherwise (any float dtype, any head dims, masks).  A fully masked row gives 0 (torch:
    NaN).  ``dropout_p > 0`` (the flash path only; UnsupportedError elsewhere) draws from the
    default ``array_api.random`` generator."""
    _check("scaled_dot_product_attention", ("query", query), ("key", key), ("value", value),
           ("attn_mask", attn_mask))
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: attn_mask and is_causal are exclusive")
    hq, hk = query.shape[-3], key.shape[-3]
    if hq != hk and not enable_gqa:
        raise ValueError(f"scaled_dot_product_attention: {hq} query heads and {hk} key heads "
                         f"need enable_gqa=True")
    lead = tuple(query.shape[:-3])
    q, k, v = _to_bshd(query), _to_bshd(key), _to_bshd(value)
    if attn_mask is not None and len(lead) > 1:
        attn_mask = _merge_mask(attn_mask, lead, hq, query.shape[-2], key.shape[-2])
    if attn_mask is None and _flash_ok(q, k, v):
        out = flash_attention(q, k, v, causal=bool(is_causal), scale=scale, align="top_left",
                              dropout_p=float(dropout_p))
    elif dropout_p:
        raise UnsupportedError("scaled_dot_product_attention: dropout runs in the flash kernels "
                               "only (f16 / bf16, head dims 64 / 96 / 128 / 192 / 256, no "
                               "attn_mask)")
    else:
        out = _sdpa(q, k, v, attn_mask, bool(is_causal), scale)
    o = permute_dims(out, (0, 2, 1, 3))                    # (B, Hq, L, Ev)
    return reshape(o, lead + tuple(o.shape[1:]))


def _sdpa(q, k, v, attn_mask, causal, scale):
    """The general path (SdpaPlan): q / k / v (B, L | S, H, E | Ev) views, ``attn_mask``
    broadcastable to (B, H, L, S) (rank <= 4) → out (B, L, H, Ev)."""
    from baracuda_dsl.ops.attention import sdpa as P

    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"scaled_dot_product_attention: query / key / value dtypes differ "
                        f"({q.dtype.name}, {k.dtype.name}, {v.dtype.name})")
    b, sq, hq, d = q.shape
    desc = P.SdpaDescriptor(
        b, sq, k.shape[1], hq, k.shape[2], d, v.shape[3], dtype=q.dtype, causal=causal,
        align="top_left", scale=scale,
        mask_dtype=None if attn_mask is None else attn_mask.dtype,
        mask_shape=None if attn_mask is None else tuple(attn_mask.shape))
    plan = _plans.select(P.SdpaPlan, desc)
    out = Array._empty((b, sq, hq, v.shape[3]), q.dtype, q.device)
    _plans.run(plan, P.SdpaArgs(q, k, v, out, None, attn_mask), q)
    return out


def _merge_mask(mask: Array, lead, hq, sq, sk) -> Array:
    """A mask for inputs of rank > 4: broadcast to (…lead, H, L, S) and merged to
    (B, H, L, S) (a dense copy)."""
    from ._manipulation_functions import broadcast_to

    full = broadcast_to(mask, tuple(lead) + (hq, sq, sk))
    n = 1
    for x in lead:
        n *= x
    return reshape(ascontiguousarray(full), (n, hq, sq, sk))


# ---------------------------------------------------------------------------------- rope
def _rope(name, x, cos, sin, position_ids, seqlen_offset, rotary_dim, layout, backward):
    from baracuda_dsl.ops.attention import rope as R

    _check(name, ("x", x), ("cos", cos), ("sin", sin), ("position_ids", position_ids))
    if isinstance(seqlen_offset, Array):
        seqlen_offset = ascontiguousarray(seqlen_offset)
    elif isinstance(seqlen_offset, bool) or not isinstance(seqlen_offset, int):
        raise TypeError(f"{name}: seqlen_offset must be an int or an int32 Array")
    desc_cls, plan_cls, args_cls = ((R.RopeBackwardDescriptor, R.RopeBackwardPlan,
                                     R.RopeBackwardArgs) if backward else
                                    (R.RopeDescriptor, R.RopePlan, R.RopeArgs))
    plan = _plans.select(plan_cls, desc_cls(tuple(x.shape), x.dtype, rotary_dim=rotary_dim,
                                            layout=layout, table_dtype=cos.dtype))
    if x.strides[-1] != 1:
        x = ascontiguousarray(x)
    out = Array._empty(x.shape, x.dtype, x.device)
    pos = None if position_ids is None else ascontiguousarray(position_ids)
    _plans.run_checked(plan, lambda st: args_cls(x, ascontiguousarray(cos),
                                                 ascontiguousarray(sin), out, pos,
                                                 seqlen_offset, st), x.device, name)
    return out


def rope(x: Array, cos: Array, sin: Array, /, *, position_ids: Optional[Array] = None,
         seqlen_offset=0, rotary_dim: Optional[int] = None, layout: str = "half") -> Array:
    """Rotary position embedding of x (B, S, H, D) (or packed (T, H, D) with ``position_ids``):
    the first ``rotary_dim`` features rotate in pairs — ``"half"`` (GPT-NeoX: i with i + r/2) or
    ``"interleaved"`` (GPT-J: 2i with 2i + 1) — by the angles whose cos / sin tables
    (S_tab, r/2) are given (:func:`rope_cos_sin` builds them); y1 = x1·cos − x2·sin,
    y2 = x2·cos + x1·sin; the rest pass through.  Rows use ``position_ids`` ((B, S) / (T,))
    or s + ``seqlen_offset`` (an int or a (B,) int32 array).  A position outside the table
    raises ValueError when the host can see it (an int offset), else IndexError (device
    positions, while index checking is on; the row's rotated features are then NaN).
    f16 / bf16 / f32 / f64 (f32 math; f64 for f64)."""
    return _rope("rope", x, cos, sin, position_ids, seqlen_offset, rotary_dim, layout, False)


def rope_backward(dy: Array, cos: Array, sin: Array, /, *,
                  position_ids: Optional[Array] = None, seqlen_offset=0,
                  rotary_dim: Optional[int] = None, layout: str = "half") -> Array:
    """The gradient of :func:`rope` with respect to x: dy rotated by the opposite angles."""
    return _rope("rope_backward", dy, cos, sin, position_ids, seqlen_offset, rotary_dim,
                 layout, True)


def rope_cos_sin(positions_or_seq_len, rotary_dim: int, /, *, base: float = 10000.0,
                 scaling=None, dtype=None, device=None):
    """(cos, sin) tables (n, rotary_dim/2) for :func:`rope` as arrays on ``device``:
    angle = position · inv_freq_i, inv_freq_i = base^(−2i/rotary_dim), adjusted by
    ``scaling`` (a ``baracuda_dsl.ops.attention.rope.RopeScaling``: linear, dynamic NTK,
    llama3); computed in float64 and rounded once to ``dtype`` (default float32)."""
    from baracuda_dsl.ops.attention.rope import rope_cos_sin as tables

    from ._creation_functions import asarray
    dt = _dt.float32 if dtype is None else dtype
    c, s = tables(positions_or_seq_len, rotary_dim, base=base, scaling=scaling,
                  dtype=np.float64)
    return asarray(c, dtype=dt, device=device), asarray(s, dtype=dt, device=device)
