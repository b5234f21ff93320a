"""Fixtures of the JAX adapter tests: ``jx`` = (jax, the first GPU, the CPU device) with float64
enabled for the references; XLA does not preallocate GPU memory (the kernels' tests share it)."""

import os

import pytest

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


@pytest.fixture
def jx():
    """(jax, the first GPU, the CPU device) with float64 enabled (references and f64 cases)."""
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.experimental.buffer_callback")
    old = bool(jax.config.read("jax_enable_x64"))
    jax.config.update("jax_enable_x64", True)
    try:
        yield jax, jax.devices("gpu")[0], jax.devices("cpu")[0]
    finally:
        jax.config.update("jax_enable_x64", old)
