"""GPU-host benchmarks of baracuda-dsl against torch (and cuBLAS, cupy, quack where present).

One module per op family of ``baracuda_dsl.ops`` (``benchmarks/<family>.py``), the shared timing
harness (``harness``), the launch-path study (``launch``) and the driver that runs them all and
writes the results (``run_all``).  A package, run from the repo root as modules
(``python3 -m benchmarks.run_all --out $OUT``, ``python3 -m benchmarks.<family>``): a script run
would put this directory first on ``sys.path``, where ``random.py`` hides the standard library's
``random``.  See README.md.
"""
