"""ALiBi on the GPU against float64 references: the bias (tests/_attention_ref._bias) for every
dtype, both alignments, per-head and per-batch slopes, odd / long / empty shapes and strided
outputs (the scalar path); the slope gradient against tests/_attention_ref_rope.alibi_dslopes,
single- and multi-chunk (workspace) reductions, bit-identical reruns.

Bounds (tests/_checks.py): the bias is one product in the compute dtype (the distance is exact),
rounded into the output dtype: ``bounds(dt, compute=ct, terms=1)``.  The slope gradient is a sum
in the compute dtype of products: each thread adds its items in order (at most ``ceil(items /
256)`` items of ``V`` products), then 5 shuffle levels, 8 warps and the chunks in order, so the
error is ``depth·u·Σ|terms|`` (:func:`_depth`) plus the f32 output rounding."""

import math

import numpy as np
import pytest

from baracuda_dsl.ops.attention.alibi import (AlibiArgs, AlibiBackwardArgs,
                                              AlibiBackwardDescriptor, AlibiBackwardPlan,
                                              AlibiDescriptor, AlibiPlan, alibi_slopes)
from tests._attention_ref import _bias as bias_ref
from tests._attention_ref_rope import alibi_distance, alibi_dslopes
from tests._checks import assert_close, assert_equal, bounds, eps, poison, to_numpy

pytestmark = pytest.mark.gpu

DTYPES = ["float16", "bfloat16", "float32", "float64"]
CT = {"float16": "float32", "bfloat16": "float32", "float32": "float32", "float64": "float64"}
ISZ = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _slopes(torch, b, hq, batched):
    s = alibi_slopes(hq).astype(np.float64)
    if batched:
        s = s[None, :] * (1.0 + np.arange(b))[:, None] / 2
    return torch.from_numpy(s.astype(np.float32)).cuda()


