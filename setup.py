"""Build hook for the optional compiled launch path (``baracuda_dsl.runtime._launch_ext``).

Everything else is in pyproject.toml.  The extension is a small C file against Python's limited
API (one ``abi3`` binary for every CPython >= 3.10) that needs no CUDA headers: it resolves
``cuLaunchKernel`` from the driver at import.  It is optional: where no C compiler is available
the install still succeeds and launches take the pure-Python path (``runtime/launcher.py``).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[Extension("baracuda_dsl.runtime._launch_ext",
                           ["baracuda_dsl/runtime/_launch_ext.c"],
                           py_limited_api=True, optional=True, libraries=["dl"],
                           extra_compile_args=["-O2", "-std=c11"])],
    options={"bdist_wheel": {"py_limited_api": "cp310"}},
)
