"""Shared fixtures: the ``gpu`` marker skips cleanly on machines without a CUDA device."""

import os

import pytest


def _has_gpu() -> bool:
    try:
        from baracuda_dsl.runtime import has_gpu

        return has_gpu()
    except Exception:
        return False


HAS_GPU = _has_gpu()

#: modules every GPU host of this project has (shared/gpu/README.md: the host image plus the
#: wheels .gpu/ carries); there a test that skips because one is missing fails instead, so a
#: green GPU run means every test that could run did
REQUIRED_ON_GPU_HOST = ("torch", "cupy", "numpy", "hypothesis", "scipy", "array_api_strict",
                        "array_api_compat", "cuda", "rich")


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not (HAS_GPU and rep.skipped and call.excinfo is not None):
        return
    msg = str(call.excinfo.value)
    missing = [m for m in REQUIRED_ON_GPU_HOST if f"could not import '{m}" in msg]
    if missing:
        rep.outcome = "failed"
        rep.longrepr = (f"{missing[0]} is missing on this GPU host: the test would have skipped "
                        f"({msg})")


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    """An empty kernel cache directory for the test."""
    d = tmp_path / "cache"
    monkeypatch.setenv("BARACUDA_DSL_CACHE_DIR", str(d))
    return d


class _FakeKernel:
    """Stand-in for a loaded kernel: records (template, knobs, grid, args, stream) per launch."""

    def __init__(self, log, template, knobs):
        self.log, self.template, self.knobs = log, template, knobs

    def launch(self, grid, args, stream):
        from baracuda_dsl.jit import freeze_knobs

        # the knobs as the SKU's canonical (name, value) pairs: the same dict for a knobs
        # dataclass and for the plain dict it replaced
        self.log.append((self.template.name, dict(freeze_knobs(self.knobs)), tuple(grid),
                         list(args), stream))


@pytest.fixture
def launches(monkeypatch):
    """Every ``Plan._kernel`` returns a recording stand-in: the list of launches (CPU tests of
    the exact launch arguments)."""
    from baracuda_dsl.plan import Plan

    log = []
    monkeypatch.setattr(Plan, "_kernel", lambda self, t, kn, dev: _FakeKernel(log, t, kn))
    return log
