"""The conv family without a GPU: descriptor validation (typed errors), output shapes against
torch's documented formulas, the layouts' strides against torch's channels_last strides, SKUs,
the cuDNN graph each plan asks for, operand checks before any launch, empty problems, the
namespace's argument handling, and the cuDNN frontend call sequence run against a stand-in
``cudnn`` module (graph build, the plan walk, raw-pointer execution, error typing)."""

import itertools
import types

import pytest

import baracuda_dsl as bd
from baracuda_dsl import dtypes as D
from baracuda_dsl.ops.conv import (ConvArgs, ConvBackwardDataArgs, ConvBackwardDataPlan,
                                   ConvBackwardFilterArgs, ConvBackwardFilterPlan,
                                   ConvDescriptor, ConvPlan, ConvTuning)
from baracuda_dsl.ops.conv import conv as C
from baracuda_dsl.ops.conv import cudnn_backend as cb
from baracuda_dsl.tensor import TensorView
from baracuda_dsl.vocabulary import BackendKind, OpCategory

PREF = bd.PlanPreference(arch=bd.ArchSku.SM90A)


def _torch_conv_out(i, k, s, p, d):
    # torch.nn.Conv{1,2,3}d docs: floor((L_in + 2·padding − dilation·(kernel − 1) − 1) / stride + 1)
    return int((i + 2 * p - d * (k - 1) - 1) / s + 1) if (i + 2 * p - d * (k - 1) - 1) >= 0 \
        else -1


def _torch_convT_out(i, k, s, p, d, op):
    # torch.nn.ConvTranspose{1,2,3}d docs
    return (i - 1) * s - 2 * p + d * (k - 1) + op + 1


# -------------------------------------------------------------------------------- shapes
@pytest.mark.parametrize("i,k,s,p,d", list(itertools.product((1, 5, 8, 13), (1, 2, 3, 7),
                                                                (1, 2, 3), (0, 1, 3), (1, 2))))
def test_output_size_matches_torch_formula(i, k, s, p, d):
    ref = _torch_conv_out(i, k, s, p, d)
    if ref < 1:
        with pytest.raises(bd.InvalidProblemError):
            ConvDescriptor(1, 2, 3, 4, (i,), (k,), s, p, d)
        return
    desc = ConvDescriptor(1, 2, 3, 4, (i,), (k,), s, p, d)
    assert desc.out_size == (ref,)
    assert desc.y_shape == (2, 4, ref) and desc.x_shape == (2, 3, i)
    assert desc.w_shape == (4, 3, k)


@pytest.mark.parametrize("i,k,s,p,d,op", [(1, 1, 1, 0, 1, 0), (5, 3, 2, 1, 1, 1),
                                          (7, 4, 3, 2, 2, 2), (4, 2, 2, 0, 3, 2),
                                          (9, 5, 1, 2, 1, 0), (3, 3, 3, 1, 1, 0)])
def test_transposed_output_size_matches_torch_formula(i, k, s, p, d, op):
    desc = ConvDescriptor(2, 3, 6, 4, (i, i + 1), (k, k), s, p, d, groups=2, transposed=True,
                          output_padding=op)
    assert desc.out_size == (_torch_convT_out(i, k, s, p, d, op),
                             _torch_convT_out(i + 1, k, s, p, d, op))
    assert desc.w_shape == (6, 2, k, k)                 # (C, K/groups, *kernel)
    assert desc.conv_input_shape == desc.y_shape and desc.conv_output_shape == desc.x_shape


def test_descriptor_normalises_and_shapes():
    d = ConvDescriptor(3, 2, 4, 8, (5, 6, 7), 3, stride=(1, 2, 1), padding=1, groups=4,
                       dtype="bf16", layout="NDHWC")
    assert d.kernel_size == (3, 3, 3) and d.stride == (1, 2, 1) and d.padding == (1, 1, 1)
    assert d.layout == "NHWC" and d.dtype == D.bfloat16 and d.padding_end == (1, 1, 1)
    assert d.out_size == (5, 3, 7) and d.w_shape == (8, 1, 3, 3, 3)
    assert d.macs == 2 * 8 * 5 * 3 * 7 * 1 * 27
    a = ConvDescriptor(2, 1, 1, 1, (6, 6), (2, 4), padding=(0, 1), padding_end=(1, 2))
    assert a.out_size == (6, 6) and a.pre_padding == (0, 1) and a.post_padding == (1, 2)


