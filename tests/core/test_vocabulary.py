"""CPU tests of the Plan vocabulary (ArchSku, KernelSku, PlanPreference, Workspace), the dtype
table and the typed errors."""

import dataclasses

import numpy as np
import pytest

import baracuda_dsl as bd
from baracuda_dsl import dtypes as dt
from baracuda_dsl.errors import (BaracudaError, BufferTooSmallError, DeviceMismatchError,
                                 InvalidProblemError, KernelNotCachedError, UnsupportedError,
                                 WorkspaceTooSmallError)
from baracuda_dsl.vocabulary import (ArchSku, BackendKind, KernelSku, OpCategory, PlanPreference,
                                     PrecisionGuarantee, Workspace)


# ----------------------------------------------------------------------------- ArchSku
@pytest.mark.parametrize("text,want", [
    ("sm80", ArchSku.SM80), ("sm_80", ArchSku.SM80), ("80", ArchSku.SM80), ("SM80", ArchSku.SM80),
    (" sm_89 ", ArchSku.SM89), ("89", ArchSku.SM89),
    ("sm90a", ArchSku.SM90A), ("sm_90a", ArchSku.SM90A), ("sm90", ArchSku.SM90A),
    ("90", ArchSku.SM90A), ("90a", ArchSku.SM90A),
])
def test_arch_parse_spellings(text, want):
    assert ArchSku.parse(text) is want


@pytest.mark.parametrize("text", ["sm70", "sm_75", "sm100", "sm86", "", "titan", "sm90b"])
def test_arch_parse_rejects_unwired_and_names_wired(text):
    with pytest.raises(UnsupportedError) as ei:
        ArchSku.parse(text)
    msg = str(ei.value)
    assert all(a.value in msg for a in ArchSku)


@pytest.mark.parametrize("cc,want", [
    ((8, 0), ArchSku.SM80), ((8, 6), ArchSku.SM80), ((8, 7), ArchSku.SM80),
    ((8, 9), ArchSku.SM89), ((9, 0), ArchSku.SM90A),
])
def test_arch_for_compute_capability(cc, want):
    assert ArchSku.for_compute_capability(*cc) is want


@pytest.mark.parametrize("cc", [(7, 0), (7, 5), (6, 1), (10, 0), (12, 0)])
def test_arch_for_unwired_compute_capability(cc):
    with pytest.raises(UnsupportedError, match="wired"):
        ArchSku.for_compute_capability(*cc)


def test_arch_properties_are_consistent():
    for a in ArchSku:
        assert ArchSku.for_compute_capability(*a.compute_capability) is a
        assert ArchSku.parse(a.cute_arch) is a  # "sm_90a" round-trips
        assert a.cute_arch.startswith("sm_")
        assert ArchSku(a.value) is a
    assert ArchSku.SM90A.cute_arch == "sm_90a"
    assert [a.value for a in ArchSku] == ["sm80", "sm89", "sm90a"]


# ----------------------------------------------------------------------------- KernelSku
def _sku(**kw):
    base = dict(category=OpCategory.NORMALIZATION, op="rms_norm", element=bd.bfloat16,
                arch=ArchSku.SM90A, backend=BackendKind.CUTE_DSL,
                precision_guarantee=PrecisionGuarantee(bd.float32, bd.float32),
                template="row_norm_fw", knobs=(("chunks", 4), ("dtype", "bf16"), ("vec", 8)))
    base.update(kw)
    return KernelSku(**base)


def test_kernel_sku_hashable_and_value_equal():
    a, b = _sku(), _sku()
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1
    d = {a: 1}
    assert d[b] == 1
    variants = [_sku(arch=ArchSku.SM80), _sku(element=bd.float16), _sku(knobs=(("vec", 4),)),
                _sku(template="other"), _sku(op="layer_norm"), _sku(epilogue="relu"),
                _sku(precision_guarantee=PrecisionGuarantee(bd.float32, bd.float32,
                                                            deterministic=False))]
    assert len({a, *variants}) == 1 + len(variants)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.op = "x"


def test_kernel_sku_str_names_everything():
    s = str(_sku())
    for part in ("normalization", "rms_norm", "bf16", "cute_dsl", "row_norm_fw", "chunks=4",
                 "vec=8", "sm90a"):
        assert part in s, (part, s)
    assert "@sm80" in str(_sku(arch=ArchSku.SM80))
    assert str(_sku(template=None, knobs=())).count("-()") == 1


