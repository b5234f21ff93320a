"""BincountPlan / HistogramPlan on the GPU against numpy references (exact counts; weight sums
element by element within their count of roundings), incl. strided and empty inputs, bins past
the shared-memory limit, NaN and out-of-range values."""

import numpy as np
import pytest

from _gpu_helpers import assert_equal, assert_terms_close
from tests._checks import poison

pytestmark = pytest.mark.gpu

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float32", "float16", "bfloat16", "float64"]


def _torch():
    return pytest.importorskip("torch")


def _poison(torch, n, dtype):
    """NaN for float outputs, iinfo.max for the int64 counts (tests._checks.poison)."""
    return poison(torch, (n,), dtype)


def _np64(t):
    return t.detach().double().cpu().numpy() if t.dtype.is_floating_point else t.cpu().numpy()


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("weights", [None, "float32", "float64", "bfloat16"])
def test_bincount(dtype, weights):
    torch = _torch()
    from baracuda_dsl.ops.histogram.histogram import BincountDescriptor, BincountPlan, CountArgs

    gen = torch.Generator(device="cuda").manual_seed(1)
    hi = 100 if dtype in ("int8", "uint8") else 5000
    for n, bins, stride in ((1, 1, 1), (1000, hi, 1), (65537, hi, 3), (7, 3, 2), (0, 4, 1),
                            (4097, 9000 if hi > 100 else 50, 1)):
        base = torch.randint(0, hi, (n * stride,), generator=gen, device="cuda").to(getattr(torch, dtype))
        x = base[::stride]
        w = None
        if weights:
            w = torch.rand((n * 2,), generator=gen, device="cuda").to(getattr(torch, weights))[::2]
        desc = BincountDescriptor(n, bins, dtype, weights)
        plan = BincountPlan.select(desc)
        odt = {None: torch.int64, "float64": torch.float64}.get(weights, torch.float32)
        out = _poison(torch, bins, odt)
        plan.run(CountArgs(x, out, w))
        xs = x.cpu().numpy().astype(np.int64)
        keep = xs < bins
        ref = np.bincount(xs[keep], None if w is None else _np64(w)[keep], minlength=bins)[:bins]
        got = out.cpu().numpy()
        if weights is None:
            assert_equal(got, ref, what=f"bincount {n} {bins}")
        else:
            # weights in [0, 1): no cancellation; each bin adds its count of weights (atomics
            # in the output dtype, f32 or f64): count roundings relative to the bin's sum
            count = np.bincount(xs[keep], minlength=bins)[:bins]
            assert_terms_close(got, ref, odt, compute=odt, terms=1, scale=count * ref,
                               what=f"bincount {n} {bins} weights={weights}")


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "uint8", "int64"])
@pytest.mark.parametrize("mode", ["edges", "uniform"])
def test_histogram(dtype, mode):
    torch = _torch()
    from baracuda_dsl.ops.histogram.histogram import CountArgs, HistogramDescriptor, HistogramPlan

    gen = torch.Generator(device="cuda").manual_seed(2)
    tdt = getattr(torch, dtype)
    for n, bins in ((1000, 10), (65537, 37), (33, 1), (4097, 5000), (0, 3)):
        if tdt.is_floating_point:
            x = (torch.randn((n,), generator=gen, device="cuda") * 3).to(tdt)
            if n > 10:
                x[3] = float("nan")
                x[5] = float("inf")
        else:
            x = torch.randint(0, 120, (n,), generator=gen, device="cuda").to(tdt)
        lo, hi = (-4.0, 4.0) if tdt.is_floating_point else (10.0, 100.0)
        xs = _np64(x)
        if mode == "edges":
            edges = np.linspace(lo, hi, bins + 1)
            e = torch.tensor(edges, device="cuda")
            ref = np.histogram(xs[~np.isnan(xs)], bins=edges)[0]
        else:
            e = None
            b = np.floor((xs - lo) * (bins / (hi - lo)))
            ok = (xs >= lo) & (xs <= hi)
            b = np.minimum(b[ok], bins - 1).astype(np.int64)
            ref = np.bincount(b, minlength=bins)
        plan = HistogramPlan.select(HistogramDescriptor(n, bins, dtype, mode, lo, hi))
        out = _poison(torch, bins, torch.int64)
        plan.run(CountArgs(x, out, edges=e))
        assert_equal(out.cpu().numpy(), ref, what=f"histogram {dtype} {mode} {n} {bins}")


def test_histogram_weighted_strided():
    torch = _torch()
    from baracuda_dsl.ops.histogram.histogram import CountArgs, HistogramDescriptor, HistogramPlan

    gen = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn((3, 5000), generator=gen, device="cuda", dtype=torch.float64)[1, ::2]
    w = torch.rand((2500,), generator=gen, device="cuda", dtype=torch.float64)
    edges = np.array([-3.0, -1.0, -0.5, 0.0, 0.1, 2.0, 3.0])
    plan = HistogramPlan.select(HistogramDescriptor(2500, 6, "f64", weights="f64"))
    out = poison(torch, (6,), torch.float64)
    plan.run(CountArgs(x, out, w, torch.tensor(edges, device="cuda")))
    ref = np.histogram(x.cpu().numpy(), bins=edges, weights=w.cpu().numpy())[0]
    count = np.histogram(x.cpu().numpy(), bins=edges)[0]
    assert_terms_close(out.cpu().numpy(), ref, "float64", terms=1, scale=count * ref,
                       what="weighted histogram")