def test_layout_strides_match_torch_channels_last():
    # torch: torch.empty(2,3,4,5).to(memory_format=torch.channels_last).stride()
    assert C.layout_strides((2, 3, 4, 5), "NHWC") == (60, 1, 15, 3)
    assert C.layout_strides((2, 3, 4, 5, 6), "NHWC") == (360, 1, 90, 18, 3)
    assert C.layout_strides((2, 3, 7), "NHWC") == (21, 1, 3)
    assert C.layout_strides((2, 3, 4, 5), "NCHW") == (60, 20, 5, 1)


@pytest.mark.parametrize("kw,err", [
    (dict(spatial=4), bd.InvalidProblemError),
    (dict(spatial=0), bd.InvalidProblemError),
    (dict(n=-1), bd.InvalidProblemError),
    (dict(c=0), bd.InvalidProblemError),
    (dict(k=0), bd.InvalidProblemError),
    (dict(in_size=(5,)), bd.InvalidProblemError),              # wrong count
    (dict(in_size=(0, 5)), bd.InvalidProblemError),
    (dict(kernel_size=0), bd.InvalidProblemError),
    (dict(stride=0), bd.InvalidProblemError),
    (dict(dilation=0), bd.InvalidProblemError),
    (dict(padding=-1), bd.InvalidProblemError),
    (dict(padding=1.5), bd.InvalidProblemError),
    (dict(stride=True), bd.InvalidProblemError),
    (dict(groups=3), bd.InvalidProblemError),                  # does not divide c=4
    (dict(groups=0), bd.InvalidProblemError),
    (dict(kernel_size=7), bd.InvalidProblemError),             # output < 1
    (dict(dtype="int32"), bd.UnsupportedError),
    (dict(dtype="c64"), bd.UnsupportedError),
    (dict(dtype="fp8e4m3"), bd.UnsupportedError),
    (dict(layout="NCWH"), bd.InvalidProblemError),
    (dict(activation="gelu"), bd.UnsupportedError),
    (dict(activation=1), bd.InvalidProblemError),
    (dict(bias=1), bd.InvalidProblemError),
    (dict(output_padding=1), bd.InvalidProblemError),          # conv: none allowed
    (dict(transposed=True, output_padding=2, stride=2), bd.InvalidProblemError),  # >= stride
    (dict(transposed=True, padding_end=1), bd.InvalidProblemError),
    (dict(transposed=True, padding=5), bd.InvalidProblemError),  # output < 1
])
def test_descriptor_errors(kw, err):
    base = dict(spatial=2, n=2, c=4, k=6, in_size=(5, 6), kernel_size=3)
    base.update(kw)
    with pytest.raises(err):
        ConvDescriptor(**base)


def test_tuning_validation():
    with pytest.raises(bd.InvalidProblemError):
        ConvTuning(allow_tf32=1)
    assert ConvTuning(True).allow_tf32 is True


# ----------------------------------------------------------------------------- SKU / graph
@pytest.mark.parametrize("cls,tr,name,op", [
    (ConvPlan, False, "conv", "fprop"), (ConvPlan, True, "conv_transpose", "dgrad"),
    (ConvBackwardDataPlan, False, "conv_backward_data", "dgrad"),
    (ConvBackwardDataPlan, True, "conv_transpose_backward_data", "fprop"),
    (ConvBackwardFilterPlan, False, "conv_backward_filter", "wgrad"),
    (ConvBackwardFilterPlan, True, "conv_transpose_backward_filter", "wgrad")])
def test_sku_and_graph(cls, tr, name, op):
    d = ConvDescriptor(2, 3, 4, 6, (7, 8), 3, stride=2, padding=1, groups=2, dtype="f16",
                       layout="NHWC", transposed=tr, output_padding=1 if tr else 0)
    p = cls.select(d, PREF)
    s = p.sku()
    assert s.category is OpCategory.CONV and s.backend is BackendKind.VENDOR
    assert s.op == name and s.element == D.float16 and s.template == f"cudnn.conv_{op}"
    assert s.layout == "NHWC:2d" and dict(s.knobs) == {"tf32": False, "deterministic": False}
    pg = p.precision_guarantee()
    assert pg.accumulator == D.float32 and pg.deterministic is False
    g = p.graph_spec()
    assert g.op == op and g.dtype == D.float16
    # the convolution cuDNN sees: input = x (conv) or y (transposed), channels-last strides
    ci = d.y_shape if tr else d.x_shape
    assert g.x == (ci, C.layout_strides(ci, "NHWC"))
    assert g.w == (d.w_shape, C.layout_strides(d.w_shape, "NHWC"))
    assert g.pre == (1, 1) and g.post == (1, 1) and g.stride == (2, 2)
    assert p.recordable is False


