"""TMA descriptors cached per layout, base address patched per call (ops/gemm/tensor_maps.py),
with stand-ins for the driver's encoder: the address-field probe (found, not found, refuted by
the third encode), the per-layout check and the per-call fallback, the cache itself."""

import pytest

import baracuda_dsl as bd
from baracuda_dsl.ops.gemm.tensor_maps import (PROBE_ADDRESSES, PROBE_LAYOUT, TensorMapCache,
                                               TensorMapLayout, patch_address,
                                               probe_address_offset)

LAY = TensorMapLayout("bf16", (4096, 1000), (8208,), (64, 128), swizzle="128B",
                      l2_promotion="L2_128B")
LAY2 = TensorMapLayout("f16", (7, 13), (16,), (64, 64), swizzle="128B", l2_promotion="L2_128B")


def body(layout, n=120):
    return (repr(layout).encode() * 8)[:n]


class Encoder:
    """An encoder stand-in: ``place(layout, address) -> 128 bytes``; counts its calls."""

    def __init__(self, place):
        self.place = place
        self.calls = 0

    def __call__(self, layout, address):
        self.calls += 1
        raw = self.place(layout, address)
        assert len(raw) == 128
        return raw


def at_offset(off):
    """The address as a little-endian u64 at byte ``off`` of the layout's bytes."""
    def place(layout, address):
        b = body(layout)
        return b[:off] + address.to_bytes(8, "little") + b[off:]
    return place


def shifted(layout, address):          # the address >> 4 in a 48-bit field: no plain u64
    return (address >> 4).to_bytes(6, "little") + body(layout, 122)


def twice(layout, address):            # the address in two places
    a = address.to_bytes(8, "little")
    return a + body(layout, 56) + a + body(layout, 56)


def sneaky(layout, address):           # plain u64 at 0, but a flag only the third encode sees
    flag = b"\x01" if 0x5000_0000_0000 <= address < 0x6000_0000_0000 else b"\x00"
    return address.to_bytes(8, "little") + body(layout, 119) + flag


@pytest.mark.parametrize("off", [0, 8, 13, 120])
def test_probe_finds_a_plain_u64(off):
    enc = Encoder(at_offset(off))
    assert probe_address_offset(enc) == off
    assert enc.calls == 3                      # two to diff, one to verify


@pytest.mark.parametrize("place", [shifted, twice, sneaky], ids=lambda f: f.__name__)
def test_probe_rejects_other_encodings(place):
    assert probe_address_offset(Encoder(place)) is None


def test_probe_addresses_are_distinct_and_aligned():
    a1, a2, a3 = PROBE_ADDRESSES
    assert len({a1, a2, a3}) == 3 and all(a % 16 == 0 for a in PROBE_ADDRESSES)
    # they differ in every byte an address below 2**48 occupies
    assert all(a1.to_bytes(8, "little")[i] != a2.to_bytes(8, "little")[i] for i in range(6))
    assert PROBE_LAYOUT.rank == 2


@pytest.mark.parametrize("off", [0, 40])
def test_cached_descriptor_is_the_fresh_encode(off):
    """One driver encode per layout (plus the probe's three); every later address is patched
    into a copy, bit for bit what a fresh encode gives."""
    enc = Encoder(at_offset(off))
    cache = TensorMapCache(encode=enc)
    addrs = [0x1000, 0x7FFF_FFFF_FFF0, 0x2_0000_0010, 16, 0x1000]
    for a in addrs:
        assert cache.descriptor(LAY, a) == at_offset(off)(LAY, a)
    assert enc.calls == 3 + 1
    assert cache.address_offset() == off and cache.get(LAY).patched
    for a in addrs:
        assert cache.descriptor(LAY2, a) == at_offset(off)(LAY2, a)
    assert enc.calls == 3 + 2
    assert cache.get(LAY) is cache.get(LAY)


@pytest.mark.parametrize("place", [shifted, twice, sneaky], ids=lambda f: f.__name__)
def test_fallback_encodes_every_call(place):
    """No simple address field: every descriptor is a full encode (still exact)."""
    enc = Encoder(place)
    cache = TensorMapCache(encode=enc)
    assert cache.address_offset() is None
    probe = enc.calls                           # 2 (no single u64 window) or 3 (refuted)
    for i, a in enumerate((0x1000, 0x2000, 0x1000, 0x5555_0000_0000)):
        assert cache.descriptor(LAY, a) == place(LAY, a)
        assert enc.calls == probe + i + 1
    assert not cache.get(LAY).patched


def test_layout_not_holding_its_address_falls_back():
    """The probe found offset 0, but one layout's first encode does not hold its address
    there: that layout is encoded per call, the others stay patched."""
    def place(layout, address):
        return shifted(layout, address) if layout == LAY2 else at_offset(0)(layout, address)

    enc = Encoder(place)
    cache = TensorMapCache(encode=enc)
    for a in (0x1000, 0x2000, 0x3000):
        assert cache.descriptor(LAY, a) == place(LAY, a)
        assert cache.descriptor(LAY2, a) == place(LAY2, a)
    assert cache.get(LAY).patched and not cache.get(LAY2).patched
    assert enc.calls == 3 + 1 + 3


def test_misaligned_address_and_capacity():
    enc = Encoder(at_offset(0))
    cache = TensorMapCache(encode=enc, capacity=4)
    with pytest.raises(bd.MisalignedOperandError):
        cache.descriptor(LAY, 0x1008)
    first = cache.get(LAY)
    first.at(0x1000)
    for r in range(2, 12):                      # more layouts than the capacity
        lay = TensorMapLayout("u8", (256, r), (256,), (64, 8))
        assert cache.descriptor(lay, 0x40) == at_offset(0)(lay, 0x40)
    assert len(cache._maps) <= 4
    assert first.at(0x2000) == at_offset(0)(LAY, 0x2000)          # still valid
    with pytest.raises(bd.MisalignedOperandError):
        first.at(0x2004)


def test_patch_address():
    raw = bytes(range(128))
    out = patch_address(raw, 16, 0x0102030405060708)
    assert out[:16] == raw[:16] and out[24:] == raw[24:]
    assert out[16:24] == bytes([8, 7, 6, 5, 4, 3, 2, 1])


def test_layout_validation():
    with pytest.raises(bd.InvalidProblemError):
        TensorMapLayout("bf16", (), (), ())
    with pytest.raises(bd.InvalidProblemError):
        TensorMapLayout("bf16", (8, 8), (), (8, 8))                  # rank mismatch
    with pytest.raises(bd.InvalidProblemError):
        TensorMapLayout("bf17", (8, 8), (16,), (8, 8))
    with pytest.raises(bd.InvalidProblemError):
        TensorMapLayout("bf16", (8, 8), (16,), (8, 8), swizzle="256B")
    with pytest.raises(bd.InvalidProblemError):
        TensorMapLayout("bf16", (8, 8), (16,), (8, 8), element_strides=(1,))
    assert hash(LAY) == hash(TensorMapLayout("bf16", (4096, 1000), (8208,), (64, 128),
                                             swizzle="128B", l2_promotion="L2_128B"))