SHAPES = [(1, 8, 1, 17), (2, 4, 17, 1023), (1, 2, 1023, 1), (2, 3, 5, 64), (1, 12, 33, 40)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("align", ["bottom_right", "top_left"])
def test_alibi_forward(torch, dt, shape, batched, align):
    b, hq, sq, sk = shape
    slopes = _slopes(torch, b, hq, batched)
    bias = poison(torch, shape, getattr(torch, dt))
    plan = AlibiPlan.select(AlibiDescriptor(shape, dt, batched_slopes=batched, align=align))
    plan.run(AlibiArgs(slopes, bias))
    ref = np.broadcast_to(bias_ref(sq, sk, to_numpy(slopes), align), shape)
    rtol, atol = bounds(dt, compute=CT[dt], terms=1)
    assert_close(bias, ref, rtol, atol, what=str(plan.sku()))


def test_alibi_forward_strided_and_broadcast_batch(torch):
    """A (B, Hq, Sq, Sk) bias written into a transposed / padded buffer (scalar path) and a
    per-head slope vector used for every batch of a B = 3 bias."""
    b, hq, sq, sk = 3, 4, 9, 16
    slopes = _slopes(torch, b, hq, False)
    buf = poison(torch, (b, sq, hq, sk + 3), torch.float32)
    bias = buf[..., :sk].permute(0, 2, 1, 3)            # padded rows, heads and rows swapped
    AlibiPlan.select(AlibiDescriptor((b, hq, sq, sk), "float32")).run(AlibiArgs(slopes, bias))
    ref = np.broadcast_to(bias_ref(sq, sk, to_numpy(slopes), "bottom_right"), (b, hq, sq, sk))
    rtol, atol = bounds("float32", compute="float32", terms=1)
    assert_close(bias, ref, rtol, atol)
    assert torch.isnan(buf[..., sk:]).all()
    tr = poison(torch, (b, hq, sk, sq), torch.bfloat16).transpose(2, 3)    # column stride sq
    AlibiPlan.select(AlibiDescriptor((b, hq, sq, sk), "bfloat16", align="top_left")).run(
        AlibiArgs(slopes, tr))
    ref = np.broadcast_to(bias_ref(sq, sk, to_numpy(slopes), "top_left"), (b, hq, sq, sk))
    rtol, atol = bounds("bfloat16", compute="float32", terms=1)
    assert_close(tr, ref, rtol, atol)


def test_alibi_empty(torch):
    for shape in ((0, 2, 3, 4), (1, 0, 3, 4), (1, 2, 0, 4), (1, 2, 3, 0)):
        slopes = torch.ones(shape[1], device="cuda", dtype=torch.float32)
        bias = torch.empty(shape, device="cuda", dtype=torch.float16)
        AlibiPlan.select(AlibiDescriptor(shape, "float16")).run(AlibiArgs(slopes, bias))
    # backward with no dbias elements: the empty sum
    ds = poison(torch, (3,), torch.float32)
    AlibiBackwardPlan.select(AlibiBackwardDescriptor((2, 3, 0, 4), "float16")).run(
        AlibiBackwardArgs(torch.empty((2, 3, 0, 4), device="cuda", dtype=torch.float16), ds))
    assert_equal(ds, np.zeros(3, np.float32))


def _depth(plan, dt):
    v = 16 // ISZ[dt]
    items = plan._rpc * (plan.desc.shape[3] // v if plan.desc.shape[3] % v == 0
                         else plan.desc.shape[3])
    return math.ceil(items / 256) * (v + 1) + 5 + 8 + plan._nchunks + 2


def _run_bw(torch, plan, dbias, ds):
    ws = None
    if plan.workspace_size():
        ws = torch.full((plan.workspace_size(),), 0xFF, device="cuda", dtype=torch.uint8)
    plan.run(AlibiBackwardArgs(dbias, ds), workspace=ws)


BW_SHAPES = [(2, 4, 17, 64), (1, 2, 1023, 1023), (3, 2, 1, 17), (2, 8, 300, 257),
             (1, 1, 4096, 128)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", BW_SHAPES)
@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("align", ["bottom_right", "top_left"])
def test_alibi_backward(torch, dt, shape, batched, align):
    g = torch.Generator(device="cuda").manual_seed(shape[2])
    dbias = torch.randn(shape, generator=g, device="cuda", dtype=torch.float64).to(
        getattr(torch, dt))
    d = AlibiBackwardDescriptor(shape, dt, batched_slopes=batched, align=align)
    plan = AlibiBackwardPlan.select(d)
    ds = poison(torch, d.slopes_shape, torch.float32)
    _run_bw(torch, plan, dbias, ds)
    dn = to_numpy(dbias)
    ref = alibi_dslopes(dn, batched, align)
    terms = (np.abs(dn) * alibi_distance(shape[2], shape[3], align)).sum(axis=(2, 3))
    scale = terms if batched else terms.sum(axis=0)
    rtol = _depth(plan, dt) * eps(CT[dt]) + eps("float32") / 2
    assert_close(ds, ref, rtol, bounds("float32")[1], scale=scale, what=str(plan.sku()))
    # deterministic: a rerun (and the launch record's replay) gives the same bits
    for _ in range(2):
        again = poison(torch, d.slopes_shape, torch.float32)
        _run_bw(torch, plan, dbias, again)
        assert_equal(again, ds)


def test_alibi_backward_strided_dbias(torch):
    """dbias a non-contiguous view (the scalar path) and a transposed dslopes."""
    b, hq, sq, sk = 2, 3, 40, 33
    full = torch.randn((b, sq, hq, sk + 1), device="cuda", dtype=torch.float64).to(
        torch.bfloat16)
    dbias = full[..., 1:].permute(0, 2, 1, 3)
    dsbuf = poison(torch, (hq, b), torch.float32)
    ds = dsbuf.t()
    plan = AlibiBackwardPlan.select(AlibiBackwardDescriptor((b, hq, sq, sk), "bfloat16",
                                                            batched_slopes=True))
    _run_bw(torch, plan, dbias, ds)
    dn = to_numpy(dbias)
    ref = alibi_dslopes(dn, True)
    scale = (np.abs(dn) * alibi_distance(sq, sk)).sum(axis=(2, 3))
    rtol = _depth(plan, "bfloat16") * eps("float32") + eps("float32") / 2
    assert_close(ds, ref, rtol, bounds("float32")[1], scale=scale)
