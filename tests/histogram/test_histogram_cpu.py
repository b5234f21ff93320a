"""BincountPlan / HistogramPlan without a GPU: descriptor validation, SKU space, host arrays
rejected before launch, and cross-compiling the counting kernel for sm80 / sm89 / sm90a."""

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.histogram.histogram import (BincountDescriptor, BincountPlan, CountArgs,
                                                  HistogramDescriptor, HistogramPlan)

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def test_select_and_validation():
    p = BincountPlan.select(BincountDescriptor(10, 5, "int32"), PREF)
    assert p.sku().template == "histogram" and p.workspace_size() == 0
    assert p.precision_guarantee().deterministic
    assert BincountDescriptor(10, 5, "int32").out_dtype == bd.int64
    w = BincountPlan.select(BincountDescriptor(10, 5, "uint8", "bf16"), PREF)
    assert not w.precision_guarantee().deterministic
    assert BincountDescriptor(1, 1, "i8", "f64").out_dtype == bd.float64
    assert BincountDescriptor(1, 1, "i8", "f16").out_dtype == bd.float32
    for bad in ("f32", "bool", "complex64"):
        with pytest.raises(bd.UnsupportedError):
            BincountDescriptor(3, 3, bad)
    with pytest.raises(bd.UnsupportedError):
        BincountDescriptor(3, 3, "int32", "int32")
    for n, bins in ((-1, 3), (3, -2), (3, 2**31), (1.5, 3), (True, 3)):
        with pytest.raises(bd.InvalidProblemError):
            BincountDescriptor(n, bins, "int64")
    h = HistogramPlan.select(HistogramDescriptor(100, 10, "f16", "uniform", -1.0, 1.0), PREF)
    assert dict(h.sku().knobs)["mode"] == "uniform"
    with pytest.raises(bd.InvalidProblemError):
        HistogramDescriptor(100, 10, "f32", "uniform", 1.0, 1.0)
    with pytest.raises(bd.InvalidProblemError):
        HistogramDescriptor(100, 10, "f32", "uniform", 0.0, float("inf"))
    with pytest.raises(bd.InvalidProblemError):
        HistogramDescriptor(100, 0, "f32", "edges")
    with pytest.raises(bd.InvalidProblemError):
        HistogramDescriptor(100, 3, "f32", "log")
    with pytest.raises(bd.InvalidProblemError):
        BincountPlan.select(HistogramDescriptor(1, 1, "f32"), PREF)
    assert BincountPlan.select(BincountDescriptor(5, 0, "int64"), PREF).is_empty()


def test_host_arrays_rejected_before_launch():
    p = BincountPlan.select(BincountDescriptor(4, 3, "int64"), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(CountArgs(np.zeros(4, np.int64), np.zeros(3, np.int64)))


def test_sku_space():
    from baracuda_dsl.ops import get_template

    skus = get_template("histogram").skus("sm80")
    assert len(skus) == 8 * 5 + 2 * 12 * 5
    assert all(dict(k)["dtype"].startswith(("i", "u")) for k in skus
               if dict(k)["mode"] == "bincount")


@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for knobs in (dict(mode="bincount", dtype="i64", weights="none"),
                  dict(mode="edges", dtype="bf16", weights="f64"),
                  dict(mode="uniform", dtype="u16", weights="f16")):
        cubin, meta = compile_sku("histogram", freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == 256
