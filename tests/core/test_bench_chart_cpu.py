"""benchmarks/chart.py: the all-families chart's data extraction from fabricated bench.json /
bench_<section>.json files (every section kind the chart knows), exact series (family, label,
ours, torch, torch.compile, unit), the row-selection rule (largest case per op, ties, failed
rows), missing fields / sections as notes, the Markdown table and the command line.  The PNG is
rendered only where matplotlib imports.  No GPU, no torch."""

import json

import pytest

from benchmarks import chart as C

COPY = 3000.0


def _mem(case, shape, dtype, nbytes, ms, frac, torch_frac, **kw):
    return dict(case=case, shape=shape, dtype=dtype, bytes=nbytes, ms=ms, frac=frac,
                torch_ms=ms * 2, torch_frac=torch_frac, **kw)


def _run_all():
    """A run_all bench.json: norms (op), softmax (providers), scan (a bare list, gbs only),
    segment (of_copy, no torch_frac), histogram (gbs, no copy of its own), gemm / gemm_lowp,
    losses (torch.compile), sort and launch (not charted)."""
    norms = dict(rows=[
        dict(op="rms FW", shape="32768x4096", dtype="bfloat16", bytes=100, ms=1.0, frac=0.9,
             torch_frac=0.6, status="ok"),
        dict(op="rms FW", shape="8192x32768", dtype="float32", bytes=200, ms=2.0, frac=0.95,
             torch_frac=0.65, status="ok"),
        # the largest rms BW failed its check: the smaller one is shown
        dict(op="rms BW", shape="8192x32768", dtype="float32", bytes=300, ms=3.0, frac=0.1,
             torch_frac=0.4, status="FAIL (rel err 1e-1)"),
        dict(op="rms BW", shape="32768x4096", dtype="bfloat16", bytes=150, ms=1.0, frac=0.8,
             torch_frac=0.4, status="ok"),
        dict(op="ln FW", shape="32768x4096", dtype="bfloat16", bytes=None, ms=None,
             status="not available: x"),
    ], host=[])
    softmax = dict(copy=dict(gbs=2950.0), rows=[
        dict(case="softmax FW", shape="8192x32768", dtype="bfloat16", provider=p, bytes=400,
             ms=m, gbs=g, frac=f, status="ok")
        for p, m, g, f in (("ours", 1.0, 2900.0, 0.98), ("torch", 1.3, 2200.0, 0.74),
                           ("torch.compile", 2.0, 1300.0, 0.45))
    ] + [dict(case="softmax FW", shape="2048x131072", dtype="bfloat16", provider="ours",
              bytes=400, ms=1.0, gbs=2000.0, frac=0.5, status="ok")])
    scan = [dict(op="cumsum", shape="32768x4096", dtype="float32", ms=0.5, gbs=2400.0,
                 torch_ms=0.6, torch_gbs=2000.0, status="ok")]
    segment = dict(copy_gbs=2900.0, rows=[
        dict(case="embedding bw bf16 V=131072 D=4096 T=16384", ms=0.5, torch_ms=1.0,
             gbs=2000.0, ok=True, of_copy=0.7)])
    gemm = dict(rows=[
        dict(case=f"bfloat16 NT m={m} n=4096 k=4096", dtype="bfloat16", m=m, n=4096, k=4096,
             ok=True, ms=1.0, torch_ms=1.0, tflops=t, torch_tflops=tt)
        for m, t, tt in ((128, 300.0, 350.0), (16384, 640.0, 670.0))
    ] + [dict(case="bfloat16 NN m=8192 n=8192 k=8192", dtype="bfloat16", m=8192, n=8192,
              k=8192, ok=False, ms=1.0, tflops=1.0, torch_tflops=700.0)])
    gemm_lowp = dict(rows=[
        dict(case="int8 NT m=4096 n=4096 k=4096", kind="int8", m=4096, n=4096, k=4096, ok=True,
             ms=1.0, torch_ms=0.5, unit="TOPS", rate=500.0, torch_rate=870.0)])
    losses = dict(copy_gbs=2990.0, rows=[
        dict(case="CE fw", shape="8192×32768", dtype="float32", ms=1.0, gbs=3000.0, frac=1.05,
             torch_ms=4.0, torch_frac=0.27, compile_frac=0.49, quack_frac=None, check="ok")],
        lce=[dict(case="fused linear CE", ms=1.0)])
    return dict(date="2026-11-26", device=dict(gpu="NVIDIA H100 80GB HBM3"), quick=False,
                argv=["x"], copy=dict(gbs=COPY, gbs_best=3010.0), norms=norms,
                elementwise=dict(rows=[], host=[]), launch=dict(rows=[dict(key="a0", us=7.0)]),
                softmax=softmax, scan=scan, segment=segment,
                histogram=dict(rows=[dict(case="bincount int32 → 1000 bins", n=64, ms=0.4,
                                          torch_ms=0.6, gbs=600.0, ok=True)]),
                sort=[dict(op="sort", shape="16777216", dtype="float32", ms=1.0, gkeys=13.0)],
                gemm=gemm, gemm_lowp=gemm_lowp, losses=losses, copy_after=dict(gbs=2900.0),
                wall_s=100.0)


