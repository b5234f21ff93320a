"""Shared GPU timing harness for the benchmarks (method: /work/.library/device/METHOD.md).

* :func:`bench` — device time of a callable: CUDA events around batches of back-to-back calls,
  warm-up first, many samples, median / min / p90 in milliseconds per call.  Calls rotate over
  several argument sets so the working set exceeds the 50 MB L2 (:func:`n_sets` says how many).
* :func:`copy_bandwidth` — the device-to-device copy ceiling of this run (bytes read + written,
  1 GiB buffers), the denominator of every "fraction of copy".
* :func:`host_us` — host µs per call: N back-to-back enqueues timed with ``perf_counter`` after a
  warm-up, one synchronize at the end.  On a tiny problem this is the pure host cost of the path.
* :func:`gbs`, :func:`rel_err`, :func:`md_table` — GB/s, ‖out − ref‖/‖ref‖ (NaN-aware) and a
  Markdown table writer.
* :class:`Section`, :func:`case_rows`, :func:`group_rows`, :func:`save_json`, :func:`cli_main` —
  the ``run()`` / ``main()`` plumbing the per-family benchmark modules share (one results table
  per section, rows under :func:`safe`, the JSON file, the ``--quick`` / ``--out`` /
  ``--sections`` command line).

Importable without a GPU (torch is imported lazily), so ``--help`` works anywhere.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Callable, List, NamedTuple, Optional, Sequence

L2_BYTES = 50 * 2**20  # H100 L2


def _torch():
    import torch

    return torch


@dataclass
class Timing:
    """Milliseconds per call over ``samples`` samples (each the mean of ``batch`` calls)."""

    median: float
    min: float
    p90: float
    samples: int
    batch: int

    def as_dict(self) -> dict:
        return asdict(self)


class Section(NamedTuple):
    """One results table of a family's benchmark module: ``key`` names it in run_all's
    bench.json (and on ``--sections``), ``title`` heads it in the RESULTS.md fragment,
    ``run(out_dir, quick, log)`` measures it (writing its own JSON file into ``out_dir``) and
    ``markdown(result)`` renders the table."""

    key: str
    title: str
    run: Callable
    markdown: Callable


def n_sets(nbytes: int, lo: int = 1, hi: int = 8) -> int:
    """How many independent argument sets keep ``nbytes``-per-call rotations out of L2 (3 × L2)."""
    return max(lo, min(hi, -(-3 * L2_BYTES // max(int(nbytes), 1))))


def bench(fn: Callable, sets: Sequence[tuple] = ((),), reps: int = 25, warm: int = 3,
          batch: int = 8, stream=None) -> Timing:
    """Time ``fn(*sets[i % len(sets)])``.  Each sample records an event, enqueues ``batch`` calls
    back to back (rotating through ``sets``), records a second event and waits for it; the sample
    is elapsed / batch.  Batching lets host overhead overlap the device work as in real use; for
    problems where the host is slower than the kernel the result is host-bound (read it together
    with :func:`host_us`).  ``warm`` batches run first (module load, allocator, clocks)."""
    torch = _torch()
    sets = list(sets) or [()]
    k = 0
    for _ in range(warm * batch):
        fn(*sets[k % len(sets)])
        k += 1
    torch.cuda.synchronize()
    ts: List[float] = []
    s = stream if stream is not None else torch.cuda.current_stream()
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record(s)
        for _ in range(batch):
            fn(*sets[k % len(sets)])
            k += 1
        b.record(s)
        b.synchronize()
        ts.append(a.elapsed_time(b) / batch)
    ts.sort()
    p90 = ts[min(len(ts) - 1, int(math.ceil(0.9 * len(ts))) - 1)]
    return Timing(statistics.median(ts), ts[0], p90, len(ts), batch)


def time_ms(fn: Callable, sets: Sequence[tuple] = ((),), reps: int = 25, warm: int = 3,
            batch: int = 8) -> float:
    """Median milliseconds per call (:func:`bench`'s median)."""
    return bench(fn, sets, reps=reps, warm=warm, batch=batch).median


def copy_bandwidth(nbytes: int = 2**30, reps: int = 10) -> dict:
    """Device-to-device copy ceiling: ``dst.copy_(src)`` on ``nbytes`` buffers (1 GiB), GB/s
    counting bytes read + written (2 × nbytes), median / best of ``reps`` samples.  The source is
    filled with random bytes (never time on zeros)."""
    torch = _torch()
    src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    t = bench(lambda: dst.copy_(src), [()], reps=reps, warm=6, batch=2)
    if not torch.equal(src[:: 2**20], dst[:: 2**20]):
        raise RuntimeError("copy_bandwidth: the copy did not copy")
    del src, dst
    torch.cuda.empty_cache()
    return dict(gbs=2 * nbytes / t.median / 1e6, gbs_best=2 * nbytes / t.min / 1e6,
                ms=t.median, nbytes=2 * nbytes)


def gbs(nbytes: int, ms: float) -> float:
    """Bytes per call and milliseconds per call → GB/s (1e9 bytes)."""
    return nbytes / ms / 1e6 if ms > 0 else float("nan")


def host_us(fn: Callable, n: int = 2000, warm: int = 100) -> float:
    """Host µs per call: ``warm`` calls, synchronize, then ``n`` back-to-back calls timed with
    ``perf_counter`` (enqueue only), then one synchronize (outside the timed region; the device
    must keep up, so use a tiny problem).  The result is the host cost of the call path."""
    torch = _torch()
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


def host_us_best(fn: Callable, n: int = 2000, trials: int = 3) -> dict:
    """:func:`host_us` ``trials`` times: median and min (VM noise is one-sided)."""
    v = sorted(host_us(fn, n) for _ in range(trials))
    return dict(median=statistics.median(v), min=v[0], trials=v)


def rel_err(out, ref) -> float:
    """‖out − ref‖ / ‖ref‖ in float64; inf if ``out`` has any NaN/inf (unwritten or broken)."""
    torch = _torch()
    o = out.detach().to(torch.float64)
    r = ref.detach().to(torch.float64)
    if not bool(torch.isfinite(o).all()):
        return float("inf")
    den = r.norm().item()
    num = (o - r).norm().item()
    return num / den if den > 0 else num


def check_cuda() -> None:
    """Raise if the device has a sticky error (after a batch of launches)."""
    torch = _torch()
    torch.cuda.synchronize()


def fmt(v, spec: str = ".2f", none: str = "—") -> str:
    if v is None:
        return none
    if isinstance(v, float) and math.isnan(v):
        return "nan"
    if isinstance(v, (int, float)):
        return format(v, spec)
    return str(v)


def md_table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A GitHub Markdown table (cells are str()-ed; pipes escaped)."""
    def cell(x) -> str:
        return str(x).replace("|", "\\|")

    out = ["| " + " | ".join(cell(h) for h in headers) + " |",
           "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def device_info() -> dict:
    """GPU name, driver/CUDA versions and library versions for the results header."""
    torch = _torch()
    info = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__,
                cuda=torch.version.cuda, sm_count=torch.cuda.get_device_properties(0).multi_processor_count)
    try:
        from cuda.bindings import driver

        err, v = driver.cuDriverGetVersion()
        info["driver_cuda"] = f"{v // 1000}.{(v % 1000) // 10}" if int(err) == 0 else None
    except Exception:
        info["driver_cuda"] = None
    for mod in ("cuda.core", "cuda.bindings", "numpy", "cupy"):
        try:
            m = __import__(mod, fromlist=["__version__"])
            info[mod] = getattr(m, "__version__", "?")
        except Exception:
            info[mod] = None
    return info


def safe(fn: Callable, *a, **kw):
    """``fn(*a, **kw)`` or ``(None, 'ExcType: message')`` — benchmarks report failures as rows."""
    try:
        return fn(*a, **kw), None
    except Exception as e:  # noqa: BLE001 - any failure becomes a 'not available' row
        msg = f"{type(e).__name__}: {e}".splitlines()[0]
        return None, msg[:300]


def bytes_of(*tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


def optional_float(x) -> Optional[float]:
    return None if x is None else float(x)


def case_rows(tag: str, cases: Sequence[tuple], case_fn: Callable, error_row: Callable,
              copy_gbs: float, log=print) -> list:
    """One row per case: ``case_fn(torch, copy_gbs, *case)`` under :func:`safe`, or
    ``error_row(case, err)`` when it failed; each row is logged as ``"{tag}: {row}"`` and the
    CUDA cache emptied after it."""
    torch = _torch()
    rows = []
    for c in cases:
        r, err = safe(case_fn, torch, copy_gbs, *c)
        rows.append(r or error_row(c, err))
        log(f"{tag}: {rows[-1]}")
        torch.cuda.empty_cache()
    return rows


def group_rows(tag: str, fns: Sequence[Callable], line: Callable, log=print,
               empty_cache: bool = False) -> list:
    """The rows of each ``fn()`` (a list of row dicts) under :func:`safe`, in order: a failing
    ``fn`` gives one ``dict(case="error", error=...)`` row (logged ``"{tag}: {err}"``), each
    other row is logged as ``"{tag}: " + line(row)`` (``line`` may add fields to the row);
    ``empty_cache`` empties the CUDA cache after each ``fn``."""
    rows = []
    for fn in fns:
        res, err = safe(fn)
        if err:
            rows.append(dict(case="error", error=err))
            log(f"{tag}: {err}")
        else:
            for r in res:
                log(f"{tag}: {line(r)}")
            rows += res
        if empty_cache:
            _torch().cuda.empty_cache()
    return rows


def speed_table(res: dict, check: Callable) -> str:
    """The Markdown table of ``res["rows"]`` (case, shape, dtype, ms, GB/s, fraction of copy,
    torch's fraction, speed-up over torch, ``check(row)``); a row with ``error`` shows dashes and
    the error."""
    body = []
    for r in res["rows"]:
        if r.get("error"):
            body.append((r["case"], r["shape"], r["dtype"], "—", "—", "—", "—", "—", r["error"]))
            continue
        body.append((r["case"], r["shape"], r["dtype"], fmt(r["ms"], ".3f"), f"{r['gbs']:.0f}",
                     fmt(r["frac"]), fmt(r["torch_frac"]), fmt(r["torch_ms"] / r["ms"]),
                     check(r)))
    return md_table(("case", "shape", "dtype", "ms", "GB/s", "/ copy", "torch / copy",
                     "vs torch", "check"), body) + "\n"


def ok_err(r: dict) -> str:
    """A speed table's check column for a row with ``ok`` and a relative error ``err``."""
    return ("ok" if r["ok"] else "FAIL") + f" {r['err']:.0e}"


def copy_speed_markdown(res: dict) -> str:
    """The run's copy ceiling (``res["copy_gbs"]``) over :func:`speed_table` with
    :func:`ok_err` checks."""
    return f"copy ceiling {res['copy_gbs']:.0f} GB/s\n\n" + speed_table(res, ok_err)


def ms_line(r: dict) -> str:
    """The log line of a row of :func:`ms_table`: case, ms, torch ms, ok."""
    return f"{r['case']}: {r['ms']:.3f} ms (torch {r['torch_ms']:.3f}) ok={r['ok']}"


def ms_table(res: dict) -> str:
    """The Markdown table of ``res["rows"]`` (case, elements ``n``, ours ms, torch ms, speed-up
    over torch, ok / FAIL); a row with ``error`` shows dashes and the error."""
    out = []
    for r in res["rows"]:
        if "error" in r:
            out.append((r["case"], "—", "—", "—", "—", r["error"]))
            continue
        out.append((r["case"], f"{r['n']:,}", fmt(r["ms"], ".3f"), fmt(r["torch_ms"], ".3f"),
                    fmt(r["torch_ms"] / r["ms"]), "ok" if r["ok"] else "FAIL"))
    return md_table(("case", "elements", "ours ms", "torch ms", "vs torch", "check"), out) + "\n"


def save_json(res: dict, out_dir: Optional[str], name: str) -> dict:
    """Write ``res`` to ``out_dir/name`` (indented JSON; nothing without ``out_dir``); returns
    ``res``."""
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, name), "w") as f:
            json.dump(res, f, indent=1, default=str)
    return res


def cli_main(doc: str, sections: Sequence[Section], argv=None) -> None:
    """The command line of a family's benchmark module: ``--quick``, ``--out DIR``,
    ``--sections KEY,...`` (default all, in order); needs CUDA; prints
    ``markdown(run(out, quick))`` of each chosen section.  ``doc``'s first line is the
    description."""
    keys = [s.key for s in sections]
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--sections", default=",".join(keys),
                    help="comma-separated subset of " + ",".join(keys))
    a = ap.parse_args(argv)
    chosen = [k for k in a.sections.split(",") if k]
    unknown = sorted(set(chosen) - set(keys))
    if unknown:
        ap.error(f"unknown section(s) {','.join(unknown)}; choose from {','.join(keys)}")
    check_cuda()
    for s in sections:
        if s.key in chosen:
            print(s.markdown(s.run(a.out, a.quick)))
