"""Rotary embeddings on the GPU against the float64 references of tests/_attention_ref.py: every
dtype and layout, forward and backward, partial rotary dims, odd / long / empty shapes, q and k
rotated in place as views of one packed qkv tensor, varlen batches with int32 / int64 position
ids, per-sequence offsets, misaligned operands (the scalar path), tables in x's dtype, and
positions outside the table (NaN rows and the status word).

Bound per element (tests/_checks.py): ``y1 = x1·c − x2·s`` costs two products and one
subtraction in the compute dtype, i.e. ``3u`` relative to ``|x1||c| + |x2||s|`` (the scale: the
terms may cancel), plus half an ulp of the output dtype; the tables are the device tensors'
values (already rounded), so the reference sees exactly what the kernel reads.  Pass-through
features must be bit-exact copies.  Outputs start NaN-poisoned."""

import numpy as np
import pytest

from baracuda_dsl.ops.attention.rope import (RopeArgs, RopeBackwardArgs, RopeBackwardDescriptor,
                                             RopeBackwardPlan, RopeDescriptor, RopePlan,
                                             rope_cos_sin)
from tests._attention_ref import rope as rope_ref, rope_backward as rope_bw_ref
from tests._attention_ref_rope import rope_positions
from tests._checks import assert_close, assert_equal, bounds, poison, to_numpy

pytestmark = pytest.mark.gpu

