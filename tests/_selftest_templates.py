"""Test-only template family ``selftest`` (two tiny SKUs of ``_selftest_kernel``).  Registered
in a process when this module is imported; spawned compiler workers and CLI subprocesses import it
through ``BARACUDA_DSL_TEMPLATE_MODULES=_selftest_templates`` with ``tests/`` on ``PYTHONPATH``
(see ``_selftest_support.selftest_templates``)."""

from _selftest_knobs import SelftestKnobs
from baracuda_dsl.jit import KernelTemplate, LaunchGeometry, params, register

MODULE = "_selftest_templates"
FAMILY = "selftest"

SELFTEST = register(KernelTemplate(
    name="selftest_scale",
    family=FAMILY,
    module="_selftest_kernel",
    params=params("x:ptr y:ptr n:i32 s:f32"),
    space=lambda: [SelftestKnobs("f32", 128), SelftestKnobs("f16", 64)],
    knobs=SelftestKnobs,
    geometry=lambda k: LaunchGeometry(threads=k.threads),
))

