"""The GEMM family's share of the default prebuild set (:mod:`baracuda_dsl.jit.tiers`): the
kernels ``GemmPlan`` / ``Fp8GemmPlan`` pick without a tuning override.  Opt-in kernels (tf32,
int8, the SIMT fallback for f16 / bf16), e5m2 as the A operand and, on sm90a, the mma.sync tiles
the wgmma kernel replaces compile on first use."""

from ...jit.tiers import core_rule


@core_rule("gemm_tf32", "gemm_int8")
def opt_in(knobs, arch: str) -> bool:
    """tf32 and IntGemmPlan run only on request."""
    return False


@core_rule("gemm_mma")
def mma_core(knobs, arch: str) -> bool:
    """Every tile off sm90a; on sm90a (wgmma takes m > 16) only the decode tile."""
    return arch != "sm90a" or knobs.tile == "16x32"


@core_rule("gemm_simt")
def simt_core(knobs, arch: str) -> bool:
    """Strict f32; the f16 / bf16 SIMT kernel is a fallback for operands mma cannot take."""
    return knobs.dtype == "f32"


@core_rule("gemm_fp8", "gemm_sm90")
def fp8_core(knobs, arch: str) -> bool:
    """e5m2 (gradients) only as the B operand of the fp8 kernels' default pairing e4m3 x e4m3 /
    e4m3 x e5m2; e5m2 as A compiles on first use."""
    return getattr(knobs, "a", "e4m3") != "e5m2" and getattr(knobs, "dtype", "") != "e5m2"
