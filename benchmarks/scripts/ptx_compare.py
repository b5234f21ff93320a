"""Compare the PTX of two prebuilt kernel caches SKU by SKU (e.g. the tree before and after a
refactor, each prebuilt with ``python -m baracuda_dsl prebuild --arch sm90a --set all
--cache-dir DIR``).

Every cache entry records the sha256 of the PTX it was compiled from (``ptx_sha256`` in its
metadata); entries are matched by SKU id (template name + knobs digest: the file name without
its source hash), so a source edit that leaves the generated PTX alone shows as "identical".

    python3 benchmarks/scripts/ptx_compare.py BASE_CACHE NEW_CACHE [--arch sm90a] [-v]

Prints a summary per template (identical / different / only in one cache) and the totals; with
``-v`` one line per differing SKU.  Exit 1 if any SKU present in both differs.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys


def _ptx_by_sku(root: str, arch: str):
    """{(template, sku id): ptx sha256} of one cache root's entries for ``arch``."""
    from baracuda_dsl.jit.cache import decode_entry, entries

    out = {}
    for path, rel, entry_arch in entries(root):
        if entry_arch != arch:
            continue
        with open(path, "rb") as f:
            art = decode_entry(f.read())
        if art is None:
            continue
        template = rel.split("/")[2]
        sku_id = os.path.basename(path).rsplit("-", 1)[0]
        out[(template, sku_id)] = art.meta.get("ptx_sha256")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--arch", default="sm90a")
    ap.add_argument("-v", "--verbose", action="store_true")
    ns = ap.parse_args(argv)
    base, new = _ptx_by_sku(ns.base, ns.arch), _ptx_by_sku(ns.new, ns.arch)
    rows = collections.defaultdict(lambda: [0, 0, 0, 0])   # identical, differ, base-only, new-only
    for key in sorted(set(base) | set(new)):
        r = rows[key[0]]
        if key not in new:
            r[2] += 1
        elif key not in base:
            r[3] += 1
        elif base[key] == new[key] and base[key] is not None:
            r[0] += 1
        else:
            r[1] += 1
            if ns.verbose:
                print(f"DIFF {key[0]} {key[1]}")
    print(f"{'template':24s} {'identical':>9s} {'differ':>7s} {'base only':>9s} {'new only':>8s}")
    for name, (same, diff, b_only, n_only) in sorted(rows.items()):
        print(f"{name:24s} {same:9d} {diff:7d} {b_only:9d} {n_only:8d}")
    tot = [sum(r[i] for r in rows.values()) for i in range(4)]
    print(f"ptx_compare {ns.arch}: {tot[0]} identical, {tot[1]} differ, {tot[2]} only in base, "
          f"{tot[3]} only in new, of {len(set(base) | set(new))} SKUs")
    return 1 if tot[1] else 0


if __name__ == "__main__":
    sys.exit(main())
