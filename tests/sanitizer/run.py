"""Run NVIDIA compute-sanitizer over the project's kernels, in shards, and summarise (issue 17).

Two kinds of shard:

* **driver** shards run ``tests/sanitizer/launch_all.py`` (one small, checked launch per kernel
  path of every family, through the public API) under each tool of ``--tools`` — by default
  racecheck, synccheck and initcheck, the tools that cannot get through the pytest suite in
  reasonable time.  One shard per tool over every family, or one per (tool, family) with
  ``--split-families`` (``--families`` narrows them).
* **pytest** shards run the GPU test files (``*_gpu.py``) of a test directory — ``--shards
  elementwise,scan`` or ``--all`` — one pytest process per shard, without xdist (sanitizer +
  xdist workers does not work well), under ``--pytest-tool`` (default memcheck).  A shard may
  also name one file (``gemm/test_gemm_sm90_gpu.py``); ``--split-files`` makes one shard per
  GPU test file.  ``--skip-files`` (default ``test_huge_gpu.py``: 4-17 GB per test) leaves files
  out of directory shards.

Each shard is ``compute-sanitizer --tool T --error-exitcode 99 <python> -m ...`` with its own
timeout (``--timeout``, seconds; the process group is killed past it), its combined output in
``--out DIR/<tool>__<shard>.log``.  The runner parses the ``ERROR SUMMARY: N errors`` lines (and
racecheck's ``RACECHECK SUMMARY``), the driver's ``LAUNCH`` / ``SUMMARY`` lines and pytest's
result line, prints a table (tool, shard, errors, warnings, result, seconds, exit code, detail)
— also written to ``DIR/summary.txt`` and ``DIR/summary.json`` — and exits 1 if any shard
reported sanitizer errors, failed, timed out or produced no sanitizer summary.

The environment passes through (run from the project root after ``source .gpu/host-env.sh`` on
the GPU host); ``BARACUDA_DSL_JIT=0`` is set unless already set (kernels come from the prebuilt
cache), pytest shards get ``BARACUDA_DSL_TEST_EXPECT_GPU=1`` unless set, ``PYTEST_ADDOPTS`` is
dropped (no xdist sneaking in).  compute-sanitizer: ``--sanitizer``, else
``$COMPUTE_SANITIZER``, else ``compute-sanitizer`` on PATH, else ``/usr/local/cuda/bin``, else
the newest ``/usr/local/cuda-*/bin``.

    python3 -m tests.sanitizer.run --out $OUT/sanitizer --jobs 3      # racecheck+synccheck+initcheck
    python3 -m tests.sanitizer.run --split-families --jobs 12 --timeout 240   # the same, 42 shards
    python3 -m tests.sanitizer.run --tools none --shards scan,softmax --timeout 500 --jobs 2
    python3 -m tests.sanitizer.run --tools memcheck --families gemm   # memcheck over the driver
    python3 -m tests.sanitizer.run --all --print-only                 # show the commands only
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
DEFAULT_TOOLS = ("racecheck", "synccheck", "initcheck")
ERROR_EXIT = 99
SKIP_FILES = ("test_huge_gpu.py",)
#: extra sanitizer options per pytest shard: test_memory_gpu.py makes allocations fail on purpose
#: (the out-of-memory retry and DeviceOutOfMemoryError), which memcheck would report as API errors
SHARD_SANITIZER_ARGS = {"tests/core/test_memory_gpu.py": ["--report-api-errors", "no"],
                        "tests/core": ["--report-api-errors", "no"]}

_ERR_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+errors?")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY:\s*(\d+)\s+hazards?\s+displayed\s+\((\d+)\s+errors?,"
                           r"\s*(\d+)\s+warnings?\)")
_LAUNCH = re.compile(r"^LAUNCH (\S+) (\S+) ")
_DRIVER_SUMMARY = re.compile(r"^SUMMARY launch_all: (\d+) cases, (\d+) failed")
_PYTEST_COUNTS = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")
#: sanitizer lines that open a report (not its indented details, not the banner / summaries)
_REPORT = re.compile(r"^========= (?! )(?!COMPUTE-SANITIZER)(?!ERROR SUMMARY)"
                     r"(?!RACECHECK SUMMARY)(?!LEAK SUMMARY)(?!Target application returned)"
                     r"(?!Saved host backtrace)(?!Device Frame)(?!Host Frame)\S")


@dataclass
class Shard:
    tool: str
    kind: str                     # "driver" | "pytest"
    name: str                     # driver, driver/gemm, tests/scan, tests/gemm/test_x_gpu.py
    args: List[str]               # the python arguments after the interpreter
    log: str = ""
    # results
    rc: Optional[int] = None
    seconds: float = 0.0
    timed_out: bool = False
    errors: Optional[int] = None
    warnings: int = 0
    detail: str = ""
    result: str = "not run"
    by_case: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.tool}:{self.name}"


# ---------------------------------------------------------------------------- discovery
def find_sanitizer(explicit: Optional[str]) -> Optional[str]:
    for cand in (explicit, os.environ.get("COMPUTE_SANITIZER")):
        if cand:
            return cand
    on_path = shutil.which("compute-sanitizer")
    if on_path:
        return on_path
    fixed = "/usr/local/cuda/bin/compute-sanitizer"
    if os.path.exists(fixed):
        return fixed
    versions = sorted(glob.glob("/usr/local/cuda-*/bin/compute-sanitizer"),
                      key=lambda p: [int(x) if x.isdigit() else 0
                                     for x in re.split(r"[-./]", p.split("cuda-")[1])])
    return versions[-1] if versions else None


def gpu_test_dirs() -> List[str]:
    """Test directories holding GPU test files (``*_gpu.py``)."""
    return sorted(p.name for p in TESTS.iterdir()
                  if p.is_dir() and any(p.glob("test_*_gpu.py")))


def _gpu_files(d: str, skip) -> List[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (TESTS / d).glob("test_*_gpu.py")
                  if p.name not in skip)


def pytest_shards(spec: List[str], split_files: bool, skip) -> List[tuple]:
    """(name, test files) per shard of ``spec`` (directory names or paths under tests/)."""
    out = []
    for s in spec:
        s = s.strip().strip("/")
        if s.startswith("tests/"):
            s = s[len("tests/"):]
        p = TESTS / s
        if p.is_file():
            out.append((f"tests/{s}", [str(p.relative_to(ROOT))]))
            continue
        if not p.is_dir():
            raise SystemExit(f"run: no test directory or file tests/{s} (GPU test directories: "
                             f"{', '.join(gpu_test_dirs())})")
        files = _gpu_files(s, skip)
        if not files:
            raise SystemExit(f"run: tests/{s} has no GPU test files (test_*_gpu.py)")
        if split_files:
            out += [(f, [f]) for f in files]
        else:
            out.append((f"tests/{s}", files))
    return out


def plan(a) -> List[Shard]:
    from tests.sanitizer.launch_all import FAMILIES

    shards = []
    tools = [] if a.tools in ("", "none") else [t.strip() for t in a.tools.split(",") if t.strip()]
    bad = [t for t in tools if t not in TOOLS]
    if bad:
        raise SystemExit(f"run: unknown tools {bad}; known: {', '.join(TOOLS)}")
    fams = [f for f in a.families.split(",") if f] if a.families not in ("", "all") else []
    bad = [f for f in fams if f not in FAMILIES]
    if bad:
        raise SystemExit(f"run: unknown families {bad}; known: {', '.join(FAMILIES)}")
    drv = ["-m", "tests.sanitizer.launch_all", "--pool", a.pool, "-v"]   # -v: every launch's SKU
    for tool in tools:
        if a.split_families:
            for f in fams or FAMILIES:
                shards.append(Shard(tool, "driver", f"driver/{f}", drv + ["--family", f]))
        else:
            extra = ["--family", ",".join(fams)] if fams else []
            shards.append(Shard(tool, "driver", "driver" + (f"/{'+'.join(fams)}" if fams else ""),
                                drv + extra))
    spec = gpu_test_dirs() if a.all else [s for s in a.shards.split(",") if s.strip()]
    skip = tuple(x for x in a.skip_files.split(",") if x)
    extra = a.pytest_args.split() if a.pytest_args else []
    for name, files in pytest_shards(spec, a.split_files, skip):
        shards.append(Shard(a.pytest_tool, "pytest", name,
                            ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                             "-rfE"] + extra + files))
    return shards


# ------------------------------------------------------------------------------ running
def command(san: str, sh: Shard, sanitizer_args: List[str]) -> List[str]:
    extra = SHARD_SANITIZER_ARGS.get(sh.name, []) if sh.kind == "pytest" else []
    return ([san, "--tool", sh.tool, "--error-exitcode", str(ERROR_EXIT)] + sanitizer_args
            + extra + [sys.executable] + sh.args)


def environment(kind: str) -> dict:
    env = dict(os.environ)
    env.setdefault("BARACUDA_DSL_JIT", "0")
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PYTEST_ADDOPTS", None)
    if kind == "pytest":
        env.setdefault("BARACUDA_DSL_TEST_EXPECT_GPU", "1")
    pp = env.get("PYTHONPATH", "")
    if str(ROOT) not in pp.split(os.pathsep):
        env["PYTHONPATH"] = str(ROOT) + (os.pathsep + pp if pp else "")
    return env


_PRINT = threading.Lock()


def _say(msg: str) -> None:
    with _PRINT:
        print(msg, flush=True)


def run_shard(san: str, sh: Shard, out: Path, timeout: float, sanitizer_args) -> Shard:
    cmd = command(san, sh, sanitizer_args)
    sh.log = str(out / (sh.id.replace(":", "__").replace("/", "_") + ".log"))
    _say(f"[start] {sh.id}  (log {sh.log})")
    t0 = time.monotonic()
    with open(sh.log, "w") as f:
        f.write("# " + " ".join(cmd) + "\n")
        f.flush()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=environment(sh.kind), stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            sh.rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            sh.timed_out = True
            for sig, grace in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
                try:
                    os.killpg(proc.pid, sig)      # the shard's own process group
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
            sh.rc = proc.returncode
    sh.seconds = time.monotonic() - t0
    parse(sh)
    _say(f"[done ] {sh.id}  {sh.result}  errors={_fmt(sh.errors)}  {sh.seconds:.0f}s  "
         f"{sh.detail}")
    return sh


def parse(sh: Shard) -> None:
    text = Path(sh.log).read_text(errors="replace")
    lines = text.splitlines()
    errs = [int(m.group(1)) for m in _ERR_SUMMARY.finditer(text)]
    races = [m.groups() for m in _RACE_SUMMARY.finditer(text)]
    if errs:
        sh.errors = sum(errs)
    elif races:
        sh.errors = sum(int(r[1]) for r in races)
    sh.warnings = sum(int(r[2]) for r in races)
    if sh.kind == "driver":
        fails = [m.group(1) for m in map(_LAUNCH.match, lines)
                 if m and m.group(2) not in ("ok", "dry")]
        cases = sum(1 for ln in lines if _LAUNCH.match(ln))
        summ = [m for m in map(_DRIVER_SUMMARY.match, lines) if m]
        sh.detail = f"{cases} cases, {len(fails)} failed"
        if fails:
            sh.detail += ": " + ", ".join(fails[:6]) + (" ..." if len(fails) > 6 else "")
        if not summ:
            sh.detail += " (driver did not finish)"
        # sanitizer reports printed before a case's LAUNCH line belong to that case
        pending = 0
        for ln in lines:
            if _REPORT.match(ln):
                pending += 1
                continue
            m = _LAUNCH.match(ln)
            if m:
                if pending:
                    sh.by_case[m.group(1)] = sh.by_case.get(m.group(1), 0) + pending
                pending = 0
        if pending:
            sh.by_case["<after the last case>"] = pending
    else:
        res = [ln for ln in lines if _PYTEST_COUNTS.search(ln) and " in " in ln]
        sh.detail = res[-1].strip("= ") if res else "(no pytest result line)"
    if sh.timed_out:
        sh.result = "TIMEOUT"
    elif sh.errors:
        sh.result = "ERRORS"
    elif sh.rc == ERROR_EXIT:
        sh.result = "ERRORS"              # the tool's exit code says so even without a summary
    elif sh.errors is None:
        sh.result = "NO-SUMMARY"          # compute-sanitizer did not finish (crash, not found)
    elif sh.rc != 0:
        sh.result = "FAIL"
    else:
        sh.result = "ok"


def _fmt(v) -> str:
    return "?" if v is None else str(v)


def table(shards: List[Shard]) -> str:
    rows = [("tool", "shard", "errors", "warn", "result", "seconds", "exit", "detail")]
    for s in shards:
        rows.append((s.tool, s.name, _fmt(s.errors), str(s.warnings), s.result,
                     f"{s.seconds:.0f}", _fmt(s.rc), s.detail))
    w = [max(len(r[i]) for r in rows) for i in range(7)]
    out = []
    for r in rows:
        out.append("  ".join(c.rjust(w[i]) if i in (2, 3, 5, 6) else c.ljust(w[i])
                             for i, c in enumerate(r[:7])) + "  " + r[7])
    attributed = [(s, c, n) for s in shards for c, n in s.by_case.items()]
    if attributed:
        out.append("")
        out.append("sanitizer reports by driver case (reports printed before the case's LAUNCH "
                   "line; see the logs):")
        for s, c, n in sorted(attributed, key=lambda x: -x[2]):
            out.append(f"  {s.tool:9s} {c}: {n}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m tests.sanitizer.run",
                                 description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("--tools", default=",".join(DEFAULT_TOOLS),
                    help="tools run over the launch_all driver (comma-separated from "
                         f"{','.join(TOOLS)}, or 'none'); default %(default)s")
    ap.add_argument("--families", default="all",
                    help="driver families (comma-separated; default all)")
    ap.add_argument("--split-families", action="store_true",
                    help="one driver shard per (tool, family) instead of one per tool")
    ap.add_argument("--pool", choices=("exact", "cached"), default="exact",
                    help="the driver's --pool (default exact: fresh exact-size allocations)")
    ap.add_argument("--shards", default="",
                    help="pytest shards: test directories (elementwise,scan) or files under "
                         "tests/ (gemm/test_gemm_sm90_gpu.py)")
    ap.add_argument("--all", action="store_true",
                    help="pytest shards for every test directory with GPU tests")
    ap.add_argument("--split-files", action="store_true",
                    help="one pytest shard per GPU test file")
    ap.add_argument("--skip-files", default=",".join(SKIP_FILES),
                    help="GPU test files left out of directory shards (default %(default)s; "
                         "'' keeps all)")
    ap.add_argument("--pytest-tool", default="memcheck", choices=TOOLS,
                    help="tool for the pytest shards (default %(default)s)")
    ap.add_argument("--pytest-args", default="",
                    help="extra pytest arguments for the pytest shards (e.g. \"-x -k 'not big'\")")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds per shard before its process group is killed (default 600)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="shards run at once (default 1; each is a separate process on the GPU)")
    ap.add_argument("--out", default="",
                    help="log directory (default: a new baracuda-sanitizer-<time> folder in the "
                         "temp dir)")
    ap.add_argument("--sanitizer", default="", help="path of compute-sanitizer")
    ap.add_argument("--sanitizer-args", default="",
                    help="extra compute-sanitizer options for every shard "
                         "(e.g. \"--racecheck-report all\" or \"--print-limit 20\")")
    ap.add_argument("--print-only", action="store_true",
                    help="print the shard commands and exit (no sanitizer needed)")
    ap.add_argument("--list-shards", action="store_true",
                    help="list the GPU test directories and the driver families and exit")
    a = ap.parse_args(argv)

    if a.list_shards:
        from tests.sanitizer.launch_all import FAMILIES

        print("pytest shards (tests/<dir>, its test_*_gpu.py files):")
        for d in gpu_test_dirs():
            files = _gpu_files(d, ())
            print(f"  {d:14s} {len(files)} files: {' '.join(Path(f).name for f in files)}")
        print("driver families: " + ",".join(FAMILIES))
        return 0
    shards = plan(a)
    if not shards:
        print("run: nothing to run (--tools none and no --shards / --all)")
        return 2
    san = find_sanitizer(a.sanitizer or None)
    sargs = a.sanitizer_args.split() if a.sanitizer_args else []
    if a.print_only:
        for sh in shards:
            print(f"{sh.id}: " + " ".join(command(san or "compute-sanitizer", sh, sargs)))
        return 0
    if san is None:
        print("run: compute-sanitizer not found (PATH, /usr/local/cuda/bin, /usr/local/cuda-*/bin;"
              " pass --sanitizer PATH or set COMPUTE_SANITIZER)", file=sys.stderr)
        return 2
    out = Path(a.out or os.path.join(tempfile.gettempdir(), "baracuda-sanitizer-"
                                     + time.strftime("%Y%m%d-%H%M%S"))).resolve()
    out.mkdir(parents=True, exist_ok=True)
    try:
        ver = subprocess.run([san, "--version"], capture_output=True, text=True, timeout=60)
        version = " ".join(ver.stdout.split()[-3:]) if ver.returncode == 0 else "?"
    except Exception as e:  # noqa: BLE001 - report it, the shards will say more
        version = f"? ({e})"
    print(f"run: {san} ({version}); {len(shards)} shards, {a.jobs} at a time, timeout "
          f"{a.timeout:.0f}s each; logs in {out}", flush=True)
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        list(ex.map(lambda s: run_shard(san, s, out, a.timeout, sargs), shards))
    txt = table(shards)
    total = time.monotonic() - t0
    bad = [s for s in shards if s.result != "ok"]
    tail = (f"\n{len(shards)} shards in {total:.0f}s: "
            f"{'all clean' if not bad else f'{len(bad)} not clean'}")
    print("\n" + txt + tail, flush=True)
    (out / "summary.txt").write_text(txt + tail + "\n")
    (out / "summary.json").write_text(json.dumps(
        {"sanitizer": san, "version": version, "seconds": round(total, 1),
         "shards": [dict(asdict(s), id=s.id) for s in shards]}, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
