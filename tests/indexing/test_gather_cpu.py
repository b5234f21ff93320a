"""GatherPlan / ScatterPlan without a GPU: validation, SKU space, cross-compile."""

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.indexing.gather import (GatherPlan, IndexCopyArgs, IndexCopyDescriptor,
                                              ScatterPlan)

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def test_select_and_validation():
    p = GatherPlan.select(IndexCopyDescriptor(5, 7, "complex128"), PREF)
    assert dict(p.sku().knobs) == dict(itemsize=16, mode="gather", index="i64")
    s = ScatterPlan.select(IndexCopyDescriptor(5, 7, "bool", "int32"), PREF)
    assert dict(s.sku().knobs)["index"] == "i32" and s.workspace_size() == 0
    with pytest.raises(bd.UnsupportedError):
        IndexCopyDescriptor(5, 7, "f32", "int16")
    for n, m in ((-1, 2), (2, -1), (1.0, 2)):
        with pytest.raises(bd.InvalidProblemError):
            IndexCopyDescriptor(n, m, "f32")
    with pytest.raises(bd.InvalidProblemError):
        GatherPlan.select(IndexCopyDescriptor(3, 0, "f32"), PREF)
    assert ScatterPlan.select(IndexCopyDescriptor(0, 0, "f32"), PREF).is_empty()
    with pytest.raises(bd.DeviceMismatchError):
        p.run(IndexCopyArgs(np.zeros(7, np.complex128), np.zeros(5, np.int64),
                            np.zeros(5, np.complex128)))


def test_sku_space():
    from baracuda_dsl.ops import get_template

    assert len(get_template("gather").skus("sm80")) == 5 * 2 * 2


@pytest.mark.parametrize("arch", [bd.ArchSku.SM80, bd.ArchSku.SM89, bd.ArchSku.SM90A])
def test_cross_compile(arch):
    pytest.importorskip("cutlass")
    from baracuda_dsl.jit import freeze_knobs
    from baracuda_dsl.jit.compiler import compile_sku

    for knobs in (dict(itemsize=16, mode="gather", index="i64"),
                  dict(itemsize=1, mode="scatter", index="i32")):
        cubin, meta = compile_sku("gather", freeze_knobs(knobs), arch, timeout=300)
        assert len(cubin) > 1000 and meta["threads"] == 256
