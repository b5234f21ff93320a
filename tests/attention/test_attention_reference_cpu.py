"""The float64 attention / rotary references (tests/_attention_ref.py) that the attention
family's GPU tests will compare against (issue 19), checked on the CPU against the plainest
formulas: a per-row loop, GQA as repeated kv heads, varlen as separate sequences, the backward
against central finite differences, the rotary backward as the adjoint."""

import math

import numpy as np
import pytest

from tests import _attention_ref as R


def _rng(seed=0):
    return np.random.default_rng(seed)


def _loop_attention(q, k, v, scale, causal, window, softcap, slopes, align):
    """One query row at a time, straight from the definitions."""
    b, sq, hq, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    out = np.zeros((b, sq, hq, v.shape[3]))
    lse = np.full((b, hq, sq), -np.inf)
    off = sk - sq if align == "bottom_right" else 0
    left, right = window
    for bi in range(b):
        for h in range(hq):
            kh = h // (hq // hk)
            for i in range(sq):
                s, idx = [], []
                for j in range(sk):
                    if causal and j > i + off:
                        continue
                    if left >= 0 and j < i + off - left:
                        continue
                    if right >= 0 and j > i + off + right:
                        continue
                    x = scale * float(q[bi, i, h] @ k[bi, j, kh])
                    if softcap:
                        x = softcap * math.tanh(x / softcap)
                    if slopes is not None:
                        x -= slopes[h] * abs(i + off - j)
                    s.append(x)
                    idx.append(j)
                if not s:
                    continue
                m = max(s)
                w = [math.exp(x - m) for x in s]
                z = sum(w)
                lse[bi, h, i] = m + math.log(z)
                for wi, j in zip(w, idx):
                    out[bi, i, h] += wi / z * v[bi, j, kh]
    return out, lse


CASES = [
    dict(),
    dict(causal=True),
    dict(causal=True, align="top_left"),
    dict(window=(3, 1)),
    dict(window=(2, -1), causal=True),
    dict(softcap=5.0),
    dict(alibi=True, causal=True),
    dict(softcap=3.0, alibi=True, window=(4, 2)),
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("sq,sk", [(5, 5), (3, 7), (7, 3), (1, 9)])
def test_forward_matches_a_row_loop(case, sq, sk):
    c = CASES[case]
    rng = _rng(case * 31 + sq * 7 + sk)
    q = rng.standard_normal((2, sq, 4, 8))
    k = rng.standard_normal((2, sk, 2, 8))
    v = rng.standard_normal((2, sk, 2, 6))
    slopes = rng.random(4) if c.get("alibi") else None
    kw = dict(causal=c.get("causal", False), window=c.get("window", (-1, -1)),
              softcap=c.get("softcap", 0.0), align=c.get("align", "bottom_right"))
    out, lse = R.attention(q, k, v, alibi_slopes=slopes, **kw)
    ref_out, ref_lse = _loop_attention(q, k, v, 1 / math.sqrt(8), kw["causal"], kw["window"],
                                       kw["softcap"], slopes, kw["align"])
    np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.isneginf(lse), np.isneginf(ref_lse))
    fin = np.isfinite(ref_lse)
    np.testing.assert_allclose(lse[fin], ref_lse[fin], rtol=1e-12)


def test_gqa_is_attention_over_repeated_kv_heads():
    rng = _rng(1)
    q = rng.standard_normal((1, 6, 8, 16))
    k = rng.standard_normal((1, 9, 2, 16))
    v = rng.standard_normal((1, 9, 2, 16))
    a = R.attention(q, k, v, causal=True)
    b = R.attention(q, np.repeat(k, 4, 2), np.repeat(v, 4, 2), causal=True)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-13)
    with pytest.raises(ValueError):
        R.attention(q, k[:, :, :1].repeat(3, 2), v[:, :, :1].repeat(3, 2))


