"""BatchedGemmPlan on the GPU against float64 torch references: the one-launch batched
``gemm_mma`` route (broadcast a or b through a zero batch stride, per-entry and shared bias,
every epilogue, strided batch views, batch = 1 / 7 / 70000 — the last chunked over two launches
of the grid's 65535 entries), the per-entry loop fallback (batch strides that misalign entries),
and bit-identical results across two runs.  Every element is checked against a bound from the
OUTPUT dtype and k (f32 accumulate; _gemm_helpers.gemm_tolerance), outputs NaN-poisoned."""

import pytest
from _gemm_helpers import assert_gemm_close, gemm_scale, poisoned_workspace
from _gemm_helpers import ref_gemm as _ref
from _gpu_helpers import bytes_equal

from tests._checks import poison_

pytestmark = pytest.mark.gpu


def _mods():
    torch = pytest.importorskip("torch")
    from baracuda_dsl.ops.gemm.gemm_batched import (BatchedGemmArgs, BatchedGemmDescriptor,
                                                    BatchedGemmPlan)

    return torch, BatchedGemmArgs, BatchedGemmDescriptor, BatchedGemmPlan


def _run(a, b, c, bias=None, *, alpha=1.0, beta=0.0, epilogue="identity", batched=True,
         dtype="bfloat16"):
    """Run twice (bitwise-identical results required), compare with the float64 reference."""
    torch, BatchedGemmArgs, BatchedGemmDescriptor, BatchedGemmPlan = _mods()
    B, m, k = a.shape
    n = b.shape[2]
    od = {torch.float32: "float32"}.get(c.dtype)
    plan = BatchedGemmPlan.select(BatchedGemmDescriptor(B, m, n, k, dtype, out_dtype=od,
                                                        alpha=alpha, beta=beta,
                                                        epilogue=epilogue))
    args = BatchedGemmArgs(a, b, c, bias)
    t, _, one_launch = plan.kernel_for(args)
    assert t.name == "gemm_mma" and one_launch == batched, (t.name, one_launch)
    c0 = c.clone()
    outs = []
    for _ in range(2):
        c.copy_(c0)
        if beta == 0:
            poison_(torch, c)                           # poisoned: must not be read
        # batch 1 is GemmPlan, which may split k: partials NaN until written
        plan.run(args, workspace=poisoned_workspace(torch, plan))
        torch.cuda.synchronize()
        outs.append(c.clone())
    assert bytes_equal(torch, outs[0], outs[1]), "batched GEMM is not deterministic"
    ref = _ref(torch, a, b, c0, bias, alpha, beta, epilogue)
    assert_gemm_close(c, ref, k, scale=gemm_scale(torch, a, b, c0, bias, alpha, beta),
                      epilogue=epilogue, extra_terms=plan.gemm_plan.splits,
                      ctx=(B, m, n, k, dtype, od, epilogue))


def _rand(torch, shape, gen, dt=None):
    return torch.randn(shape, generator=gen, device="cuda").to(dt or torch.bfloat16)


@pytest.mark.parametrize("epilogue", ["identity", "bias", "bias_relu", "bias_gelu",
                                      "bias_silu"])
def test_batched_broadcast_and_bias(epilogue):
    torch, *_ = _mods()
    gen = torch.Generator(device="cuda").manual_seed(1)
    B, m, n, k = 7, 33, 136, 200
    has_bias = epilogue != "identity"
    # shared a (stride 0), per-entry b, per-entry bias
    a = _rand(torch, (1, m, k), gen).expand(B, m, k)
    b = _rand(torch, (B, k, n), gen)
    c = _rand(torch, (B, m, n), gen)
    bias = _rand(torch, (B, n), gen) if has_bias else None
    _run(a, b, c, bias, epilogue=epilogue, beta=0.5)
    # per-entry a, shared transposed b (k-major, stride 0), shared bias, f32 output
    a = _rand(torch, (B, m, k), gen)
    b = _rand(torch, (1, n, k), gen).transpose(1, 2).expand(B, k, n)
    c = torch.empty((B, m, n), device="cuda", dtype=torch.float32)
    bias = _rand(torch, (n,), gen, torch.float32) if has_bias else None
    _run(a, b, c, bias, epilogue=epilogue, alpha=0.75)


def test_batched_sizes_and_strided_views():
    torch, *_ = _mods()
    gen = torch.Generator(device="cuda").manual_seed(2)
    # batch 1 (exactly GemmPlan) and 7
    for B in (1, 7):
        _run(_rand(torch, (B, 16, 64), gen), _rand(torch, (B, 64, 24), gen),
             torch.empty((B, 16, 24), device="cuda", dtype=torch.bfloat16), batched=B > 1)
    # strided batch views: every other entry of a, m-major a (transposed), strided c entries
    B, m, n, k = 5, 40, 72, 96
    a = _rand(torch, (2 * B, k, m), gen)[::2].transpose(1, 2)
    b = _rand(torch, (B, k, n + 8), gen)[:, :, :n]
    cbuf = torch.empty((B, m, 2 * n), device="cuda", dtype=torch.bfloat16)
    c = cbuf[:, :, ::2]
    _run(a, b, c)
    c.copy_(_rand(torch, (B, m, n), gen))
    _run(a, b, c, beta=-1.0)
    # f16 entries on the decode tile
    _run(_rand(torch, (3, 8, 128), gen, torch.float16),
         _rand(torch, (3, 128, 520), gen, torch.float16),
         torch.empty((3, 8, 520), device="cuda", dtype=torch.float16), dtype="float16")


def test_batched_chunked_70000():
    torch, *_ = _mods()
    gen = torch.Generator(device="cuda").manual_seed(3)
    B = 70000                                          # two launches: 65535 + 4465 entries
    a = _rand(torch, (B, 8, 8), gen)
    b = _rand(torch, (8, 8), gen).expand(B, 8, 8)     # shared weight
    c = torch.empty((B, 8, 8), device="cuda", dtype=torch.bfloat16)
    bias = _rand(torch, (B, 8), gen)
    _run(a, b, c, bias, epilogue="bias_relu")


def test_batched_misaligned_batch_stride_loops():
    torch, *_ = _mods()
    gen = torch.Generator(device="cuda").manual_seed(4)
    B, m, n, k = 3, 16, 64, 96
    buf = _rand(torch, (B * (m * k + 4),), gen)
    a = buf.as_strided((B, m, k), (m * k + 4, k, 1))  # entry i starts 8·i bytes off 16
    b = _rand(torch, (B, k, n), gen)
    c = torch.empty((B, m, n), device="cuda", dtype=torch.bfloat16)
    _run(a, b, c, batched=False)