def _family_files():
    """The per-family files run_all does not write: attention, attention_decode, conv,
    im2col, fft, linalg, pool, an unknown section."""
    attention = dict(rows=[
        dict(dir=dr, case=f"S={s} d=128 B={16384 // s} H=16", provider=p, ms=1.0, tflops=t,
             relerr=None, status="ok")
        for dr in ("FW", "BW")
        for s in (4096, 16384)
        for p, t in (("ours", s / 30.0), ("torch flash", s / 40.0), ("torch cudnn", s / 35.0))
    ] + [dict(dir="FW", case="S=16384 d=64 B=1 H=32", provider="ours", error="boom")])
    # attention rows: time equal, so FLOPs = tflops * ms ranks S=16384 first
    decode = dict(copy=dict(gbs=2980.0), rows=[
        dict(case="decode", shape="B64 L8192", dtype="bfloat16", provider=p, bytes=1000,
             ms=m, gbs=1.0, frac_copy=f, status="ok")
        for p, m, f in (("ours", 1.0, 0.8), ("ours paged 256", 1.0, 0.7),
                        ("torch sdpa flash", 2.0, 0.4), ("torch sdpa cudnn", 1.5, 0.53))
    ])
    conv = dict(rows=[
        dict(case=f"{name} {op}", shape=shape, dtype="bfloat16", ms=ms, torch_ms=ms,
             tflops=t, torch_tflops=tt, ok=True)
        for name, shape, ms in (("res2 3x3", "32x64x56x56 k64 3x3 s1", 1.0),
                                ("unet mid 3x3", "8x512x32x32 k1024 3x3 s1", 2.0))
        for op, t, tt in (("fwd", 400.0, 450.0), ("wgrad", 300.0, 250.0))
    ])
    im2col = dict(rows=[
        dict(case="resnet 3x3 unfold", shape="32x64x56x56 3x3 p1 s1", dtype="bfloat16",
             ms=1.0, torch_ms=2.0, gbs=1500.0, torch_gbs=750.0, ok=True)])
    fft = dict(copy=dict(gbs=2900.0), rows=[
        # the same bytes per case (gbs × ms), so the longest transform is shown
        dict(case=f"c2c 1-D n=2^{k}", provider=p, n=2 ** 26, ms=ms / scale, gbs=g * scale,
             ok=True)
        for k, scale in ((10, 1.0), (24, 0.5))
        for p, ms, g in (("torch", 1.0, 1450.0), ("plan", 1.0, 2320.0), ("xp", 1.0, 2000.0))
    ])
    linalg = dict(copy=dict(gbs=2900.0), rows=[
        dict(case="cholesky", shape="1x4096x4096", dtype="float32", provider=p, ms=ms,
             gflops=g, ok=True)
        for p, ms, g in (("ours", 2.0, 12000.0), ("torch", 3.0, 8000.0))
    ] + [dict(case="svd", shape="1x2048x2048", dtype="float32", provider="ours", ms=50.0,
              gflops=None, ok=True)])
    pool = dict(copy_gbs=2900.0, rows=[
        dict(case="max 3x3 s2 p1", shape="32x64x112x112 NCHW", dtype="bfloat16", ms=0.1,
             torch_ms=0.2, gbs=2000.0, frac=0.69, torch_frac=0.345, ok=True),
        dict(case="avg 2x2 s2", shape="—", dtype="float32", error="RuntimeError: x")])
    mystery = dict(rows=[dict(case="widget", shape="1024", dtype="float32", ms=1.0,
                              frac=0.5, torch_frac=0.25)])
    return dict(attention=attention, attention_decode=decode, conv=conv, im2col=im2col,
                fft=fft, linalg=linalg, pool=pool, mystery=mystery)


