"""Decode attention benchmark on the GPU host: FlashDecodePlan (contiguous and paged KV caches)
against torch SDPA's flash and cuDNN backends (``torch.nn.attention.sdpa_kernel``, GQA through
``enable_gqa``) in the same run.  Usage (GPU host, from the repo root):
``python3 -m benchmarks.attention_decode [--quick] [--out DIR]``; run_all may call
``run(out_dir, quick, log)`` (section ``attention_decode``).

Cases: one query token per sequence (Sq = 1), 16 / 32 / 64 sequences of 4096 or 8192 cached
keys, 32 query heads over 8 kv heads (GQA 4), head dim 128, bf16; every sequence full (SDPA
has no ragged lengths).  The figure of merit is the KV read: B·L·Hk·D·2 bytes (K and V) per
call, in GB/s and as a fraction of :data:`PEAK` (3.0 TB/s, the H100 SXM's HBM3) and of this
run's measured copy ceiling.  Times are CUDA-event medians of batches of back-to-back calls
after a warm-up (benchmarks/harness.py: ``bench``).  Our output is checked once per case (NaN
poisoned first) against a float64 reference of two sequences (‖out − ref‖/‖ref‖); SDPA is
checked against ours.  A provider that cannot run a case (e.g. a backend without GQA) gives an
error row.
"""

from __future__ import annotations

import math

from . import harness as H

#: bytes/s the KV read is reported against (H100 SXM HBM3)
PEAK = 3.0e12
HQ, HK, D, DT = 32, 8, 128, "bfloat16"
CASES = [(16, 4096), (16, 8192), (32, 4096), (32, 8192), (64, 4096), (64, 8192)]
QUICK = [(16, 4096), (64, 8192)]
TOL = 1e-2          # bf16 output


