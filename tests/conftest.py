"""Shared fixtures: the ``gpu`` marker skips cleanly on machines without a CUDA device.

On a GPU host a green run must mean every test that could run did: a test that skips because a
module the host is known to have is missing fails instead, and so does a ``gpu`` test that skips
for any reason but a documented capability (a skip reason starting with ``capability:``, e.g. a
feature the device lacks).  ``BARACUDA_DSL_TEST_EXPECT_GPU=1`` (the GPU runs set it) turns a GPU
probe that finds no device — or fails — into an error instead of a run of skips."""

import os

import pytest


EXPECT_GPU = os.environ.get("BARACUDA_DSL_TEST_EXPECT_GPU", "") == "1"


def _has_gpu() -> bool:
    try:
        from baracuda_dsl.runtime import has_gpu

        return has_gpu()
    except Exception:
        if EXPECT_GPU:
            raise
        return False


HAS_GPU = _has_gpu()
#: skip reasons a gpu test may give on a GPU host (documented capabilities)
CAPABILITY_PREFIX = "capability:"


def pytest_configure(config):
    if EXPECT_GPU and not HAS_GPU:
        pytest.exit("BARACUDA_DSL_TEST_EXPECT_GPU=1 but no CUDA GPU is visible: refusing to "
                    "report GPU tests as skipped", returncode=3)

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
    elif item.get_closest_marker("gpu") is not None and not msg.startswith(CAPABILITY_PREFIX):
        rep.outcome = "failed"
        rep.longrepr = (f"a gpu test skipped on a GPU host for a reason that is not a documented "
                        f"capability ({CAPABILITY_PREFIX} ...): {msg}")


@pytest.fixture(autouse=True)
def _no_launch_records_in_cpu_tests(request):
    """CPU tests watch launches through stand-in kernels, which the launch tracer cannot see (a
    replayed record would skip them): launch records are off there, except in the tests of the
    records themselves (which use stand-ins that report to the tracer)."""
    name = request.module.__name__
    if not name.endswith("_cpu") or name.endswith("test_launch_records_cpu"):
        yield
        return
    from baracuda_dsl.runtime import trace

    old = trace.set_recording(False)
    yield
    trace.set_recording(old)


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
    the exact launch arguments; the CPU tests' autouse fixture has turned launch records off)."""
    from baracuda_dsl.plan import Plan

    log = []
    monkeypatch.setattr(Plan, "_kernel", lambda self, t, kn, dev: _FakeKernel(log, t, kn))
    return log