def test_epilogue_fused_for_conv_and_separate_for_transposed():
    d = ConvDescriptor(2, 2, 4, 8, (6, 6), 3, bias=True, activation="relu", dtype="bf16")
    p = ConvPlan.select(d, PREF)
    g = p.graph_spec()
    assert g.bias == ((1, 8, 1, 1), (8, 1, 1, 1)) and g.relu and p.epilogue_after_graph() is None
    assert g.roles == ("x", "w", "bias", "y") and p.sku().epilogue == "bias+relu"
    t = ConvPlan.select(ConvDescriptor(2, 2, 4, 8, (6, 6), 3, bias=True, activation="relu",
                                       transposed=True), PREF)
    assert t.graph_spec().bias is None and not t.graph_spec().relu
    assert t.epilogue_after_graph() == (True, True)
    # the backward plans ignore the epilogue (gradients of the convolution alone)
    b = ConvBackwardDataPlan.select(d, PREF)
    assert b.graph_spec().bias is None and b.sku().epilogue is None


def test_tuning_reaches_graph_and_sku():
    d = ConvDescriptor(2, 2, 4, 8, (6, 6), 3)
    pref = bd.PlanPreference(arch=bd.ArchSku.SM90A, max_workspace_bytes=1 << 20,
                             tuning=ConvTuning(allow_tf32=True, deterministic=True))
    p = ConvBackwardFilterPlan.select(d, pref)
    g = p.graph_spec()
    assert g.tf32 and g.deterministic and g.max_workspace == 1 << 20
    assert dict(p.sku().knobs) == {"tf32": True, "deterministic": True}
    assert p.precision_guarantee().deterministic
    # TF32 is a float32 notion only
    h = ConvPlan.select(ConvDescriptor(2, 2, 4, 8, (6, 6), 3, dtype="f16"), pref)
    assert dict(h.sku().knobs)["tf32"] is False
    f64 = ConvPlan.select(ConvDescriptor(2, 2, 4, 8, (6, 6), 3, dtype="f64"), PREF)
    assert f64.precision_guarantee().accumulator == D.float64


# --------------------------------------------------------------------------- operand checks
_NEXT = [1 << 24]


def _view(shape, dt, layout="NCHW", strides=None):
    _NEXT[0] += 1 << 20
    st = C.layout_strides(shape, layout) if strides is None else strides
    return TensorView(_NEXT[0], shape, st, dt, 0)


def test_bind_accepts_layouts_and_rejects_wrong_operands():
    for layout in ("NCHW", "NHWC"):
        d = ConvDescriptor(2, 2, 4, 8, (6, 6), 3, dtype="f32", layout=layout, bias=True)
        p = ConvPlan.select(d, PREF)
        x, w = _view(d.x_shape, D.float32, layout), _view(d.w_shape, D.float32, layout)
        y, b = _view(d.y_shape, D.float32, layout), _view((8,), D.float32)
        p.can_implement(ConvArgs(x, w, y, b))
        other = "NHWC" if layout == "NCHW" else "NCHW"
        with pytest.raises(bd.UnsupportedError):          # the other layout
            p.can_implement(ConvArgs(_view(d.x_shape, D.float32, other), w, y, b))
        with pytest.raises(bd.InvalidProblemError):       # wrong shape
            p.can_implement(ConvArgs(x, w, _view((2, 8, 4, 5), D.float32, layout), b))
        with pytest.raises(bd.UnsupportedError):          # wrong dtype
            p.can_implement(ConvArgs(x, _view(d.w_shape, D.float16, layout), y, b))
        with pytest.raises(bd.InvalidProblemError):       # missing bias
            p.can_implement(ConvArgs(x, w, y))
        with pytest.raises(bd.UnsupportedError):          # strided bias
            p.can_implement(ConvArgs(x, w, y, _view((8,), D.float32, strides=(2,))))
        with pytest.raises(bd.InvalidProblemError):       # output overlapping an input
            p.can_implement(ConvArgs(x, w, TensorView(x.ptr, d.y_shape,
                                                      C.layout_strides(d.y_shape, layout),
                                                      D.float32, 0), b))
    nb = ConvPlan.select(ConvDescriptor(2, 2, 4, 8, (6, 6), 3), PREF)
    d = nb.desc
    with pytest.raises(bd.InvalidProblemError):           # bias given, descriptor has none
        nb.can_implement(ConvArgs(_view(d.x_shape, D.float32), _view(d.w_shape, D.float32),
                                  _view(d.y_shape, D.float32), _view((8,), D.float32)))