DTYPES = ["float16", "bfloat16", "float32", "float64"]
CT = {"float16": "float32", "bfloat16": "float32", "float32": "float32", "float64": "float64"}


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _rand(torch, shape, dt, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(shape, generator=g, device="cuda", dtype=torch.float64).to(
        getattr(torch, dt))


def _tables(torch, n, r, dt="float32", base=10000.0):
    c, s = rope_cos_sin(n, r, base=base, dtype=np.float64)
    return (torch.from_numpy(c).cuda().to(getattr(torch, dt)),
            torch.from_numpy(s).cuda().to(getattr(torch, dt)))


def _scale(x, cos, sin, r, layout, pos):
    """|x1||c| + |x2||s| (and |x2||c| + |x1||s|) per rotated feature, |x| elsewhere."""
    xa = np.abs(x)
    c = np.abs(cos)[pos][..., None, :]
    s = np.abs(sin)[pos][..., None, :]
    out = xa.copy()
    if layout == "half":
        x1, x2 = xa[..., :r // 2], xa[..., r // 2:r]
        out[..., :r // 2] = x1 * c + x2 * s
        out[..., r // 2:r] = x2 * c + x1 * s
    else:
        x1, x2 = xa[..., 0:r:2], xa[..., 1:r:2]
        out[..., 0:r:2] = x1 * c + x2 * s
        out[..., 1:r:2] = x2 * c + x1 * s
    return out


def check(out, x, cos, sin, *, r, layout, pos, dt, backward=False, what=""):
    """``out`` = rope(x) (or its backward) at table rows ``pos`` (numpy, (B, S) or (T,))."""
    xn, cn, sn = to_numpy(x), to_numpy(cos), to_numpy(sin)
    fn = rope_bw_ref if backward else rope_ref
    ref = fn(xn, cn, sn, rotary_dim=r, layout=layout, position_ids=pos)
    rtol, atol = bounds(dt, compute=CT[dt], terms=3)
    assert_close(out, ref, rtol, atol, scale=_scale(xn, cn, sn, r, layout, pos), what=what)
    if r < xn.shape[-1]:
        assert_equal(out[..., r:], x[..., r:], what=f"{what} pass-through")


SHAPES = [((1, 1, 1, 64), None), ((2, 17, 3, 128), None), ((1, 1023, 2, 64), 32),
          ((2, 17, 4, 80), 64), ((1, 5, 2, 6), 6), ((3, 2, 2, 16), 8)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("shape,r", SHAPES)
@pytest.mark.parametrize("backward", [False, True])
def test_rope(torch, dt, layout, shape, r, backward):
    b, s, h, d = shape
    r = d if r is None else r
    x = _rand(torch, shape, dt, seed=s + d)
    cos, sin = _tables(torch, s + 7, r, "float64" if dt == "float64" else "float32")
    out = poison(torch, shape, getattr(torch, dt))
    if backward:
        plan = RopeBackwardPlan.select(RopeBackwardDescriptor(shape, dt, rotary_dim=r,
                                                              layout=layout))
        plan.run(RopeBackwardArgs(x, cos, sin, out, seqlen_offset=7))
    else:
        plan = RopePlan.select(RopeDescriptor(shape, dt, rotary_dim=r, layout=layout))
        plan.run(RopeArgs(x, cos, sin, out, seqlen_offset=7))
    check(out, x, cos, sin, r=r, layout=layout, pos=rope_positions(b, s, seqlen_offset=7), dt=dt,
          backward=backward, what=str(plan.sku()))
    if not backward:   # a second run (a launch record's replay) gives the same bits
        again = poison(torch, shape, getattr(torch, dt))
        plan.run(RopeArgs(x, cos, sin, again, seqlen_offset=7))
        plan.run(RopeArgs(x, cos, sin, again, seqlen_offset=7))
        assert_equal(again, out)


@pytest.mark.parametrize("dt,tdt", [("float16", "float16"), ("bfloat16", "bfloat16"),
                                    ("float64", "float32")])
def test_rope_table_dtypes(torch, dt, tdt):
    shape = (2, 9, 3, 64)
    x = _rand(torch, shape, dt, seed=11)
    cos, sin = _tables(torch, 9, 64, tdt)
    out = poison(torch, shape, getattr(torch, dt))
    RopePlan.select(RopeDescriptor(shape, dt, table_dtype=tdt)).run(RopeArgs(x, cos, sin, out))
    check(out, x, cos, sin, r=64, layout="half", pos=rope_positions(2, 9), dt=dt)


def test_rope_packed_qkv_in_place(torch):
    """q and k as slices of one packed (B, S, 3, H, D) qkv tensor, rotated in place (partial
    rotary dim: the rest and v stay bit-identical)."""
    b, s, h, d, r = 2, 33, 4, 64, 32
    qkv = _rand(torch, (b, s, 3, h, d), "bfloat16", seed=5)
    before = qkv.clone()
    cos, sin = _tables(torch, 64, r)
    pid = torch.randint(0, 64, (b, s), device="cuda", dtype=torch.int64)
    plan = RopePlan.select(RopeDescriptor((b, s, h, d), "bfloat16", rotary_dim=r))
    for part in (0, 1):
        view = qkv[:, :, part]
        plan.run(RopeArgs(view, cos, sin, view, position_ids=pid))
    for part in (0, 1):
        check(qkv[:, :, part], before[:, :, part], cos, sin, r=r, layout="half",
              pos=to_numpy(pid), dt="bfloat16", what=f"part {part}")
    assert_equal(qkv[:, :, 2], before[:, :, 2], what="v untouched")
    # out of place from the packed views, interleaved
    plan = RopePlan.select(RopeDescriptor((b, s, h, d), "bfloat16", rotary_dim=r,
                                          layout="interleaved"))
    out = poison(torch, (b, s, h, d), torch.bfloat16)
    plan.run(RopeArgs(before[:, :, 1], cos, sin, out, position_ids=pid))
    check(out, before[:, :, 1], cos, sin, r=r, layout="interleaved", pos=to_numpy(pid),
          dt="bfloat16")


@pytest.mark.parametrize("idt", ["int32", "int64"])
@pytest.mark.parametrize("dt", ["bfloat16", "float32"])
def test_rope_varlen_position_ids(torch, idt, dt):
    lens = [5, 0, 17, 1]
    t, h, d = sum(lens), 3, 128
    x = _rand(torch, (t, h, d), dt, seed=7)
    pid = torch.cat([torch.arange(n) for n in lens]).to(device="cuda",
                                                        dtype=getattr(torch, idt))
    cos, sin = _tables(torch, 32, d)
    out = poison(torch, (t, h, d), getattr(torch, dt))
    RopePlan.select(RopeDescriptor((t, h, d), dt)).run(RopeArgs(x, cos, sin, out,
                                                                position_ids=pid))
    check(out, x, cos, sin, r=d, layout="half", pos=to_numpy(pid), dt=dt)
    dy = _rand(torch, (t, h, d), dt, seed=8)
    dx = poison(torch, (t, h, d), getattr(torch, dt))
    RopeBackwardPlan.select(RopeBackwardDescriptor((t, h, d), dt, layout="interleaved")).run(
        RopeBackwardArgs(dy, cos, sin, dx, position_ids=pid))
    check(dx, dy, cos, sin, r=d, layout="interleaved", pos=to_numpy(pid), dt=dt, backward=True)


def test_rope_seqlen_offsets_tensor(torch):
    b, s, h, d = 4, 1, 8, 64                    # one decoding step per sequence
    x = _rand(torch, (b, s, h, d), "float16", seed=9)
    offs = torch.tensor([0, 3, 100, 1022], device="cuda", dtype=torch.int32)
    cos, sin = _tables(torch, 1023, d)
    out = poison(torch, x.shape, torch.float16)
    RopePlan.select(RopeDescriptor(x.shape, "float16")).run(
        RopeArgs(x, cos, sin, out, seqlen_offset=offs))
    check(out, x, cos, sin, r=d, layout="half", dt="float16",
          pos=rope_positions(b, s, seqlen_offset=to_numpy(offs)))


def test_rope_shared_position_ids(torch):
    """(1, S) position ids: one row of positions for every sequence (Hugging Face style)."""
    b, s, h, d = 3, 17, 2, 64
    x = _rand(torch, (b, s, h, d), "bfloat16", seed=14)
    pid = (torch.arange(s, device="cuda", dtype=torch.int64) * 3 + 1)[None]
    cos, sin = _tables(torch, 3 * s + 1, d)
    out = poison(torch, x.shape, torch.bfloat16)
    RopePlan.select(RopeDescriptor(x.shape, "bfloat16", layout="interleaved")).run(
        RopeArgs(x, cos, sin, out, position_ids=pid))
    check(out, x, cos, sin, r=d, layout="interleaved", dt="bfloat16",
          pos=np.repeat(to_numpy(pid), b, axis=0))


def test_rope_misaligned_scalar_path(torch):
    """x / out one element past a 16-byte boundary, a head dim that is not a multiple of the
    vector: the scalar path, same results."""
    base = _rand(torch, (2, 17, 3, 66), "float16", seed=10)
    x = base[..., 1:65]
    cos, sin = _tables(torch, 17, 64)
    obuf = poison(torch, (2, 17, 3, 66), torch.float16)
    out = obuf[..., 1:65]
    RopePlan.select(RopeDescriptor((2, 17, 3, 64), "float16")).run(RopeArgs(x, cos, sin, out))
    check(out, x, cos, sin, r=64, layout="half", pos=rope_positions(2, 17), dt="float16")
    assert torch.isnan(obuf[..., 0]).all() and torch.isnan(obuf[..., 65]).all()
    x2 = _rand(torch, (2, 5, 3, 14), "float32", seed=12)
    cos2, sin2 = _tables(torch, 5, 12)
    out2 = poison(torch, x2.shape, torch.float32)
    RopePlan.select(RopeDescriptor(x2.shape, "float32", rotary_dim=12,
                                   layout="interleaved")).run(RopeArgs(x2, cos2, sin2, out2))
    check(out2, x2, cos2, sin2, r=12, layout="interleaved", pos=rope_positions(2, 5),
          dt="float32")


def test_rope_out_of_range_positions(torch):
    b, s, h, d, r = 2, 4, 2, 64, 32
    x = _rand(torch, (b, s, h, d), "bfloat16", seed=13)
    cos, sin = _tables(torch, 8, r)
    pid = torch.tensor([[0, 8, 7, -1], [3, 2**40, 1, 2]], device="cuda", dtype=torch.int64)
    st = torch.zeros(1, device="cuda", dtype=torch.int32)
    out = poison(torch, x.shape, torch.bfloat16)
    plan = RopePlan.select(RopeDescriptor(x.shape, "bfloat16", rotary_dim=r))
    plan.run(RopeArgs(x, cos, sin, out, position_ids=pid, status=st))
    assert int(st.item()) == 1
    p = to_numpy(pid)
    good = (p >= 0) & (p < 8)
    o = to_numpy(out)
    assert np.isnan(o[~good][..., :r]).all()
    assert_equal(out[..., r:], x[..., r:])
    ok = torch.from_numpy(good).cuda()
    check(out[ok], x[ok], cos, sin, r=r, layout="half", pos=p[good], dt="bfloat16")
    st.zero_()
    pid = torch.tensor([[0, 1, 2, 3], [7, 6, 5, 4]], device="cuda", dtype=torch.int64)
    plan.run(RopeArgs(x, cos, sin, out, position_ids=pid, status=st))
    assert int(st.item()) == 0
    check(out, x, cos, sin, r=r, layout="half", pos=to_numpy(pid), dt="bfloat16")


def test_rope_empty(torch):
    for shape in ((0, 4, 2, 64), (2, 0, 2, 64), (2, 4, 0, 64)):
        x = torch.empty(shape, device="cuda", dtype=torch.float16)
        cos, sin = _tables(torch, 4, 64)
        RopePlan.select(RopeDescriptor(shape, "float16")).run(RopeArgs(x, cos, sin, x.clone()))
    x = torch.empty((0, 2, 64), device="cuda", dtype=torch.float16)
    pid = torch.empty((0,), device="cuda", dtype=torch.int32)
    RopePlan.select(RopeDescriptor((0, 2, 64), "float16")).run(
        RopeArgs(x, cos, sin, x.clone(), position_ids=pid))
    torch.cuda.synchronize()
