"""Segment-family benchmarks on the GPU host: embedding backward, unsorted segment_sum and
embedding_bag against torch in the same run.  Usage (GPU host, from
the repo root): ``python3 -m benchmarks.segment [--quick] [--out DIR]``; run_all calls
``run(out_dir, quick, log)`` (section ``segment``).

=====================  ======================================================================
embedding bw           dweight (131072 × 4096 bf16, dense) from dy (16384 × 4096 bf16) and
                       16384 int64 ids, vs torch.ops.aten.embedding_dense_backward (the
                       autograd backward of F.embedding).  Bytes: dy read + dweight written.
segment_sum            2^24 rows × 64 f32, 2^20 unsorted segments (int64 ids), vs
                       torch index_add_ into zeros (atomics) and scatter_reduce(sum).  Bytes:
                       data read + out written (+ ids).
embedding_bag sum      weight 2^20 × 128 f32, 2^20 indices in 2^16 bags, vs
                       F.embedding_bag(mode='sum').  Bytes: gathered rows read + out written.
=====================  ======================================================================

Each result is checked against torch (relative error) before timing.  "vs torch" = torch time /
ours; "of copy" = our GB/s / the device-to-device copy GB/s measured in the same run.
"""

from __future__ import annotations

from . import harness as H


def _ws(torch, plan):
    n = plan.workspace_size()
    return torch.empty(n, dtype=torch.uint8, device="cuda") if n else None


def _embedding_bw_row(torch, quick):
    from baracuda_dsl.ops.segment.embedding import (EmbeddingBackwardArgs, EmbeddingBackwardPlan,
                                                    EmbeddingDescriptor)

    V, D, T = (32768, 4096, 4096) if quick else (131072, 4096, 16384)
    ids = torch.randint(0, V, (T,), device="cuda")
    dy = torch.randn(T, D, device="cuda", dtype=torch.bfloat16)
    dw = torch.empty(V, D, device="cuda", dtype=torch.bfloat16)
    plan = EmbeddingBackwardPlan.select(EmbeddingDescriptor(V, D, T, "bf16"))
    ws = _ws(torch, plan)
    args = EmbeddingBackwardArgs(dy, ids, dw)
    plan.run(args, workspace=ws)

    def ref():
        return torch.ops.aten.embedding_dense_backward(dy, ids, V, -1, False)

    r = ref()
    err = H.rel_err(dw.float(), r.float())
    t = H.bench(lambda: plan.run(args, workspace=ws), reps=10, batch=2)
    tt = H.bench(ref, reps=10, batch=2)
    nbytes = T * D * 2 + V * D * 2 + T * 8
    return dict(case=f"embedding bw bf16 V={V} D={D} T={T}", ms=t.median, torch_ms=tt.median,
                gbs=H.gbs(nbytes, t.median), ok=err < 1e-2, err=err)


def _segment_sum_rows(torch, quick):
    from baracuda_dsl.ops.segment.segment import SegmentArgs, SegmentDescriptor, SegmentPlan

    N, C, S = (2 ** 20 if quick else 2 ** 24), 64, 2 ** 20 if not quick else 2 ** 16
    data = torch.randn(N, C, device="cuda")
    ids = torch.randint(0, S, (N,), device="cuda")
    out = torch.empty(S, C, device="cuda")
    plan = SegmentPlan.select(SegmentDescriptor((N, C), S, "sum", "f32"))
    ws = _ws(torch, plan)
    args = SegmentArgs(data, ids, out)
    plan.run(args, workspace=ws)
    zeros = torch.zeros(S, C, device="cuda")

    def t_index_add():
        return zeros.clone().index_add_(0, ids, data)

    idx2 = ids[:, None].expand(N, C)

    def t_scatter():
        return torch.zeros(S, C, device="cuda").scatter_reduce_(0, idx2, data, "sum")

    err = H.rel_err(out.double(), t_index_add().double())
    t = H.bench(lambda: plan.run(args, workspace=ws), reps=10, batch=2)
    ti = H.bench(t_index_add, reps=10, batch=2)
    ts = H.bench(t_scatter, reps=10, batch=2)
    nbytes = N * C * 4 + S * C * 4 + N * 8
    return [dict(case=f"segment_sum f32 {N}×{C} → {S} (unsorted) vs index_add_", ms=t.median,
                 torch_ms=ti.median, gbs=H.gbs(nbytes, t.median), ok=err < 1e-5, err=err),
            dict(case=f"segment_sum f32 {N}×{C} → {S} (unsorted) vs scatter_reduce", ms=t.median,
                 torch_ms=ts.median, gbs=H.gbs(nbytes, t.median), ok=err < 1e-5, err=err)]