def test_bind_backward_operands():
    d = ConvDescriptor(1, 3, 4, 6, (9,), 3, transposed=True, stride=2)
    p = ConvBackwardDataPlan.select(d, PREF)
    p.can_implement(ConvBackwardDataArgs(_view(d.y_shape, D.float32), _view(d.w_shape, D.float32),
                                         _view(d.x_shape, D.float32)))
    with pytest.raises(bd.InvalidProblemError):
        p.can_implement(ConvBackwardDataArgs(_view(d.x_shape, D.float32),
                                             _view(d.w_shape, D.float32),
                                             _view(d.x_shape, D.float32)))
    q = ConvBackwardFilterPlan.select(d, PREF)
    q.can_implement(ConvBackwardFilterArgs(_view(d.x_shape, D.float32),
                                           _view(d.y_shape, D.float32),
                                           _view(d.w_shape, D.float32)))
    # a permuted (non-layout) weight is refused before any launch
    ws = d.w_shape
    with pytest.raises(bd.UnsupportedError):
        q.can_implement(ConvBackwardFilterArgs(_view(d.x_shape, D.float32),
                                               _view(d.y_shape, D.float32),
                                               _view(ws, D.float32, strides=(1, ws[0], ws[0] * ws[1]))))


def test_empty_problems_need_no_gpu():
    d = ConvDescriptor(2, 0, 4, 8, (6, 6), 3)
    for cls in (ConvPlan, ConvBackwardDataPlan):
        p = cls.select(d, PREF)
        assert p.is_empty() and p.workspace_size() == 0
    f = ConvBackwardFilterPlan.select(d, PREF)
    assert not f.is_empty() and f.workspace_size() == 0      # dw = 0: a memset only


# ----------------------------------------------------------------------------- namespace
def test_namespace_descriptors():
    from array_api import _conv_extensions as X

    d = X._descriptor("conv", (2, 4, 9, 10), (6, 2, 3, 4), D.float16, "NCHW", transposed=False,
                      stride=1, padding="same", dilation=(1, 2), groups=2)
    assert d.padding == (1, 3) and d.padding_end == (1, 3) and d.out_size == (9, 10)
    e = X._descriptor("conv", (2, 4, 9, 10), (6, 4, 2, 2), D.float16, "NCHW", transposed=False,
                      stride=1, padding="same", dilation=1, groups=1)
    assert e.padding == (0, 0) and e.padding_end == (1, 1) and e.out_size == (9, 10)
    v = X._descriptor("conv", (2, 4, 9), (6, 4, 3), D.float32, "NCHW", transposed=False,
                      stride=2, padding="valid", dilation=1, groups=1)
    assert v.out_size == (4,)
    t = X._descriptor("conv_transpose", (2, 4, 5, 5), (4, 3, 3, 3), D.float32, "NHWC",
                      transposed=True, stride=2, padding=1, dilation=1, groups=1,
                      output_padding=1)
    assert t.k == 3 and t.y_shape == (2, 3, 10, 10) and t.layout == "NHWC"
    with pytest.raises(ValueError):
        X._descriptor("conv", (2, 4, 9), (6, 4, 3), D.float32, "NCHW", transposed=False,
                      stride=2, padding="same", dilation=1, groups=1)
    with pytest.raises(ValueError):                        # channel mismatch
        X._descriptor("conv", (2, 4, 9), (6, 3, 3), D.float32, "NCHW", transposed=False,
                      stride=1, padding=0, dilation=1, groups=1)
    with pytest.raises(ValueError):
        X._descriptor("conv_transpose", (2, 4, 9), (6, 3, 3), D.float32, "NCHW",
                      transposed=True, stride=1, padding="same", dilation=1, groups=1)