def _write(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "bench.json").write_text(json.dumps(_run_all()))
    fam = tmp_path / "fam"
    fam.mkdir()
    for k, v in _family_files().items():
        (fam / f"bench_{k}.json").write_text(json.dumps(v))
    return run, fam


def _series(tmp_path):
    run, fam = _write(tmp_path)
    srcs, notes = C.load([str(run), str(fam)])
    assert notes == []
    return C.extract(srcs)


F, T = C.FRAC, C.TFLOPS


def test_series_of_every_section_kind(tmp_path):
    data = _series(tmp_path)
    got = [(s.family, s.label, s.unit, s.ours, s.torch, s.compile) for s in data.series]
    r = pytest.approx
    want = [
        ("normalization", "rms FW — 8192x32768 f32", F, 0.95, 0.65, None),
        ("normalization", "rms BW — 32768x4096 bf16", F, 0.8, 0.4, None),
        ("softmax", "softmax FW — 8192x32768 bf16", F, 0.98, 0.74, 0.45),
        ("scan", "cumsum — 32768x4096 f32", F, r(2400 / COPY), r(2000 / COPY), None),
        ("histogram", "bincount int32 → 1000 bins", F, r(600 / COPY), r(0.4 * 600 / COPY / 0.6),
         None),
        ("segment", "embedding bw bf16 — V=131072 D=4096 T=16384", F, 0.7, r(0.35), None),
        ("losses", "CE fw — 8192×32768 f32", F, 1.05, 0.27, 0.49),
        ("attention_decode", "decode — B64 L8192 bf16", F, 0.8, 0.53, None),
        ("fft", "c2c 1-D — n=2^24", F, r(1160 / 2900), r(725 / 2900), None),
        ("im2col", "unfold — resnet 3x3 32x64x56x56 3x3 p1 s1 bf16", F, 0.5, 0.25, None),
        ("pool", "max 3x3 s2 p1 — 32x64x112x112 NCHW bf16", F, 0.69, 0.345, None),
        ("gemm", "bfloat16 NT — m=16384 n=4096 k=4096", T, 640.0, 670.0, None),
        ("gemm", "int8 NT (TOPS) — m=4096 n=4096 k=4096", T, 500.0, 870.0, None),
        ("attention", "FW d=128 — S=16384 B=1 H=16", T, r(16384 / 30), r(16384 / 35), None),
        ("attention", "BW d=128 — S=16384 B=1 H=16", T, r(16384 / 30), r(16384 / 35), None),
        ("conv", "fwd — unet mid 3x3 8x512x32x32 k1024 3x3 s1 bf16", T, 400.0, 450.0, None),
        ("conv", "wgrad — unet mid 3x3 8x512x32x32 k1024 3x3 s1 bf16", T, 300.0, 250.0, None),
        ("linalg", "cholesky — 1x4096x4096 f32", T, 12.0, 8.0, None),
        ("mystery", "widget — 1024 f32", F, 0.5, 0.25, None),
    ]
    assert got == want
    assert [s.section for s in data.series][:3] == ["norms", "norms", "softmax"]
    assert data.series[0].source.endswith("run/bench.json")


def test_meta_and_notes(tmp_path):
    data = _series(tmp_path)
    m = data.meta
    assert m["gpu"] == "NVIDIA H100 80GB HBM3"
    assert m["copy_gbs"] == COPY
    assert m["section_copy"] == (2900.0, 2990.0)
    assert m["date"].startswith("2026-11-26")       # + the family files' modification date
    t = C.title(data)
    assert "NVIDIA H100 80GB HBM3" in t and "copy ceiling 3000 GB/s" in t
    assert "2900–2990" in t and "bench_attention.json" in t and "bench.json" in t
    notes = " | ".join(data.notes)
    for frag in ("sort (", "launch (", "fused linear CE", "mystery (", "unknown section",
                 "histogram (", "divided by the run's 3000 GB/s", "norms (", "gemm (",
                 "pool ("):
        assert frag in notes, frag


def test_ties_go_to_the_larger_size_token_then_the_first_row():
    spec = C.SPECS["fft"]
    rows = [dict(case=f"c2c 1-D n=2^{k}", provider=p, n=64, ms=1.0, gbs=100.0)
            for k in (10, 12) for p in ("plan", "torch")]
    (s,) = C.section_series("fft", dict(copy=dict(gbs=1000.0), rows=rows), "f")
    assert s.label == "c2c 1-D — n=2^12" and spec.kind == C.MEM
    rows = [dict(case="x", shape="64", dtype=dt, ms=1.0, gbs=100.0, frac=f)
            for dt, f in (("float32", 0.1), ("bfloat16", 0.2))]
    (s,) = C.section_series("random", dict(copy_gbs=1000.0, rows=rows), "f")
    assert (s.label, s.ours, s.torch) == ("x — 64 f32", 0.1, None)