def test_varlen_is_separate_sequences_including_empty_ones():
    rng = _rng(2)
    lq, lk = [3, 0, 5, 1], [4, 2, 5, 0]
    cq, ck = np.cumsum([0] + lq), np.cumsum([0] + lk)
    q = rng.standard_normal((cq[-1], 4, 8))
    k = rng.standard_normal((ck[-1], 2, 8))
    v = rng.standard_normal((ck[-1], 2, 8))
    out, lse = R.attention(q, k, v, causal=True, cu_seqlens_q=cq, cu_seqlens_k=ck)
    for i in range(len(lq)):
        if lq[i] == 0:
            continue
        o, l_ = R.attention(q[None, cq[i]:cq[i + 1]], k[None, ck[i]:ck[i + 1]],
                            v[None, ck[i]:ck[i + 1]], causal=True)
        np.testing.assert_allclose(out[cq[i]:cq[i + 1]], o[0], rtol=1e-13)
        np.testing.assert_array_equal(lse[:, cq[i]:cq[i + 1]], l_[0])
    assert np.all(out[cq[3]:cq[4]] == 0) and np.all(np.isneginf(lse[:, cq[3]:cq[4]]))


def test_fully_masked_rows_give_zero_and_minus_infinity():
    rng = _rng(3)
    q, k, v = (rng.standard_normal((1, 4, 2, 8)) for _ in range(3))
    mask = np.ones((1, 1, 4, 4), bool)
    mask[..., 2, :] = False
    out, lse = R.attention(q, k, v, attn_mask=mask)
    assert np.all(out[0, 2] == 0) and np.all(np.isneginf(lse[0, :, 2]))
    add = np.where(mask, 0.0, -np.inf)
    out2, lse2 = R.attention(q, k, v, attn_mask=add)
    np.testing.assert_array_equal(out, out2)


def test_causal_alignments():
    """Equal lengths: both alignments agree; fewer queries than keys: the bottom-right rows see
    the whole prefix (the decode case), the top-left ones only the first keys."""
    rng = _rng(4)
    q, k, v = (rng.standard_normal((1, 5, 1, 4)) for _ in range(3))
    a = R.attention(q, k, v, causal=True)[0]
    b = R.attention(q, k, v, causal=True, align="top_left")[0]
    np.testing.assert_allclose(a, b, rtol=1e-14)
    k9, v9 = rng.standard_normal((1, 9, 1, 4)), rng.standard_normal((1, 9, 1, 4))
    last = R.attention(q[:, -1:], k9, v9, causal=True)[0]
    full = R.attention(q[:, -1:], k9, v9)[0]
    np.testing.assert_allclose(last, full, rtol=1e-14)       # one query at the end sees all
    first = R.attention(q[:, :1], k9, v9, causal=True, align="top_left")[0]
    np.testing.assert_allclose(first[0, 0, 0], v9[0, 0, 0], rtol=1e-14)


@pytest.mark.parametrize("opts", [dict(), dict(causal=True, softcap=4.0),
                                  dict(alibi=True, window=(2, 1)),
                                  dict(causal=True, align="top_left")])
