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