def test_plan_preference_and_workspace():
    p = PlanPreference(arch=ArchSku.SM80)
    assert p.arch is ArchSku.SM80 and p.allow_sm90a and p.max_workspace_bytes is None
    assert hash(p) == hash(PlanPreference(arch=ArchSku.SM80))
    assert Workspace.none().nbytes == 0 and Workspace.none().ptr == 0

    class Buf:  # a cuda.core Buffer look-alike
        handle, size = 0xABC000, 4096

    w = Workspace.from_buffer(Buf())
    assert (w.ptr, w.nbytes) == (0xABC000, 4096)
    assert Workspace.from_buffer(w) is w

    class Arr:
        ptr, nbytes = 0x1000, 64

    assert (Workspace.from_buffer(Arr()).ptr, Workspace.from_buffer(Arr()).nbytes) == (0x1000, 64)


# ----------------------------------------------------------------------------- dtypes
@pytest.mark.parametrize("spec,want", [
    ("bf16", dt.bfloat16), ("bfloat16", dt.bfloat16), ("BF16", dt.bfloat16),
    ("f32", dt.float32), ("float32", dt.float32), ("torch.float16", dt.float16),
    ("f64", dt.float64), ("bool", dt.bool_), ("bool_", dt.bool_), ("i64", dt.int64),
    ("uint8", dt.uint8), ("c64", dt.complex64), ("fp8e4m3", dt.float8_e4m3),
    (np.float64, dt.float64), (np.dtype("float16"), dt.float16), (np.int32, dt.int32),
    (np.dtype("<f4"), dt.float32), (np.bool_, dt.bool_), (np.complex128, dt.complex128),
])
def test_dtype_resolution(spec, want):
    assert dt.dtype(spec) is want


def test_dtype_resolution_by_name_attribute_and_identity():
    class TorchLike:
        def __str__(self):
            return "torch.bfloat16"

    class Named:
        name = "int16"

    assert dt.dtype(TorchLike()) is dt.bfloat16
    assert dt.dtype(Named()) is dt.int16
    for d in dt.ALL_DTYPES:
        assert dt.dtype(d) is d and dt.dtype(d.name) is d and dt.dtype(d.short) is d


@pytest.mark.parametrize("spec", ["float128", "f8", "", "complex32", "torch.quint8"])
def test_dtype_unknown_raises(spec):
    with pytest.raises(UnsupportedError):
        dt.dtype(spec)


def test_dtype_table_is_consistent():
    assert len({d.name for d in dt.ALL_DTYPES}) == len(dt.ALL_DTYPES)
    assert len({d.dlpack for d in dt.ALL_DTYPES}) == len(dt.ALL_DTYPES)
    for d in dt.ALL_DTYPES:
        assert d.bits == 8 * d.itemsize == d.dlpack[1] or d.kind == "b"
        assert dt.from_dlpack_code(*d.dlpack) is d
        assert d.to_numpy().itemsize == d.itemsize
        if d.numpy is not None:
            assert dt.from_typestr(np.dtype(d.numpy).str) is d
    assert dt.bfloat16.to_numpy() == np.dtype("uint16")
    assert dt.float32.is_floating and not dt.float32.is_integer
    assert dt.int8.is_integer and dt.uint64.is_integer and dt.complex64.is_complex
    assert set(dt.FP4) == {dt.float32, dt.float16, dt.bfloat16, dt.float64}


def test_dlpack_and_typestr_rejections():
    with pytest.raises(UnsupportedError, match="lanes"):
        dt.from_dlpack_code(2, 32, 4)
    with pytest.raises(UnsupportedError):
        dt.from_dlpack_code(2, 24)
    with pytest.raises(UnsupportedError):
        dt.from_dlpack_code(99, 8)
    with pytest.raises(UnsupportedError):
        dt.from_typestr("|V2")  # bf16 through __cuda_array_interface__ is ambiguous


# ----------------------------------------------------------------------------- errors
def test_error_hierarchy_keeps_builtin_catchability():
    assert issubclass(UnsupportedError, NotImplementedError)
    assert issubclass(InvalidProblemError, ValueError)
    assert issubclass(DeviceMismatchError, InvalidProblemError)
    assert issubclass(WorkspaceTooSmallError, ValueError)
    for cls in (UnsupportedError, InvalidProblemError, KernelNotCachedError, BufferTooSmallError):
        assert issubclass(cls, BaracudaError)
    e = BufferTooSmallError(100, 64, "output")
    assert (e.needed, e.got) == (100, 64) and "output" in str(e) and "100" in str(e)
    w = WorkspaceTooSmallError(512, 0)
    assert (w.needed, w.got) == (512, 0)


def test_kernel_not_cached_error_names_prebuild_command():
    e = KernelNotCachedError("row_norm_fw(dtype=f32)", "sm89", "/tmp/c", "normalization")
    assert isinstance(e, RuntimeError)
    assert ("python -m baracuda_dsl prebuild --arch sm89 --ops normalization --cache-dir /tmp/c"
            in str(e))
    assert e.arch == "sm89" and "row_norm_fw(dtype=f32)" in str(e)
