"""``array_api.linalg``: the standard's linear algebra extension (2024.12), complete, plus the
2025.12 ``eig`` / ``eigvals`` and a few extensions (``lu_factor``, ``lstsq``, ``cond``).

- Products and views (``matmul matrix_transpose outer tensordot vecdot trace diagonal``): the same
  functions as the main namespace (GEMM / reduction kernels of this package).
- Factorisations and solvers (``cholesky qr svd svdvals eigh eigvalsh eig eigvals solve inv det
  slogdet lu_factor``): ``array_api._linalg_factorizations`` — the linalg family's Plans on
  cuSOLVER (through nvmath-python), float32 / float64 / complex64 / complex128 (half inputs in
  float32), typed LinAlgError subclasses for failed matrices.
- Built from those (``vector_norm matrix_norm cond cross matrix_rank pinv lstsq
  matrix_power``): ``array_api._linalg_composites``.
- Backward formulas (``*_backward``: inv, solve, det, slogdet, cholesky, eigh, svd, svdvals, qr):
  ``array_api._linalg_backward`` (PyTorch's conventions), for autograd frameworks.
"""

from __future__ import annotations

import operator

from ._linalg_composites import (cond, cross, lstsq, matrix_norm, matrix_power, matrix_rank,
                                 pinv, vector_norm)
from ._linalg_backward import (cholesky_backward, det_backward, eigh_backward, inv_backward,
                               qr_backward, slogdet_backward, solve_backward, svd_backward,
                               svdvals_backward)
from ._linalg_factorizations import (cholesky, det, eig, eigh, eigvals, eigvalsh, inv,
                                     lu_factor, qr, set_error_checking, slogdet, solve, svd,
                                     svdvals)
from ._linear_algebra_functions import matmul, matrix_transpose, outer, tensordot, vecdot
from ._manipulation_functions import diagonal_view
from ._plans import check_operand
from ._reduction_extensions import trace
from baracuda_dsl.runtime.vendor import LinAlgError  # noqa: F401  (like numpy.linalg.LinAlgError)

#: the standard's (2024.12) linalg functions — every one is wired
STANDARD = ("cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
            "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
            "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
            "vector_norm")
#: beyond the 2024.12 list: 2025.12's eig / eigvals, and extensions (backward formulas too)
EXTENSIONS = ("eig", "eigvals", "lu_factor", "lstsq", "cond", "set_error_checking",
              "cholesky_backward", "det_backward", "eigh_backward", "inv_backward",
              "qr_backward", "slogdet_backward", "solve_backward", "svd_backward",
              "svdvals_backward")

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm", "eig", "eigvals", "lu_factor", "lstsq", "cond", "set_error_checking",
           "cholesky_backward", "det_backward", "eigh_backward", "inv_backward", "qr_backward",
           "slogdet_backward", "solve_backward", "svd_backward", "svdvals_backward"]


def diagonal(x, /, *, offset: int = 0):
    """The ``offset`` diagonal of the last two axes (batched): a strided view of x
    (shape (..., k)); offset > 0 above the main diagonal, < 0 below."""
    check_operand(x, "diagonal")
    if x.ndim < 2:
        raise ValueError("diagonal: x must have at least two dimensions")
    return diagonal_view(x, operator.index(offset))
