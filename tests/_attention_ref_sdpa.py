"""Error scales for the SdpaPlan / SdpaBackwardPlan GPU tests: float64 sums of the absolute
terms each output element is made of (tests/_checks.py bounds errors relative to them), with
every option of tests/_attention_ref.attention (masks included)."""

from __future__ import annotations

import numpy as np

from tests import _attention_ref as ref


def _expand(x: np.ndarray, hq: int) -> np.ndarray:
    return np.repeat(x, hq // x.shape[2], axis=2)


def probabilities(q, k, v, *, scale=None, causal=False, softcap=0.0, attn_mask=None,
                  align="bottom_right"):
    """(P (B, Hq, Sq, Sk), out, lse) in float64: the attention weights of the reference (0 on
    masked entries and on rows that see no key)."""
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    sc = 1.0 / np.sqrt(q.shape[-1]) if scale is None else float(scale)
    _raw, s, keep = ref._scores(q, k, sc, softcap, None, align, attn_mask, causal, (-1, -1))
    out, lse = ref.attention(q, k, v, scale=sc, causal=causal, softcap=softcap,
                             attn_mask=attn_mask, align=align)
    fin = np.isfinite(lse)[..., None]
    p = np.where(keep & fin, np.exp(np.where(keep, s, 0.0) - np.where(fin, lse[..., None], 0.0)),
                 0.0)
    return p, out, lse


def score_scale(q, k, *, scale=None, softcap=0.0, attn_mask=None) -> float:
    """A bound on |s| over the problem (the magnitude the lse's error is relative to): the
    softcap, or scale·max Σ_d |q||k|, plus the largest finite |additive mask|."""
    q, k = np.abs(np.asarray(q, np.float64)), np.abs(np.asarray(k, np.float64))
    sc = 1.0 / np.sqrt(q.shape[-1]) if scale is None else abs(float(scale))
    if softcap:
        s = float(softcap)
    elif q.size and k.size:
        s = sc * float(np.einsum("bqhd,bkhd->bhqk", q, _expand(k, q.shape[2])).max())
    else:
        s = 0.0
    if attn_mask is not None and np.asarray(attn_mask).dtype != bool:
        m = np.abs(np.asarray(attn_mask, np.float64))
        m = m[np.isfinite(m)]
        s += float(m.max()) if m.size else 0.0
    return s


def grad_scales(q, k, v, dout, *, scale=None, causal=False, softcap=0.0, attn_mask=None,
                align="bottom_right"):
    """(sq, sk, sv): per-element float64 sums of absolute terms of dq, dk, dv (shaped like q, k,
    v): ``dv ← Σ_i P|dO|``, ``dq ← scale·Σ_j A|k|``, ``dk ← scale·Σ_i A|q|`` with
    ``A = P·(Σ_e |dO||V| + Σ_e |dO||O|) >= |dS|`` (the softcap factor is <= 1); GQA sums over
    each kv head's query heads."""
    qn, kn, vn, dn = (np.asarray(t, np.float64) for t in (q, k, v, dout))
    hq, hk = qn.shape[2], kn.shape[2]
    sc = 1.0 / np.sqrt(qn.shape[-1]) if scale is None else abs(float(scale))
    p, o, _ = probabilities(qn, kn, vn, scale=scale, causal=causal, softcap=softcap,
                            attn_mask=attn_mask, align=align)
    ve, ke = _expand(vn, hq), _expand(kn, hq)
    a = p * (np.einsum("bqhd,bkhd->bhqk", np.abs(dn), np.abs(ve))
             + np.einsum("bqhd,bqhd->bhq", np.abs(dn), np.abs(o))[..., None])
    sv = np.einsum("bhqk,bqhd->bkhd", p, np.abs(dn))
    sq = sc * np.einsum("bhqk,bkhd->bqhd", a, np.abs(ke))
    skk = sc * np.einsum("bhqk,bqhd->bkhd", a, np.abs(qn))
    b, n = kn.shape[:2]
    g = hq // hk if hk else 1
    return (sq, skk.reshape(b, n, hk, g, -1).sum(3), sv.reshape(b, n, hk, g, -1).sum(3))
