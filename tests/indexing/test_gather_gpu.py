"""GatherPlan / ScatterPlan on the GPU against numpy indexing (bit-exact, every item size,
strided operands, clamped / skipped out-of-range indices)."""

import pytest

pytestmark = pytest.mark.gpu

DTYPES = ["bool", "int8", "int16", "float32", "float64", "complex128", "bfloat16"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index", ["int32", "int64"])
def test_gather_scatter(dtype, index):
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.indexing.gather import (GatherPlan, IndexCopyArgs, IndexCopyDescriptor,
                                                  ScatterPlan)

    gen = torch.Generator(device="cuda").manual_seed(4)
    tdt = getattr(torch, dtype)
    for n, m in ((1, 1), (1000, 77), (65537, 4097), (0, 5), (7, 3)):
        src = torch.randn((2 * m,), generator=gen, device="cuda").to(tdt)[::2]
        idx = torch.randint(0, m, (n,), generator=gen, device="cuda").to(getattr(torch, index))
        dst = torch.zeros((n, 2), device="cuda").to(tdt)[:, 1]
        GatherPlan.select(IndexCopyDescriptor(n, m, dtype, index)).run(
            IndexCopyArgs(src, idx, dst))
        assert torch.equal(dst.cpu(), src.cpu()[idx.cpu().long()]), (n, m)
        # scatter a permutation: every target written exactly once
        perm = torch.randperm(m, generator=gen, device="cuda").to(getattr(torch, index))
        vals = torch.randn((m,), generator=gen, device="cuda").to(tdt)
        out = torch.zeros((m,), device="cuda").to(tdt)
        ScatterPlan.select(IndexCopyDescriptor(m, m, dtype, index)).run(
            IndexCopyArgs(vals, perm, out))
        ref = torch.zeros((m,)).to(tdt)
        ref[perm.cpu().long()] = vals.cpu()
        assert torch.equal(out.cpu(), ref)


def test_out_of_range_indices_are_safe():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.indexing.gather import (GatherPlan, IndexCopyArgs, IndexCopyDescriptor,
                                                  ScatterPlan)

    src = torch.arange(5, device="cuda", dtype=torch.float32)
    idx = torch.tensor([-3, 0, 4, 9], device="cuda")
    dst = torch.full((4,), -1.0, device="cuda")
    GatherPlan.select(IndexCopyDescriptor(4, 5, "f32")).run(IndexCopyArgs(src, idx, dst))
    assert dst.tolist() == [0.0, 0.0, 4.0, 4.0]
    out = torch.full((5,), -1.0, device="cuda")
    ScatterPlan.select(IndexCopyDescriptor(4, 5, "f32")).run(
        IndexCopyArgs(torch.tensor([1.0, 2, 3, 4], device="cuda"), idx, out))
    assert out.tolist() == [2.0, -1.0, -1.0, -1.0, 3.0]