def _ref_rows(torch, q, k, v, nseq=2):
    """float64 attention of the first ``nseq`` sequences (q (B, 1, Hq, D), k / v (B, L, Hk,
    D)): (nseq, 1, Hq, D)."""
    qd = q[:nseq].double()
    kd = k[:nseq].double().repeat_interleave(HQ // HK, dim=2)
    vd = v[:nseq].double().repeat_interleave(HQ // HK, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", qd, kd) / math.sqrt(D)
    p = torch.softmax(s, -1)
    return torch.einsum("bhqk,bkhd->bqhd", p, vd)


def _paged(torch, k, v, page):
    """(k_pages, v_pages, block_table) holding k / v (B, L, Hk, D) in shuffled pages."""
    B, L = k.shape[:2]
    per = L // page
    perm = torch.randperm(B * per, device="cuda").to(torch.int32)
    table = perm.view(B, per)
    kp = torch.empty((B * per, page) + k.shape[2:], dtype=k.dtype, device="cuda")
    vp = torch.empty_like(kp)
    kp[table.flatten().long()] = k.reshape(B * per, page, *k.shape[2:])
    vp[table.flatten().long()] = v.reshape(B * per, page, *v.shape[2:])
    return kp, vp, table


def _case(torch, copy_gbs, B, L):
    from baracuda_dsl.ops.attention.decode import (FlashDecodeArgs, FlashDecodeDescriptor,
                                                   FlashDecodePlan)

    tdt = getattr(torch, DT)
    kv_bytes = 2 * B * L * HK * D * tdt.itemsize
    nsets = H.n_sets(kv_bytes)
    sets = []
    for i in range(nsets):
        q = torch.randn(B, 1, HQ, D, device="cuda", dtype=tdt)
        k = torch.randn(B, L, HK, D, device="cuda", dtype=tdt)
        v = torch.randn(B, L, HK, D, device="cuda", dtype=tdt)
        sets.append((q, k, v, torch.empty_like(q)))
    seqlens = torch.full((B,), L, dtype=torch.int32, device="cuda")
    rows = []

    def row(provider, t, err, relerr=None, note=None):
        if t is None:
            return dict(case="decode", shape=f"B{B} L{L}", dtype=DT, provider=provider,
                        error=err)
        g = H.gbs(kv_bytes, t.median)
        status = "ok"
        if relerr is not None and not relerr <= TOL:
            status = f"FAIL (rel err {relerr:.1e})"
        return dict(case="decode", shape=f"B{B} L{L}", dtype=DT, provider=provider,
                    bytes=kv_bytes, ms=t.median, ms_min=t.min, gbs=g, frac_peak=g * 1e9 / PEAK,
                    frac_copy=g / copy_gbs, relerr=relerr, note=note, status=status)

    # ours: contiguous cache (heuristic splits)
    desc = FlashDecodeDescriptor(B, 1, HQ, HK, D, L, dtype="bf16", causal=True)
    plan = FlashDecodePlan.select(desc)
    ws = torch.empty(max(plan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    wsa = ws if plan.workspace_size() else None
    q, k, v, o = sets[0]
    o.fill_(float("nan"))
    plan.run(FlashDecodeArgs(q, k, v, seqlens, o), workspace=wsa)
    torch.cuda.synchronize()
    ref = _ref_rows(torch, q, k, v)
    err = H.rel_err(o[:2], ref)
    note = f"{plan.num_splits} splits, {plan.sku()}"
    t, e = H.safe(H.bench, lambda q_, k_, v_, o_: plan.run(
        FlashDecodeArgs(q_, k_, v_, seqlens, o_), workspace=wsa), sets, reps=20)
    rows.append(row("ours", t, e, err, note))

    # ours: paged cache, pages of 256 keys, shuffled block table
    pdesc = FlashDecodeDescriptor(B, 1, HQ, HK, D, L, dtype="bf16", paged=True,
                                  num_pages=B * (L // 256), page_size=256, pages_per_seq=L // 256)
    pplan = FlashDecodePlan.select(pdesc)
    pws = torch.empty(max(pplan.workspace_size(), 1), dtype=torch.uint8, device="cuda")
    pwsa = pws if pplan.workspace_size() else None
    psets = []
    for q_, k_, v_, o_ in sets:
        kp, vp, table = _paged(torch, k_, v_, 256)
        psets.append((q_, kp, vp, table, o_))
    q_, kp, vp, table, o_ = psets[0]
    o_.fill_(float("nan"))
    pplan.run(FlashDecodeArgs(q_, kp, vp, seqlens, o_, None, table), workspace=pwsa)
    torch.cuda.synchronize()
    perr = H.rel_err(o_[:2], ref)
    t, e = H.safe(H.bench, lambda a, b, c, d, f: pplan.run(
        FlashDecodeArgs(a, b, c, seqlens, f, None, d), workspace=pwsa), psets, reps=20)
    rows.append(row("ours paged 256", t, e, perr, f"{pplan.num_splits} splits"))
    del psets, kp, vp

    # torch SDPA backends: q (B, Hq, 1, D), k / v (B, Hk, L, D) views of the same caches
    from torch.nn.attention import SDPBackend, sdpa_kernel

    tsets = [(q_.transpose(1, 2), k_.transpose(1, 2), v_.transpose(1, 2))
             for q_, k_, v_, _ in sets]
    for name, backend in (("torch sdpa flash", SDPBackend.FLASH_ATTENTION),
                          ("torch sdpa cudnn", SDPBackend.CUDNN_ATTENTION)):
        def sdpa(a, b, c, backend=backend):
            with sdpa_kernel(backend):
                return torch.nn.functional.scaled_dot_product_attention(a, b, c,
                                                                        enable_gqa=True)

        def first():
            out = sdpa(*tsets[0])
            torch.cuda.synchronize()
            return H.rel_err(out.transpose(1, 2)[:2], ref)

        serr, e = H.safe(first)
        if e is not None:
            rows.append(row(name, None, e))
            continue
        t, e = H.safe(H.bench, sdpa, tsets, reps=20)
        rows.append(row(name, t, e, serr))
    return rows


def run(out_dir=None, quick: bool = False, log=print) -> dict:
    torch = H._torch()
    copy = H.copy_bandwidth()
    log(f"attention_decode: copy ceiling {copy['gbs']:.0f} GB/s; peak {PEAK / 1e9:.0f} GB/s")
    fns = [lambda B=B, L=L: _case(torch, copy["gbs"], B, L) for B, L in (QUICK if quick
                                                                           else CASES)]

    def line(r):
        if r.get("error"):
            return f"{r.get('shape')} {r.get('provider')}: {r['error']}"
        return (f"{r['shape']} {r['provider']}: {r['ms']:.3f} ms {r['gbs']:.0f} GB/s = "
                f"{r['frac_peak']:.2f} of 3.0 TB/s ({r['frac_copy']:.2f} of copy) "
                f"{r['status']} {r.get('note') or ''}")

    rows = H.group_rows("attention_decode", fns, line, log, empty_cache=True)
    return H.save_json(dict(copy=copy, peak=PEAK, heads=(HQ, HK), head_dim=D, rows=rows),
                       out_dir, "bench_attention_decode.json")


def markdown(res: dict) -> str:
    body = []
    for r in res["rows"]:
        if r.get("case") == "error" or r.get("error"):
            body.append((r.get("shape", "—"), r.get("provider", "—"), "—", "—", "—", "—",
                         r.get("error")))
            continue
        body.append((r["shape"], r["provider"], H.fmt(r["ms"], ".3f"), f"{r['gbs']:.0f}",
                     H.fmt(r["frac_peak"]), H.fmt(r["frac_copy"]),
                     r["status"] + (f" ({r['note']})" if r.get("note") else "")))
    head = (f"Sq = 1, Hq {res['heads'][0]} / Hk {res['heads'][1]}, D {res['head_dim']}, bf16; "
            f"KV bytes read per call; copy ceiling {res['copy']['gbs']:.0f} GB/s.\n\n")
    return head + H.md_table(("case", "provider", "ms", "KV GB/s", "/ 3.0 TB/s", "/ copy",
                              "check"), body) + "\n"


SECTIONS = (H.Section("attention_decode", "Decode attention (split-KV)", run, markdown),)


def main(argv=None):
    H.cli_main(__doc__, SECTIONS, argv)


if __name__ == "__main__":
    main()