def _embedding_bag_row(torch, quick):
    F = torch.nn.functional
    from baracuda_dsl.ops.segment.embedding import (EmbeddingBagArgs, EmbeddingBagDescriptor,
                                                    EmbeddingBagPlan)

    V, D = 2 ** 20, 128
    n, B = (2 ** 18, 2 ** 14) if quick else (2 ** 20, 2 ** 16)
    w = torch.randn(V, D, device="cuda")
    idx = torch.randint(0, V, (n,), device="cuda")
    offsets = torch.arange(0, n, n // B, device="cuda")
    out = torch.empty(B, D, device="cuda")
    plan = EmbeddingBagPlan.select(EmbeddingBagDescriptor(V, D, n, B, "sum", "f32"))
    args = EmbeddingBagArgs(w, idx, offsets, out)
    plan.run(args, workspace=_ws(torch, plan))

    def ref():
        return F.embedding_bag(idx, w, offsets, mode="sum")

    err = H.rel_err(out.double(), ref().double())
    t = H.bench(lambda: plan.run(args), reps=10, batch=4)
    tt = H.bench(ref, reps=10, batch=4)
    nbytes = n * D * 4 + B * D * 4 + n * 8
    return dict(case=f"embedding_bag sum f32 V={V} D={D} n={n} bags={B}", ms=t.median,
                torch_ms=tt.median, gbs=H.gbs(nbytes, t.median), ok=err < 1e-5, err=err)


def run(out_dir=None, quick: bool = False, log=print) -> dict:
    torch = H._torch()
    copy = H.copy_bandwidth(2 ** 28 if quick else 2 ** 30)

    def line(r):
        r["of_copy"] = r["gbs"] / copy["gbs"]
        return (f"{r['case']}: {r['ms']:.3f} ms (torch {r['torch_ms']:.3f}) "
                f"{r['gbs']:.0f} GB/s ({100 * r['of_copy']:.0f}% of copy) ok={r['ok']}")

    rows = H.group_rows("segment", (lambda: [_embedding_bw_row(torch, quick)],
                                    lambda: _segment_sum_rows(torch, quick),
                                    lambda: [_embedding_bag_row(torch, quick)]),
                        line, log, empty_cache=True)
    return H.save_json(dict(rows=rows, copy_gbs=copy["gbs"]), out_dir, "bench_segment.json")


def markdown(res: dict) -> str:
    out = []
    for r in res["rows"]:
        if "error" in r:
            out.append((r["case"], "—", "—", "—", "—", "—", r["error"]))
            continue
        out.append((r["case"], H.fmt(r["ms"], ".3f"), H.fmt(r["torch_ms"], ".3f"),
                    H.fmt(r["torch_ms"] / r["ms"]), H.fmt(r["gbs"], ".0f"),
                    H.fmt(100 * r["of_copy"], ".0f") + "%", "ok" if r["ok"] else "FAIL"))
    return (H.md_table(("case", "ours ms", "torch ms", "vs torch", "GB/s", "of copy", "check"),
                       out) + f"\ncopy: {res['copy_gbs']:.0f} GB/s\n")


SECTIONS = (H.Section("segment", "Embedding and segment reductions", run, markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
