"""UniquePlan / UniqueConsecutivePlan without a GPU: validation, workspace layout, host arrays
rejected before launch."""

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.sorting.unique import (UniqueArgs, UniqueConsecutivePlan, UniqueDescriptor,
                                             UniquePlan)

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def test_select_and_validation():
    p = UniquePlan.select(UniqueDescriptor(1000, "f32", True, True, True), PREF)
    q = UniqueConsecutivePlan.select(UniqueDescriptor(1000, "f32", True, True, True), PREF)
    assert p.workspace_size() > q.workspace_size() > 1000 * 8  # the sort needs more scratch
    assert p.sku().op == "unique" and q.sku().op == "unique_consecutive"
    assert p.precision_guarantee().deterministic
    for dt in ("bool", "int8", "uint64", "bf16", "f64"):
        UniquePlan.select(UniqueDescriptor(5, dt), PREF)
    with pytest.raises(bd.UnsupportedError):
        UniqueDescriptor(5, "complex64")
    for bad in (-1, 2.0, True):
        with pytest.raises(bd.InvalidProblemError):
            UniqueDescriptor(bad, "f32")
    with pytest.raises(bd.InvalidProblemError):
        UniqueDescriptor(5, "f32", return_index=1)
    with pytest.raises(bd.InvalidProblemError):
        UniquePlan.select(bd.IndexCopyDescriptor(1, 1, "f32"), PREF)


def test_host_arrays_rejected_before_launch():
    p = UniquePlan.select(UniqueDescriptor(4, "f32"), PREF)
    with pytest.raises(bd.DeviceMismatchError):
        p.run(UniqueArgs(np.zeros(4, np.float32), np.zeros(4, np.float32),
                         np.zeros(1, np.int64)))
