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


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="no CUDA GPU on this machine")
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


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
        self.log.append((self.template.name, dict(self.knobs), tuple(grid), list(args), stream))


@pytest.fixture
def launches(monkeypatch):
    """Every ``Plan._kernel`` returns a recording stand-in: the list of launches (CPU tests of
    the exact launch arguments)."""
    from baracuda_dsl.plan import Plan

    log = []
    monkeypatch.setattr(Plan, "_kernel", lambda self, t, kn, dev: _FakeKernel(log, t, kn))
    return log