def test_backward_matches_finite_differences(opts):
    rng = _rng(5)
    q = rng.standard_normal((1, 4, 4, 3))
    k = rng.standard_normal((1, 5, 2, 3))
    v = rng.standard_normal((1, 5, 2, 2))
    do = rng.standard_normal((1, 4, 4, 2))
    kw = {n: opts[n] for n in ("causal", "softcap", "window", "align") if n in opts}
    if opts.get("alibi"):
        kw["alibi_slopes"] = rng.random(4)

    def loss(q_, k_, v_):
        return float((R.attention(q_, k_, v_, **kw)[0] * do).sum())

    dq, dk, dv = R.attention_backward(q, k, v, do, **kw)
    h = 1e-6
    for arr, grad, which in ((q, dq, 0), (k, dk, 1), (v, dv, 2)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            plus, minus = arr.copy(), arr.copy()
            plus[idx] += h
            minus[idx] -= h
            args_p, args_m = [q, k, v], [q, k, v]
            args_p[which], args_m[which] = plus, minus
            num[idx] = (loss(*args_p) - loss(*args_m)) / (2 * h)
        np.testing.assert_allclose(grad, num, rtol=1e-6, atol=1e-8)


def test_varlen_backward_packs_like_the_inputs():
    rng = _rng(6)
    cq, ck = [0, 2, 2, 5], [0, 3, 4, 6]
    q, do = rng.standard_normal((5, 2, 4)), rng.standard_normal((5, 2, 4))
    k, v = rng.standard_normal((6, 1, 4)), rng.standard_normal((6, 1, 4))
    dq, dk, dv = R.attention_backward(q, k, v, do, causal=True, cu_seqlens_q=cq, cu_seqlens_k=ck)
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape
    assert np.all(dk[3] == 0) and np.all(dv[3] == 0)           # the query-less sequence
    a = R.attention_backward(q[None, 2:5], k[None, 4:6], v[None, 4:6], do[None, 2:5],
                             causal=True)
    np.testing.assert_allclose(dq[2:5], a[0][0], rtol=1e-13)


def test_flop_count():
    assert R.attention_flops(1, 4, 4, 1, 8) == 2 * 4 * 4 * 16
    assert R.attention_flops(1, 4, 4, 1, 8, causal=True) == 4 * 4 * 16
    assert R.attention_flops(1, 4, 4, 1, 8, backward=True) == 2.5 * 2 * 4 * 4 * 16


# ------------------------------------------------------------------------------- rotary
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("rotary_dim", [None, 4])
def test_rope_rotates_pairs_and_its_backward_is_the_adjoint(layout, rotary_dim):
    rng = _rng(7)
    x = rng.standard_normal((2, 6, 3, 8))
    cos, sin = R.rope_tables(np.arange(6), rotary_dim or 8)
    y = R.rope(x, cos, sin, rotary_dim=rotary_dim, layout=layout)
    r = rotary_dim or 8
    np.testing.assert_allclose(np.linalg.norm(y[..., :r], axis=-1),
                               np.linalg.norm(x[..., :r], axis=-1), rtol=1e-13)
    np.testing.assert_array_equal(y[..., r:], x[..., r:])      # the pass-through features
    np.testing.assert_allclose(y[:, 0], x[:, 0], rtol=1e-15)   # position 0: no rotation
    g = rng.standard_normal(x.shape)
    lhs = (y * g).sum()
    rhs = (x * R.rope_backward(g, cos, sin, rotary_dim=rotary_dim, layout=layout)).sum()
    assert abs(lhs - rhs) < 1e-12 * max(1.0, abs(lhs))


def test_rope_layouts_are_a_feature_permutation_of_each_other():
    rng = _rng(8)
    x = rng.standard_normal((1, 5, 2, 8))
    cos, sin = R.rope_tables(np.arange(5), 8)
    perm = np.r_[0:8:2, 1:8:2]              # interleaved order → half order
    a = R.rope(x, cos, sin, layout="interleaved")
    b = R.rope(x[..., perm], cos, sin, layout="half")
    np.testing.assert_allclose(a[..., perm], b, rtol=1e-14)


def test_rope_position_ids_gather_the_tables():
    rng = _rng(9)
    x = rng.standard_normal((2, 4, 1, 6))
    pos = np.array([[3, 4, 5, 6], [0, 0, 1, 9]])
    cos, sin = R.rope_tables(np.arange(10), 6, base=500.0, linear_scale=2.0)
    y = R.rope(x, cos, sin, position_ids=pos)
    c1, s1 = R.rope_tables(pos[1], 6, base=500.0, linear_scale=2.0)
    np.testing.assert_allclose(y[1], R.rope(x[1], c1, s1), rtol=1e-14)
    with pytest.raises(ValueError):
        R.rope(x, cos, sin, rotary_dim=5)


def test_philox_known_answers_and_dropout_rate():
    """Random123's Philox4x32-10 known answers; the dropout factors keep ~1 − p of the
    elements and scale them by 1 / (1 − p)."""
    from tests._attention_ref import dropout_factors, philox4x32_10
    assert [int(x) for x in philox4x32_10(0, 0, 0, 0, 0, 0)] == \
        [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
    m = 0xFFFFFFFF
    assert [int(x) for x in philox4x32_10(m, m, m, m, m, m)] == \
        [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
    z = dropout_factors(1234, 99, 0.3, 2, 4, 33, 65)
    kept = z > 0
    assert abs(kept.mean() - 0.7) < 0.02
    assert np.allclose(z[kept], 1 / (1 - round(0.3 * 2 ** 32) * 2.0 ** -32))
    assert not np.array_equal(kept, dropout_factors(1234, 100, 0.3, 2, 4, 33, 65) > 0)