def test_missing_fields_and_sections_never_crash(tmp_path):
    notes = []
    assert C.section_series("norms", dict(rows=[dict(op="rms FW")]), "f", None, notes) == []
    assert "1 row(s)" in notes[0]
    assert C.section_series("gemm", dict(rows=[], error="boom"), "f", None, notes) == []
    assert C.section_series("nothing", dict(rows=[dict(case="a", ms=1.0)]), "f", None,
                            notes) == []
    assert C.section_series("elementwise", "weird", "f") == []
    # a gbs-only section without any copy ceiling is left out, not divided by nothing
    notes = []
    assert C.section_series("histogram", dict(rows=[dict(case="h", n=4, ms=1.0, gbs=9.0)]),
                            "f", None, notes) == []
    bad = tmp_path / "bench_bad.json"
    bad.write_text("{not json")
    srcs, lnotes = C.load([str(bad), str(tmp_path / "absent.json")])
    assert srcs == [] and len(lnotes) == 2
    data = C.extract(srcs)
    assert data.series == [] and "nothing to chart" in data.notes


def test_a_later_file_replaces_a_section(tmp_path):
    run, fam = _write(tmp_path)
    newer = tmp_path / "newer"
    newer.mkdir()
    segment = dict(copy_gbs=2900.0, rows=[
        dict(case="embedding bw bf16 V=131072 D=4096 T=16384", ms=0.5, torch_ms=0.5,
             gbs=2000.0, ok=True, of_copy=0.9)])
    (newer / "bench_segment.json").write_text(json.dumps(segment))
    srcs, _ = C.load([str(run), str(newer / "bench_segment.json")])
    data = C.extract(srcs)
    (s,) = [s for s in data.series if s.family == "segment"]
    assert (s.ours, s.torch) == (0.9, 0.9) and s.source.endswith("newer/bench_segment.json")
    assert any("segment:" in n and "replaces" in n for n in data.notes)


def test_markdown_table(tmp_path):
    data = _series(tmp_path)
    md = C.markdown(data, "python3 -m benchmarks.chart X")
    lines = md.splitlines()
    assert "Command: `python3 -m benchmarks.chart X`" in md
    assert "| family | op — case | unit | ours | torch | torch.compile | ours / torch | section |" \
        in lines
    assert "| softmax | softmax FW — 8192x32768 bf16 | fraction of copy | 0.98 | 0.74 | 0.45 | " \
           "1.32 | softmax |" in lines
    assert "| gemm | bfloat16 NT — m=16384 n=4096 k=4096 | TFLOP/s | 640 | 670 | — | 0.96 | " \
           "gemm |" in lines
    assert "| linalg | cholesky — 1x4096x4096 f32 | TFLOP/s | 12.0 | 8.0 | — | 1.50 | linalg |" \
        in lines
    assert lines[-1].startswith("Notes: ")


def test_command_line_markdown_and_missing_matplotlib(tmp_path, capsys, monkeypatch):
    run, fam = _write(tmp_path)
    assert C.main([str(run), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "| normalization | rms FW — 8192x32768 f32 |" in out
    assert "bench_attention" not in out
    import builtins

    real = builtins.__import__

    def no_mpl(name, *a, **kw):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib here")
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    assert C.main([str(run), "--out", str(tmp_path / "x.png")]) == 2
    assert not (tmp_path / "x.png").exists()
    assert "matplotlib is needed" in capsys.readouterr().err


def test_module_imports_no_matplotlib():
    import subprocess
    import sys

    code = ("import sys, benchmarks.chart; "
            "sys.exit(any(m.startswith(('matplotlib', 'torch')) for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_render_png(tmp_path):
    pytest.importorskip("matplotlib")
    data = _series(tmp_path)
    out = tmp_path / "chart.png"
    C.render(data, str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # one panel only (no compute-bound series) renders too
    only_mem = data._replace(series=[s for s in data.series if s.unit == C.FRAC])
    C.render(only_mem, str(tmp_path / "mem.png"))
    assert (tmp_path / "mem.png").stat().st_size > 0
