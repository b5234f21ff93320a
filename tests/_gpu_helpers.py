"""Helpers shared by the GPU tests of the copy / indexing plans (test_layout_gpu, test_pad_gpu,
test_indexing_gpu, test_repeat_gpu): random CUDA operands, poisoned outputs and byte-exact
comparison.  Importable without torch or a GPU (every helper takes the torch module)."""


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
    """An output filled with a 0x7f byte pattern (NaN-like for floats), so unwritten bytes show."""
    out = torch.empty(shape, device="cuda", dtype=getattr(torch, dtype))
    if out.numel():
        out.view(-1).view(torch.uint8).fill_(0x7F)
    return out


def as_bytes(torch, a):
    """The bytes of ``a`` in row-major order (a flat uint8 tensor)."""
    return a.contiguous().reshape(-1).view(torch.uint8)


def bytes_equal(torch, a, b):
    """True when ``a`` and ``b`` hold the same bytes in row-major order."""
    return torch.equal(as_bytes(torch, a), as_bytes(torch, b))
