"""Plans inside a CUDA graph: ``plan.run(args, stream=s)`` captured with ``torch.cuda.graph``
launches nothing outside the capture stream, and each replay recomputes the result (the output
is poisoned again before every replay and checked after it).  One representative plan per
family kind: row engine (RMSNorm, softmax), elementwise, GEMM (sm90 persistent kernel with its
workspace), axis reduction, scan."""

import pytest

from tests._checks import assert_close, bounds

pytestmark = pytest.mark.gpu


def _torch():
    return pytest.importorskip("torch")


def _rmsnorm(torch, bd):
    x = torch.randn(4, 256, device="cuda")
    w = torch.randn(256, device="cuda")
    y = torch.empty_like(x)
    p = bd.RMSNormPlan.select(bd.RMSNormDescriptor((4, 256), 1, "f32", 1e-6, True))
    args = bd.RMSNormArgs(x, y, w)
    ref = torch.nn.functional.rms_norm(x.double(), (256,), w.double(), 1e-6)
    return y, (lambda st, ws: p.run(args, stream=st)), ref, 0, 260, None


def _softmax(torch, bd):
    from baracuda_dsl.ops.softmax import SoftmaxArgs, SoftmaxDescriptor, SoftmaxPlan

    x = torch.randn(8, 1000, device="cuda")
    y = torch.empty_like(x)
    p = SoftmaxPlan.select(SoftmaxDescriptor((8, 1000), bd.f32, -1, False))
    args = SoftmaxArgs(x, y)
    return y, (lambda st, ws: p.run(args, stream=st)), torch.softmax(x.double(), -1), 0, 1010, None


def _elementwise(torch, bd):
    from baracuda_dsl.ops.elementwise import ElementwiseArgs, ElementwiseDescriptor, ElementwisePlan

    a = torch.randn(1024, device="cuda")
    b = torch.randn(1024, device="cuda")
    o = torch.empty_like(a)
    p = ElementwisePlan.select(ElementwiseDescriptor("add", ((1024,), (1024,)), bd.f32))
    args = ElementwiseArgs([a, b], [o])
    return (o, (lambda st, ws: p.run(args, stream=st)), a.double() + b.double(), 0, 1,
            a.double().abs() + b.double().abs())


def _gemm(torch, bd):
    a = torch.randn(256, 256, device="cuda").bfloat16()
    b = torch.randn(256, 256, device="cuda").bfloat16()
    c = torch.empty(256, 256, device="cuda", dtype=torch.float32)
    p = bd.GemmPlan.select(bd.GemmDescriptor(256, 256, 256, bd.bf16, out_dtype=bd.f32))
    args = bd.GemmArgs(a, b, c)
    ref = a.double() @ b.double()
    return (c, (lambda st, ws: p.run(args, stream=st, workspace=ws)), ref, p.workspace_size(), 256,
            a.double().abs() @ b.double().abs())


def _reduce(torch, bd):
    from baracuda_dsl.ops.reduction import ReduceArgs, ReduceDescriptor, ReducePlan

    x = torch.randn(64, 100000, device="cuda")      # long rows: the two-pass split
    o = torch.empty(64, device="cuda")
    p = ReducePlan.select(ReduceDescriptor((64, 100000), (1,), "sum", bd.f32))
    args = ReduceArgs(x, o)
    return (o, (lambda st, ws: p.run(args, stream=st, workspace=ws)), x.double().sum(1),
            p.workspace_size(), 100000, x.double().abs().sum(1))


def _scan(torch, bd):
    from baracuda_dsl.ops.scan import ScanArgs, ScanDescriptor, ScanPlan

    x = torch.randn(4, 5000, device="cuda")
    y = torch.empty_like(x)
    p = ScanPlan.select(ScanDescriptor((4, 5000), 1, "cumsum", bd.f32))
    args = ScanArgs(x, y)
    return (y, (lambda st, ws: p.run(args, stream=st, workspace=ws)), x.double().cumsum(1),
            p.workspace_size(), 5000, x.double().abs().cumsum(1))


@pytest.mark.parametrize("make", [_rmsnorm, _softmax, _elementwise, _gemm, _reduce, _scan],
                         ids=lambda f: f.__name__.strip("_"))
def test_plan_captured_in_a_cuda_graph_replays_correctly(make):
    torch = _torch()
    import baracuda_dsl as bd

    # f32 results: half an ulp plus ``terms`` f32 roundings (worst case) relative to ``scale``
    # (the magnitude of the summed terms) or to each element
    out, run, ref, ws_bytes, terms, scale = make(torch, bd)
    rtol, atol = bounds("float32", compute="float32", terms=terms)
    ws = torch.empty(max(ws_bytes, 1), dtype=torch.uint8, device="cuda") if ws_bytes else None
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run(side.cuda_stream, ws)                       # first use (module load) outside capture
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run(torch.cuda.current_stream().cuda_stream, ws)
    for k in range(3):
        out.fill_(float("nan"))                           # each replay must write it all again
        graph.replay()
        torch.cuda.synchronize()
        assert_close(out, ref, rtol, atol, scale=scale, what=f"{make.__name__} replay {k}")
