"""Helpers for the spine tests: installing the test-only templates for the duration of a test
(in this process, in spawned compiler workers and in CLI subprocesses), the subprocess
environment, and a cache writer run in separate processes."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
ENV = "BARACUDA_DSL_TEMPLATE_MODULES"  # baracuda_dsl.ops.EXTRA_TEMPLATES_ENV


@contextlib.contextmanager
def selftest_templates(modules=("_selftest_templates",)):
    """Register the test-only templates while the block runs, with the environment set so that
    compiler workers (spawned inside the block) register them too; afterwards the registry,
    the environment and the worker pools are as before."""
    from baracuda_dsl.jit import compiler, registered, template as tmpl
    from baracuda_dsl.ops import load_specs

    load_specs()
    before = {t.name for t in registered()}
    old = os.environ.get(ENV)
    os.environ[ENV] = ",".join(modules)
    compiler.shutdown()  # pools started without the variable would not know the templates
    try:
        for m in modules:
            if m in sys.modules:
                importlib.reload(sys.modules[m])
            else:
                importlib.import_module(m)
        yield
    finally:
        compiler.shutdown()
        tmpl.unregister({t.name for t in registered()} - before)
        for m in modules:
            sys.modules.pop(m, None)
        if old is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = old


def subprocess_env(modules=("_selftest_templates",), **extra):
    """Environment for ``python -m baracuda_dsl`` subprocesses that see the test templates."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, TESTS] + ([env["PYTHONPATH"]]
                                                         if env.get("PYTHONPATH") else []))
    env[ENV] = ",".join(modules)
    env.pop("BARACUDA_DSL_CACHE_DIR", None)
    env.pop("BARACUDA_DSL_JIT", None)
    env.update(extra)
    return env


def payload(marker: int) -> bytes:
    """A cubin stand-in whose size and content both depend on ``marker``."""
    return bytes([marker % 251]) * (4096 + 1531 * (marker % 7))


def plain_template(name="selftest_plain", module="_selftest_kernel", spec="x:ptr y:ptr n:i32 s:f32",
                   space=None):
    """An unregistered template over the test kernel (enough for the cache, which only needs its
    name, SKU ids and source hash)."""
    from _selftest_knobs import SelftestKnobs
    from baracuda_dsl.jit import KernelTemplate, LaunchGeometry, params

    space = space or [SelftestKnobs("f32", 128), SelftestKnobs("f16", 64)]
    return KernelTemplate(name=name, family="selftest", module=module, params=params(spec),
                          space=lambda: list(space), geometry=lambda k: LaunchGeometry(k.threads),
                          knobs=SelftestKnobs)


def cache_writer(root: str, marker0: int, n: int) -> None:
    """Process target: put ``n`` different entries under one key as fast as possible."""
    from baracuda_dsl.jit import KernelCache

    c = KernelCache(root)
    t = plain_template()
    for i in range(n):
        m = marker0 + i
        c.put(t, t.skus()[0], "sm80", payload(m),
              {"entry": "k", "params": [], "threads": 128, "smem_bytes": 0, "marker": m,
               "dsl_version": "9.9.9"})
