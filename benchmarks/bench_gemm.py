"""GEMM benchmarks: GemmPlan bf16 / f16 against torch.matmul (cuBLAS), measured interleaved.

GemmPlan (f32 accumulate) and torch run in the same process on the GPU host.  Usage::

    python3 benchmarks/bench_gemm.py [--quick] [--variants] [--dtypes bfloat16,float16]
                                     [--match SUBSTR,...] [--out DIR]

run_all.py calls ``run(out, quick, log)`` (family ``gemm``).  Cases, row-major a (m, k):

=====================  ======================================================================
square (NN)            m = n = k ∈ {2048, 4096, 6144, 8192}, b a row-major (k, n) matrix
LLM (NT)               m ∈ {1, 16, 128, 4096, 16384} × (n, k) ∈ {(4096, 4096), (14336, 4096),
                       (4096, 14336), (128256, 4096)}; b = w.T of a row-major (n, k) weight
                       (the nn.Linear layout)
=====================  ======================================================================

Per row: the default plan's kernel (``plan.kernel_for(args)``: template and tile), ms, TFLOP/s
(2·m·n·k / time), cuBLAS TFLOP/s, "vs cuBLAS" = torch time / ours (1.0 = parity) and the
relative Frobenius error of our c against torch's (must be < 2e-2; checked before timing).
``--variants`` adds, on sm90a devices, one column per forced kernel (``tile=`` wgmma128x128,
wgmma128x256, wgmma128x256c2 and the mma.sync tile), timed in the same interleaved rounds.
``--quick``: bf16 only, squares 2048 / 4096 and the (4096, 4096) LLM shapes (7 rows).

Measurement (:func:`interleaved`, also used by bench_gemm_lowp.py): a fixed warm-up of every
callable, then rounds that alternate blocks of back-to-back calls (ours, torch, ours, torch, ...;
each block bracketed by CUDA events), so clock / power drift hits every column alike; the
median block time per call of each callable is reported.  Block size and round count adapt so
one row costs about ``ROW_BUDGET_S`` seconds of timing.  Problems whose operands fit in L2
rotate over several operand sets (METHOD.md: repeated runs over one buffer measure the cache).
Rows whose kernel is faster than the host path (m = 1, 16) measure the enqueue rate of each
side (plan.run vs torch.mm dispatch), as in real use.  Budget on an H100: default run (48 rows)
about 1 minute (well under 2), ``--variants`` about 2-3 minutes, ``--quick`` about 10 s —
assuming every SKU is already in the kernel cache (a cache miss compiles at first use).
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness as H  # noqa: E402

SQUARES = (2048, 4096, 6144, 8192)
LLM_M = (1, 16, 128, 4096, 16384)
LLM_NK = ((4096, 4096), (14336, 4096), (4096, 14336), (128256, 4096))
DTYPES = ("bfloat16", "float16")
#: seconds of timed device work per row (all columns together), warm-up excluded
ROW_BUDGET_S = 0.6
#: tolerated ‖ours − torch‖ / ‖torch‖ (both round the output to 8 / 11 mantissa bits)
TOL = 2e-2
#: ``--variants`` columns: (json key, header, forced ``tile=``; None = the mma.sync tile rule)
VARIANTS = (("w128", "wgmma128x128", "wgmma128x128"), ("w256", "wgmma128x256", "wgmma128x256"),
            ("c2", "wgmma128x256c2", "wgmma128x256c2"), ("mma", "mma.sync", None))


# -- measurement (shared with bench_gemm_lowp.py) --------------------------------------------
def rotating(fn, sets):
    """A zero-argument callable that calls ``fn(*sets[i])`` with i cycling over ``sets``."""
    it = itertools.cycle(list(sets))
    return lambda: fn(*next(it))


def interleaved(fns, *, warm: int = 3, budget_s: float = ROW_BUDGET_S, block_ms: float = 2.0,
                max_batch: int = 64, min_rounds: int = 5, max_rounds: int = 41):
    """Time every zero-argument callable of ``fns`` (e.g. ours, torch, variants) in alternating
    blocks on the current stream and return one :class:`harness.Timing` per callable (ms per
    call: median / min / p90 over the rounds).

    ``warm`` calls of each callable run first (module load, cuBLAS heuristics, allocator,
    clocks), then one calibration block of 2 calls each estimates the time per call.  The batch
    (calls per block, the same for every callable so host overhead is treated alike) makes the
    slowest callable's block at least ``block_ms`` (at most ``max_batch`` calls); the number of
    rounds fits ``budget_s`` (between ``min_rounds`` and ``max_rounds``).  Round r times the
    callables in order r, r+1, ... (rotated), so no callable always follows the same one.

    Device time, not host time: every timed block is queued behind a GPU sleep kernel long
    enough to cover the host's enqueueing of the whole block (``torch.cuda._sleep``), so the
    start event fires only when all of the block's launches are already queued — small problems
    (m = 1, 16) are not timed at the speed of the Python launch path.  That host cost is
    reported separately: ``Timing.host_us`` = median host µs per call (enqueue only)."""
    import time as _time

    torch = H._torch()
    s = torch.cuda.current_stream()
    fns = list(fns)
    for f in fns:
        for _ in range(warm):
            f()
    torch.cuda.synchronize()
    sleep = [0]

    def block(f, n):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        if sleep[0]:
            torch.cuda._sleep(sleep[0])
        e0.record(s)
        t0 = _time.perf_counter()
        for _ in range(n):
            f()
        host = (_time.perf_counter() - t0) / n * 1e6
        e1.record(s)
        e1.synchronize()
        return e0.elapsed_time(e1) / n, host

    host = [block(f, 4)[1] for f in fns]           # host µs per call (enqueue)
    # GPU clock cycles covering the enqueue of one block of the slowest-to-enqueue callable
    # (~2 GHz; 2x margin), filled in once the batch is known
    est = [block(f, 2)[0] for f in fns]
    slow = max(max(est), 1e-4)
    batch = max(1, min(max_batch, math.ceil(block_ms / slow)))
    sleep[0] = int(2 * max(host) * 1e-6 * batch * 2e9) + 100_000
    est = [block(f, batch)[0] for f in fns]          # device time per call, queue prefilled
    round_ms = sum(est) * batch + sleep[0] / 2e6 * len(fns)
    rounds = int(max(min_rounds, min(max_rounds, budget_s * 1e3 / max(round_ms, 1e-3))))
    ts = [[] for _ in fns]
    hs = [[] for _ in fns]
    for r in range(rounds):
        for j in range(len(fns)):
            i = (r + j) % len(fns)
            t, h = block(fns[i], batch)
            ts[i].append(t)
            hs[i].append(h)
    out = []
    for t, h in zip(ts, hs):
        t.sort()
        p90 = t[min(len(t) - 1, int(math.ceil(0.9 * len(t))) - 1)]
        tm = H.Timing(statistics.median(t), t[0], p90, len(t), batch)
        tm.host_us = statistics.median(h)
        out.append(tm)
    return out


def rel_err_chunked(out, ref, rows: int = 0) -> float:
    """‖out − ref‖ / ‖ref‖ accumulated in float64 over row blocks of about 256 MB (a 16384 ×
    128256 output would need 50 GB as whole float64 copies); inf when out has NaN / inf."""
    torch = H._torch()
    m = out.shape[0]
    rows = rows or max(1, (2 ** 25) // max(1, out.shape[1]))
    num = den = 0.0
    for i in range(0, m, rows):
        o = out[i:i + rows].to(torch.float64)
        r = ref[i:i + rows].to(torch.float64)
        if not bool(torch.isfinite(o).all()):
            return float("inf")
        num += float(((o - r) ** 2).sum())
        den += float((r ** 2).sum())
        del o, r
    return math.sqrt(num) / math.sqrt(den) if den > 0 else math.sqrt(num)


def n_sets_for(*nbytes) -> int:
    """Operand sets to rotate: enough to exceed L2 three times when one set fits (harness)."""
    return H.n_sets(sum(nbytes), hi=6)


def kernel_name(tmpl, knobs) -> str:
    """``template:tile`` (``c2`` appended for the 2-CTA cluster SKU)."""
    tile = knobs.get("tile", "simt")
    if int(knobs.get("cluster", 1)) > 1:
        tile += f"c{knobs['cluster']}"
    return f"{tmpl.name}:{tile}"


def warm_gpu(torch, seconds: float = 0.3) -> None:
    """About ``seconds`` of back-to-back 4096² bf16 matmuls, so the first row is not timed
    at idle clocks (run_all.py warms up too; standalone runs need this)."""
    x = torch.randn((4096, 4096), device="cuda", dtype=torch.bfloat16)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            x @ x
        torch.cuda.synchronize()


def _mma_tile(m, n):
    return ("16x32" if m <= 16 else
            "128x128" if math.ceil(m / 128) * math.ceil(n / 128) >= 96 else "64x64")


def runner(torch, plan):
    """``plan.run`` bound to a workspace of ``plan.workspace_size()`` bytes (split-K plans
    need one; allocated once, outside the timed region)."""
    nbytes = plan.workspace_size()
    ws = torch.empty((max(nbytes, 1),), device="cuda", dtype=torch.uint8) if nbytes else None

    def go(args):
        plan.run(args, workspace=ws)
    return go


# -- cases -----------------------------------------------------------------------------------
def _case(torch, dtype, m, n, k, nt, variants=False):
    from baracuda_dsl.ops.gemm.gemm import GemmArgs, GemmDescriptor, GemmPlan

    tdt = getattr(torch, dtype)
    esz = torch.empty((), dtype=tdt).element_size()
    ns = n_sets_for(m * k * esz, n * k * esz, m * n * esz)
    sets = []
    for _ in range(ns):
        a = torch.randn((m, k), device="cuda", dtype=tdt)
        if nt:
            b = torch.randn((n, k), device="cuda", dtype=tdt).t()   # (k, n), k-major
        else:
            b = torch.randn((k, n), device="cuda", dtype=tdt)
        sets.append((a, b, torch.empty((m, n), device="cuda", dtype=tdt)))
    desc = GemmDescriptor(m, n, k, dtype)
    plan = GemmPlan.select(desc)
    args = [GemmArgs(a, b, c) for a, b, c in sets]
    tmpl, knobs = plan.kernel_for(args[0])
    a, b, c = sets[0]
    go = runner(torch, plan)
    go(args[0])
    ref = torch.matmul(a, b)
    err = rel_err_chunked(c, ref)
    del ref
    fns = [rotating(go, [(x,) for x in args]),
           rotating(lambda a, b, c: torch.mm(a, b, out=c), sets)]
    keys = []
    row = dict(case=f"{dtype} {'NT' if nt else 'NN'} m={m} n={n} k={k}", dtype=dtype,
               layout="NT" if nt else "NN", m=m, n=n, k=k,
               kernel=kernel_name(tmpl, knobs) + (f" split{plan.splits}"
                                                  if getattr(plan, "splits", 1) > 1 else ""),
               err=err, ok=err < TOL, sets=ns)
    if variants and plan.sku().arch.value == "sm90a":
        for key, _hdr, tile in VARIANTS:
            p2, e = H.safe(GemmPlan.select, desc, tile=tile or _mma_tile(m, n))
            if p2 is None:                      # not wired for this problem: "—"
                row[f"{key}_tflops"], row[f"{key}_err"] = None, e
                continue
            go2 = runner(torch, p2)
            _, e = H.safe(go2, args[0])
            e2 = float("inf") if e else rel_err_chunked(c, torch.matmul(a, b))
            row[f"{key}_err"] = e or e2         # a failing or wrong variant shows "nan"
            if e2 < TOL:
                fns.append(rotating(go2, [(x,) for x in args]))
                keys.append(key)
            else:
                row[f"{key}_tflops"] = float("nan")
    ts = interleaved(fns)
    fl = 2.0 * m * n * k
    row.update(host_us=ts[0].host_us, torch_host_us=ts[1].host_us)
    row.update(ms=ts[0].median, torch_ms=ts[1].median, ms_min=ts[0].min,
               torch_ms_min=ts[1].min, rounds=ts[0].samples, batch=ts[0].batch,
               tflops=fl / ts[0].median / 1e9, torch_tflops=fl / ts[1].median / 1e9)
    for key, t in zip(keys, ts[2:]):
        row[f"{key}_tflops"] = fl / t.median / 1e9
    return row


def cases(quick: bool):
    """(m, n, k, nt) of one dtype, in run order."""
    out = [(s, s, s, False) for s in (SQUARES[:2] if quick else SQUARES)]
    for n, k in (LLM_NK[:1] if quick else LLM_NK):
        out += [(m, n, k, True) for m in LLM_M]
    return out


def wanted(case: str, match) -> bool:
    """True when ``match`` (substrings, e.g. ("m=16 ", "n=128256")) is empty or one of them
    occurs in the case name (``--match``)."""
    return not match or any(x in case + " " for x in match)


def _line(r) -> str:
    s = (f"{r['case']}: {r['kernel']} {r['ms']:.4f} ms {r['tflops']:.1f} TFLOP/s (cuBLAS "
         f"{r['torch_tflops']:.1f}, x{r['torch_ms'] / r['ms']:.2f}) err {r['err']:.1e} "
         f"host {r.get('host_us', 0):.0f}/{r.get('torch_host_us', 0):.0f} us")
    extra = [f"{hdr} {H.fmt(r.get(key + '_tflops'), '.1f')}" for key, hdr, _ in VARIANTS
             if key + "_tflops" in r]
    return s + (" | " + ", ".join(extra) if extra else "")


def run(out_dir=None, quick: bool = False, log=print, variants: bool = False,
        dtypes=None, match=()) -> dict:
    """All rows (bf16 then f16; ``quick``: bf16 subset; ``match``: see :func:`wanted`), each
    under harness.safe."""
    torch = H._torch()
    t0 = time.perf_counter()
    dts = dtypes or (DTYPES[:1] if quick else DTYPES)
    warm_gpu(torch)
    rows = []
    for dt in dts:
        for m, n, k, nt in cases(quick):
            case = f"{dt} {'NT' if nt else 'NN'} m={m} n={n} k={k}"
            if not wanted(case, match):
                continue
            r, err = H.safe(_case, torch, dt, m, n, k, nt, variants)
            if err:
                r = dict(case=case, dtype=dt, error=err)
                log(f"gemm: {r['case']}: {err}")
            else:
                log(f"gemm: {_line(r)}")
            rows.append(r)
            torch.cuda.empty_cache()
    return H.save_json(dict(rows=rows, variants=variants, wall_s=time.perf_counter() - t0),
                       out_dir, "bench_gemm.json")


def markdown(res: dict) -> str:
    """One table row per case (dtype and shape in the first column)."""
    var = bool(res.get("variants"))
    hdr = ["case", "kernel", "ours ms", "TFLOP/s", "cuBLAS TFLOP/s", "vs cuBLAS",
           "host µs/call (ours / torch)"]
    if var:
        hdr += [h for _, h, _ in VARIANTS]
    hdr.append("check (rel err)")
    out = []
    for r in res["rows"]:
        if "error" in r:
            out.append([r["case"]] + ["—"] * (len(hdr) - 2) + [r["error"]])
            continue
        row = [r["case"], r["kernel"], H.fmt(r["ms"], ".4f"), H.fmt(r["tflops"], ".1f"),
               H.fmt(r["torch_tflops"], ".1f"), H.fmt(r["torch_ms"] / r["ms"]),
               f"{H.fmt(r.get('host_us'), '.0f')} / {H.fmt(r.get('torch_host_us'), '.0f')}"]
        if var:
            row += [H.fmt(r.get(key + "_tflops"), ".1f") for key, _, _ in VARIANTS]
        row.append(f"{'ok' if r['ok'] else 'FAIL'} ({r['err']:.1e})")
        out.append(row)
    return H.md_table(hdr, out) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="bf16, 7 rows (smoke test)")
    ap.add_argument("--variants", action="store_true",
                    help="also time each forced sm90a kernel (wgmma128x128 / 128x256 / "
                         "128x256c2 / mma.sync) in the same rounds")
    ap.add_argument("--dtypes", default=None,
                    help="comma-separated subset of " + ",".join(DTYPES))
    ap.add_argument("--match", default="",
                    help="comma-separated substrings of case names to run (e.g. "
                         "'n=128256,m=16 '; a trailing space ends a number); default all")
    ap.add_argument("--out", help="directory for bench_gemm.json")
    a = ap.parse_args(argv)
    dts = tuple(a.dtypes.split(",")) if a.dtypes else None
    match = tuple(x for x in a.match.split(",") if x)
    H.check_cuda()
    print(markdown(run(a.out, a.quick, variants=a.variants, dtypes=dts, match=match)))


if __name__ == "__main__":
    main()