def test_namespace_layout_choice():
    from array_api import _conv_extensions as X
    from array_api._array_object import Array
    from array_api._device import Device

    shape = (2, 3, 4, 5)
    dense = Array._new(1 << 20, shape, C.layout_strides(shape, "NCHW"), D.float32, Device(0),
                       None)
    cl = Array._new(1 << 21, shape, C.layout_strides(shape, "NHWC"), D.float32, Device(0), None)
    assert X._layout_of(dense) == "NCHW" and X._layout_of(cl) == "NHWC"
    assert X._layout_of(cl, dense) == "NCHW"
    one = (2, 1, 4, 5)       # C == 1: dense and channels-last at once → NCHW
    amb = Array._new(1 << 22, one, C.layout_strides(one, "NCHW"), D.float32, Device(0), None)
    assert X._layout_of(amb) == "NCHW"


# ------------------------------------------------------------ the frontend, with a stand-in
class _FakeTensor:
    def __init__(self, g, name):
        self.g, self.name, self.attrs = g, name, {}

    def _set(self, k, v):
        self.attrs[k] = v
        return self

    def set_output(self, v):
        return self._set("output", v)

    def set_dim(self, v):
        return self._set("dim", v)

    def set_stride(self, v):
        return self._set("stride", v)

    def set_data_type(self, v):
        return self._set("dtype", v)


class _FakeGraph:
    fail_plans = ()

    def __init__(self, **kw):
        self.kw, self.calls, self.tensors = kw, [], {}

    def tensor(self, name, dim, stride, data_type):
        t = self.tensors[name] = _FakeTensor(self, name)
        t.attrs.update(dim=dim, stride=stride, dtype=data_type)
        return t

    def _op(self, op, *a, **kw):
        self.calls.append((op, kw))
        return _FakeTensor(self, op)

    def conv_fprop(self, x, w, **kw):
        return self._op("conv_fprop", **kw)

    def conv_dgrad(self, loss, filter, **kw):
        return self._op("conv_dgrad", **kw)

    def conv_wgrad(self, image, loss, **kw):
        return self._op("conv_wgrad", **kw)

    def bias(self, input, bias, **kw):
        return self._op("bias", **kw)

    def relu(self, input, **kw):
        return self._op("relu", **kw)

    def validate(self):
        self.calls.append(("validate",))

    def build_operation_graph(self):
        self.calls.append(("bog",))

    def deselect_numeric_notes(self, notes):
        self.calls.append(("notes", tuple(notes)))

    def deselect_workspace_greater_than(self, n):
        self.calls.append(("ws_cap", n))

    def create_execution_plans(self, modes):
        self.calls.append(("plans", tuple(modes)))

    def check_support(self):
        self.calls.append(("check",))

    def get_execution_plan_count(self):
        return 3

    def build_plan_at_index(self, i):
        self.calls.append(("build", i))
        if i in self.fail_plans:
            raise RuntimeError(f"plan {i} deselected")

    def get_workspace_size(self):
        return 1000

    def execute(self, pack, workspace, handle=None):
        self.calls.append(("execute", pack, workspace, handle))


def _fake_cudnn():
    m = types.SimpleNamespace()
    m.data_type = types.SimpleNamespace(HALF="HALF", BFLOAT16="BF16", FLOAT="FLOAT",
                                        DOUBLE="DOUBLE")
    m.numerical_note = types.SimpleNamespace(DOWN_CONVERT_INPUTS="DCI", TENSOR_CORE="TC",
                                             REDUCED_PRECISION_REDUCTION="RPR",
                                             NONDETERMINISTIC="ND")
    m.heur_mode = types.SimpleNamespace(A="A", FALLBACK="FALLBACK")

    class NotSupported(Exception):
        pass

    m.cudnnGraphNotSupportedError = NotSupported
    m.pygraph = _FakeGraph
    m.create_handle = lambda: "HANDLE"
    m.set_stream = lambda h, s: m.streams.append((h, s))
    m.streams = []
    return m


@pytest.fixture
def fake_cudnn(monkeypatch):
    m = _fake_cudnn()
    monkeypatch.setattr(cb, "_LIB", [m])
    monkeypatch.setattr(cb, "_STATE", cb._ThreadState())
    monkeypatch.setattr(cb, "handle", lambda ordinal: "HANDLE")
    import baracuda_dsl.runtime.device as dev
    monkeypatch.setattr(dev, "bind_thread", lambda ordinal=0: None)
    return m


