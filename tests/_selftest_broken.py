"""Test-only family ``selftest_broken``: a template whose compiles always fail (prebuild
failure reporting)."""

from _selftest_knobs import SelftestKnobs
from baracuda_dsl.jit import KernelTemplate, LaunchGeometry, params, register

FAMILY = "selftest_broken"

#: a deliberately wrong ABI (``n`` declared i64, the kernel takes Int32): every compile of it
#: fails the compiler's ABI check, which the prebuild failure-reporting tests rely on
SELFTEST_BAD_ABI = register(KernelTemplate(
    name="selftest_bad_abi",
    family="selftest_broken",
    module="_selftest_kernel",
    params=params("x:ptr y:ptr n:i64 s:f32"),
    space=lambda: [SelftestKnobs("f32", 128)],
    knobs=SelftestKnobs,
    geometry=lambda k: LaunchGeometry(threads=k.threads),
))

#: a template whose kernel module ends the compiling process (a compiler crash): the worker dies
#: mid-compile, which the compiler-worker tests rely on
SELFTEST_CRASH = register(KernelTemplate(
    name="selftest_crash",
    family="selftest_broken",
    module="_selftest_crash_kernel",
    params=params("x:ptr"),
    space=lambda: [SelftestKnobs("f32", 128)],
    knobs=SelftestKnobs,
    geometry=lambda k: LaunchGeometry(threads=k.threads),
))
