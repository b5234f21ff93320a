"""Compare two ``run_all`` results (``bench.json``) row by row: device time new / base per
section (median and range over the matched rows) and, where a row has a torch / cuBLAS time
measured in the same process, the change of the vs-torch ratio.  No GPU needed.

    python3 benchmarks/scripts/compare_runs.py NEW/bench.json BASE/bench.json [--rows]

Rows are matched by their identifying fields (op, case, shape, dtype, provider, layout, path,
arg, m, n, k, key); the time compared is ``ms`` (else ``us``).  Sections renamed between the
trees are matched through ``ALIAS`` (the pre-refactor tree had one ``counting`` section for
unique and histogram).  Prints the Markdown table of benchmarks/RESULTS.md's issue-15 comparison
(``section | rows | median new / base | range | note``; ``--skip`` / ``--vs-torch`` pick the
sections and notes, defaults as in that table), then the host-µs and launch rows of the two runs;
``--rows`` also lists each section's slowest and fastest matched row.
"""

from __future__ import annotations

import argparse
import json
import statistics

ALIAS = {"unique": "counting", "histogram": "counting"}
KEYS = ("op", "case", "shape", "dtype", "provider", "layout", "path", "arg", "m", "n", "k", "key")


def row_key(r: dict) -> tuple:
    return tuple((k, str(r.get(k))) for k in KEYS if k in r)


def _time(r: dict):
    for f in ("ms", "us"):
        v = r.get(f)
        if isinstance(v, (int, float)) and v > 0:
            return f, float(v)
    return None, None


def compare(new: dict, base: dict, skip=("launch",), vs_torch=("gemm", "gemm_lowp")) -> list:
    """Per section (``skip``: left out; the launch study's ``us`` is host time): dict(section,
    rows, median, lo, hi, vs_torch=(median, lo, hi) for the sections of ``vs_torch`` (None
    otherwise), worst, best)."""
    out = []
    for sec, v in new.items():
        if not isinstance(v, dict) or "rows" not in v or sec in skip:
            continue
        b = base.get(sec) or base.get(ALIAS.get(sec, ""), {})
        bmap = {row_key(r): r for r in (b.get("rows") or []) if isinstance(r, dict)}
        ratios, vs = [], []
        for r in v["rows"]:
            if not isinstance(r, dict):
                continue
            br = bmap.get(row_key(r))
            if br is None:
                continue
            f, t = _time(r)
            if f is None or not isinstance(br.get(f), (int, float)) or br[f] <= 0:
                continue
            ratios.append((t / br[f], row_key(r)))
            tt, bt = r.get("torch_ms"), br.get("torch_ms")
            if sec in vs_torch and all(isinstance(x, (int, float)) and x > 0
                                       for x in (tt, bt, r.get("ms"), br.get("ms"))):
                vs.append((tt / r["ms"]) / (bt / br["ms"]))
        if not ratios:
            continue
        rs = sorted(x[0] for x in ratios)
        out.append(dict(section=sec, rows=len(rs), median=statistics.median(rs), lo=rs[0],
                        hi=rs[-1], vs_torch=(statistics.median(vs), min(vs), max(vs)) if vs
                        else None, worst=max(ratios), best=min(ratios)))
    return out


def markdown(res: list) -> str:
    lines = ["| section | rows | median new / base (device ms) | range | note |",
             "|---|---|---|---|---|"]
    for s in res:
        note = ""
        if s["vs_torch"]:
            m, lo, hi = s["vs_torch"]
            note = f"vs-torch ratio new / base: median {m:.3f} ({lo:.3f}–{hi:.3f})"
        lines.append(f"| {s['section']} | {s['rows']} | {s['median']:.3f} | "
                     f"{s['lo']:.3f}–{s['hi']:.3f} | {note} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("new", help="bench.json of the tree under test")
    ap.add_argument("base", help="bench.json of the baseline tree")
    ap.add_argument("--rows", action="store_true", help="slowest / fastest row per section")
    ap.add_argument("--skip", default="launch",
                    help="sections left out of the table (default launch: host time)")
    ap.add_argument("--vs-torch", default="gemm,gemm_lowp",
                    help="sections whose vs-torch ratio change goes in the note column")
    a = ap.parse_args(argv)
    with open(a.new) as f:
        new = json.load(f)
    with open(a.base) as f:
        base = json.load(f)
    res = compare(new, base, skip=tuple(a.skip.split(",")),
                  vs_torch=tuple(a.vs_torch.split(",")))
    print(markdown(res))
    if a.rows:
        for s in res:
            print(s["section"], "slowest", round(s["worst"][0], 3), dict(s["worst"][1]),
                  "| fastest", round(s["best"][0], 3), dict(s["best"][1]))
    for sec in ("norms", "elementwise"):
        bm = {(h.get("op"), h.get("shape"), h.get("n")): h
              for h in (base.get(sec) or {}).get("host", [])}
        for h in (new.get(sec) or {}).get("host", []):
            bh = bm.get((h.get("op"), h.get("shape"), h.get("n")))
            if bh and h.get("ours_us") and bh.get("ours_us"):
                print(f"host {sec:11} {h.get('op')!s:28} new {h['ours_us']:6.2f} (torch "
                      f"{h['torch_us']:6.2f})  base {bh['ours_us']:6.2f} (torch "
                      f"{bh['torch_us']:6.2f})")
    blaunch = {x["key"]: x for x in (base.get("launch") or {}).get("rows", [])}
    for r in (new.get("launch") or {}).get("rows", []):
        br = blaunch.get(r["key"])
        if br and r.get("us") and br.get("us"):
            print(f"launch {r['key']:4} {r['path'][:60]:60} new {r['us']:6.2f} base "
                  f"{br['us']:6.2f}")
    if "copy" in new and "copy" in base:
        print("copy GB/s new", round(new["copy"]["gbs"]), "base", round(base["copy"]["gbs"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