def test_build_sequence_and_walk(fake_cudnn, monkeypatch):
    monkeypatch.setattr(_FakeGraph, "fail_plans", (0,))
    d = ConvDescriptor(2, 2, 4, 8, (6, 6), 3, bias=True, activation="relu", dtype="f32")
    spec = ConvPlan.select(d, PREF).graph_spec()
    built = cb.graph(spec, 0, "test")
    g = built.graph
    ops = [c[0] for c in g.calls]
    assert ops[:3] == ["conv_fprop", "bias", "relu"]
    assert ops[3:] == ["validate", "bog", "notes", "plans", "check", "build", "build"]
    assert dict(g.calls[0][1]) == dict(compute_data_type="FLOAT", pre_padding=[0, 0],
                                       post_padding=[0, 0], stride=[1, 1], dilation=[1, 1])
    assert set(g.calls[5][1]) == {"DCI", "RPR", "TC"}          # strict f32: no tensor cores
    assert g.calls[6][1] == ("A", "FALLBACK")
    assert built.workspace == 1000 and g.kw["io_data_type"] == "FLOAT"
    y = built.tensors["y"]
    assert y.attrs["output"] and y.attrs["dim"] == [2, 8, 4, 4] and y.attrs["dtype"] == "FLOAT"
    assert cb.graph(spec, 0, "test") is built                   # cached
    cb.execute(built, {"x": 11, "w": 22, "bias": 33, "y": 44}, 7, 555, "test")
    _, pack, ws, h = g.calls[-1]
    assert ws == 555 and h == "HANDLE" and fake_cudnn.streams[-1] == ("HANDLE", 7)
    assert {t.name: p for t, p in pack.items()} == {"x": 11, "w": 22, "bias": 33,
                                                    "relu": 44}
    assert all(type(p) is int for p in pack.values())


def test_build_every_plan_failing_is_unsupported(fake_cudnn, monkeypatch):
    monkeypatch.setattr(_FakeGraph, "fail_plans", (0, 1, 2))
    spec = ConvBackwardDataPlan.select(ConvDescriptor(2, 2, 4, 8, (6, 6), 3, dtype="bf16"),
                                       PREF).graph_spec()
    with pytest.raises(bd.UnsupportedError, match="cuDNN cannot run"):
        cb.graph(spec, 0, "test")


def test_fused_epilogue_falls_back(fake_cudnn, monkeypatch):
    real = _FakeGraph.bias

    def no_fusion(self, input, bias, **kw):
        raise fake_cudnn.cudnnGraphNotSupportedError("no fusion")

    monkeypatch.setattr(_FakeGraph, "bias", no_fusion)
    d = ConvDescriptor(2, 2, 4, 8, (6, 6), 3, bias=True, dtype="bf16", layout="NHWC")
    p = ConvPlan.select(d, PREF)
    from baracuda_dsl.runtime import device as dev
    monkeypatch.setattr(dev, "current_device_ordinal", lambda: 0)
    assert p.workspace_size() == 1024                        # aligned up
    assert p.epilogue_after_graph() == (True, False)
    monkeypatch.setattr(_FakeGraph, "bias", real)


def test_error_typing(fake_cudnn):
    e = cb.typed(fake_cudnn.cudnnGraphNotSupportedError("x"), "w")
    assert isinstance(e, bd.UnsupportedError)
    assert isinstance(cb.typed(RuntimeError("CUDNN_STATUS_ALLOC_FAILED"), "w"), MemoryError)
    assert isinstance(cb.typed(RuntimeError("Unable to find symbol cudnnGetVersion"), "w"),
                      bd.UnsupportedError)
    other = cb.typed(RuntimeError("CUDNN_STATUS_EXECUTION_FAILED"), "w")
    assert isinstance(other, cb.CudnnError) and isinstance(other, bd.BaracudaError)


def test_family_templates():
    from baracuda_dsl import ops

    assert "conv" in ops.FAMILIES
    # the convolutions run on cuDNN; the family's DSL templates are unfold / fold
    assert {t.name for t in ops.all_templates(["conv"])} == {"im2col", "col2im"}
    for name in ("ConvDescriptor", "ConvPlan", "ConvBackwardDataPlan", "ConvBackwardFilterPlan",
                 "ConvTuning"):
        assert getattr(bd, name, None) is not None or name in ops.PUBLIC
