"""Fixtures of the GEMM tests: a stand-in for the driver's TMA descriptor encoder."""

import hashlib

import pytest


class FakeTensorMapEncoder:
    """Stand-in for ``cuTensorMapEncodeTiled``: the base address as a little-endian u64 at byte
    0 (where the driver keeps it), then 120 bytes derived from the layout; records every
    (layout, address) it encodes."""

    def __init__(self):
        self.calls = []

    @staticmethod
    def bytes_of(layout, address: int) -> bytes:
        body = hashlib.sha256(repr(layout).encode()).digest() * 4
        return address.to_bytes(8, "little") + body[:120]

    def __call__(self, layout, address: int) -> bytes:
        self.calls.append((layout, address))
        return self.bytes_of(layout, address)


@pytest.fixture
def fake_tensor_maps(monkeypatch):
    """The gemm_sm90 launches encode through a fresh TensorMapCache over a
    :class:`FakeTensorMapEncoder` (returned; its ``calls`` list the driver encodes made)."""
    import baracuda_dsl.ops.gemm.gemm_sm90_launch as G
    from baracuda_dsl.ops.gemm.tensor_maps import TensorMapCache

    enc = FakeTensorMapEncoder()
    monkeypatch.setattr(G, "TENSOR_MAPS", TensorMapCache(encode=enc))
    return enc
