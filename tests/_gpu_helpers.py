"""Helpers shared by the GPU tests of the copy / indexing plans (test_layout_gpu, test_pad_gpu,
test_indexing_gpu, test_repeat_gpu): random CUDA operands, poisoned outputs and byte-exact
comparison.  Importable without torch or a GPU (every helper takes the torch module)."""

import numpy as np

from tests import _checks

#: tests._checks' element-by-element checks and poisoning, re-exported for the tests that import
#: their helpers from here (pyproject puts the repo root on pytest's path)
assert_close, assert_equal, bounds, dtype_name, eps, poison, to_numpy = (
    _checks.assert_close, _checks.assert_equal, _checks.bounds, _checks.dtype_name, _checks.eps,
    _checks.poison, _checks.to_numpy)


def rand(torch, shape, dtype, gen, low=None):
    """A random CUDA tensor of ``dtype`` (a torch dtype name) drawn from ``gen``: bool coin flips,
    complex / float normals, integers in ``[low, 100)`` (default: -100 for signed integer dtypes,
    0 otherwise)."""
    dt = getattr(torch, dtype)
    if dtype == "bool":
        return torch.rand(shape, generator=gen, device="cuda") > 0.5
    if dt.is_complex:
        return torch.randn(shape, generator=gen, device="cuda", dtype=dt)
    if dt.is_floating_point:
        return torch.randn(shape, generator=gen, device="cuda").to(dt)
    if low is None:
        low = -100 if dtype.startswith("int") else 0
    return torch.randint(low, 100, shape, generator=gen, device="cuda").to(dt)


def poisoned_like(torch, ref):
    """A dense output whose every byte differs from the expected result ``ref`` (so unwritten
    bytes show)."""
    out = torch.empty_like(ref, memory_format=torch.contiguous_format)
    if ref.numel():
        out.view(-1).view(torch.uint8).copy_(~ref.contiguous().reshape(-1).view(torch.uint8))
    return out


def poisoned(torch, shape, dtype):
    """An output of ``dtype`` (a torch dtype name) filled with its dtype's poison
    (tests._checks.poison: NaN for every floating and complex dtype, ``iinfo.max`` for
    integers), so unwritten elements show in value and in byte-exact comparisons.  bool outputs
    get the byte 0x7F, which is neither False nor True: an unwritten element differs from any
    result byte for byte (a True poison would pass wherever the result is True)."""
    dt = getattr(torch, dtype)
    out = poison(torch, shape, dt)
    if dt == torch.bool and out.numel():
        out.reshape(-1).view(torch.uint8).fill_(0x7F)
    return out


def snapshot(torch, t):
    """A byte copy of ``t`` (to check later that a region was left untouched)."""
    return as_bytes(torch, t).clone()


def untouched(torch, t, before):
    """True when ``t`` still holds the bytes :func:`snapshot` took."""
    return torch.equal(as_bytes(torch, t), before)


def as_bytes(torch, a):
    """The bytes of ``a`` in row-major order (a flat uint8 tensor)."""
    return a.contiguous().reshape(-1).view(torch.uint8)


def bytes_equal(torch, a, b):
    """True when ``a`` and ``b`` hold the same bytes in row-major order."""
    return torch.equal(as_bytes(torch, a), as_bytes(torch, b))


# ------------------------------------------------------------------------- per-element bounds
#: the compute / accumulation precision of the library's kernels per value dtype (half types
#: and fp8 compute in f32; complex in its component type)
COMPUTE = {"float16": "float32", "bfloat16": "float32", "float8_e4m3fn": "float32",
           "float8_e5m2": "float32", "complex64": "float32", "complex128": "float64"}


def compute_of(dtype) -> str:
    """The compute dtype name of value dtype ``dtype`` (torch / numpy dtype or name)."""
    name = dtype_name(dtype)
    return COMPUTE.get(name, name)


def terms_bound(dtype, *, compute=None, terms=0.0, ref=None, scale=None):
    """``(rtol, atol, scale)`` for tests._checks.assert_close meaning, for every element,

        |out − ref| ≤ TINY(dtype) + eps(dtype)/2·|ref| + terms·eps(compute)·scale

    — the result's final rounding into ``dtype`` relative to the result itself, the ``terms``
    rounded operations in ``compute`` precision (default :func:`compute_of`) relative to
    ``scale`` (the magnitude of what they combined: Σ|terms| of a sum; None: |ref|).  Integer
    and bool dtypes: exact."""
    comp = compute_of(dtype) if compute is None else dtype_name(compute)
    if scale is None:
        rtol, atol = bounds(dtype_name(dtype), compute=comp, terms=terms)
        return rtol, atol, None
    rtol, atol = bounds(dtype_name(dtype))
    if rtol == 0.0:
        return 0.0, 0.0, None
    mag = np.abs(to_numpy(ref))
    s = np.maximum(np.abs(to_numpy(scale)), mag)
    return rtol, atol, mag + (terms * eps(comp) / rtol) * s


def assert_terms_close(out, ref, dtype, *, compute=None, terms=0.0, scale=None, what=""):
    """assert_close with :func:`terms_bound` (see there); ``dtype`` is the OUTPUT dtype."""
    rtol, atol, sc = terms_bound(dtype, compute=compute, terms=terms, ref=ref, scale=scale)
    return assert_close(out, ref, rtol, atol, scale=sc, what=what)


# ------------------------------------------------------- (N, C, *spatial) image operands
def image_out(torch, shape, dtype, layout="NCHW"):
    """A NaN- (or iinfo.max-) poisoned output of logical ``shape`` (N, C, *spatial), dense in
    ``layout`` ("NCHW" row-major, "NHWC" channels last); ``dtype`` a name or a torch dtype."""
    dt = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    if layout == "NCHW":
        t = torch.empty(shape, dtype=dt, device="cuda")
    else:
        t = torch.empty((shape[0],) + tuple(shape[2:]) + (shape[1],), dtype=dt,
                        device="cuda").movedim(-1, 1)
    return _checks.poison_(torch, t)


def image_inputs(torch, shape, dtype, gen):
    """(name, x) for a dense, a strided and a channels-last input of logical ``shape``."""
    yield "dense", rand(torch, shape, dtype, gen)
    base = rand(torch, tuple(shape[:-1]) + (2 * shape[-1] + 1,), dtype, gen)
    yield "strided", base[..., 1::2]
    cl = rand(torch, (shape[0],) + tuple(shape[2:]) + (shape[1],), dtype, gen)
    yield "channels_last", cl.movedim(-1, 1)


def randn(torch, shape, dtype, gen, scale=1.0):
    """Standard normal values (times ``scale``) drawn in float64 with ``gen`` and rounded to
    ``dtype`` (a name), on the GPU."""
    return (torch.randn(shape, generator=gen, device="cuda", dtype=torch.float64) * scale).to(
        getattr(torch, dtype))


def exact_values(rng, shape, dtype, scale=1.0, shift=0.0):
    """(float64 numpy values exactly representable in ``dtype``, the same values in ``dtype``):
    ``shift + scale · N(0, 1)`` drawn with numpy ``rng`` and rounded once to ``dtype`` (a name;
    bfloat16 through ml_dtypes) — operands whose float64 reference sees no input rounding."""
    import ml_dtypes

    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    a = (shift + scale * rng.standard_normal(shape)).astype(dt)
    return a.astype(np.float64), a
