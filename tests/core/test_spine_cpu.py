"""CPU tests of the kernel template registry: every SKU space is finite and shape-free, and every
template cross-compiles for sm80, sm89 and sm90a (the cache, ABI, JIT and CLI have their own
files: test_jit_cache.py, test_cli.py, test_vocabulary.py, test_tensor_view.py)."""

import importlib.util

import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops import all_templates

needs_dsl = pytest.mark.skipif(
    importlib.util.find_spec("cutlass") is None,
    reason="CuTe DSL not installed here (a deployed host runs cached kernels only)")


def test_sku_space_is_finite_and_shape_free():
    names = {t.name for t in all_templates()}
    assert {"row_norm_fw", "row_norm_bw", "column_sum"} <= names
    for t in all_templates():
        skus = t.skus()
        assert len(skus) == len(set(skus)) > 0
        for k in skus:
            assert t.geometry(t.thaw(k)).threads <= 1024


@needs_dsl
@pytest.mark.parametrize("arch", ["sm80", "sm89", "sm90a"])
def test_cross_compile_every_template(arch):
    """At least one SKU of every kernel template compiles for every arch (no GPU needed); the ABI
    and block size are checked against the template by the compiler."""
    from baracuda_dsl.jit.compiler import submit

    a = bd.ArchSku.parse(arch)
    futs = []
    for t in all_templates():
        skus = t.skus(a.value)
        if not skus:  # sm90a-only templates (wgmma GEMM) have no SKU on sm80 / sm89
            continue
        clusters = [k for k in skus if dict(k).get("cluster", 1) > 1]
        picks = {skus[0], skus[-1]} | set(clusters[:1] + clusters[-1:])
        for k in picks:
            futs.append((t, k, submit(t.name, k, a, 2)))
    for t, k, f in futs:
        cubin, meta = f.result(timeout=600)
        assert cubin[:4] == b"\x7fELF", t.name
        assert meta["ptx_target"] == a.cute_arch
        assert meta["threads"] == t.geometry(t.thaw(k)).threads


def test_plan_kernel_memo_is_keyed_by_knobs_value(monkeypatch):
    """Plan._kernel loads a SKU once per plan whether the plan keeps its knobs object or builds
    an equal one per call, and tells different knobs apart."""
    import baracuda_dsl.jit as jit
    from baracuda_dsl.ops.normalization.specs.row_norm import ROW_NORM_FW
    from baracuda_dsl.plan import Plan

    loads = []
    monkeypatch.setattr(jit, "kernel", lambda t, k, o, a: loads.append(k) or object())
    plan = Plan.__new__(Plan)
    plan._arch = bd.ArchSku.SM90A
    a, b = (ROW_NORM_FW.thaw(k) for k in ROW_NORM_FW.skus("sm90a")[:2])
    first = plan._kernel(ROW_NORM_FW, a, 0)
    assert plan._kernel(ROW_NORM_FW, a, 0) is first                       # same object
    assert plan._kernel(ROW_NORM_FW, ROW_NORM_FW.thaw(ROW_NORM_FW.skus("sm90a")[0]), 0) is first
    assert plan._kernel(ROW_NORM_FW, b, 0) is not first
    assert plan._kernel(ROW_NORM_FW, a, 1) is not first                   # another device
    assert len(loads) == 3
