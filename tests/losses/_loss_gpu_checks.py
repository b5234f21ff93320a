"""Helpers the loss GPU tests share: run a plan with its workspace, and the element-by-element
result checks of tests/_checks.py (every element, NaN / ±inf exact, bounds derived from the
output dtype and the computation)."""

import pytest

from tests._checks import assert_close as _assert_close
from tests._checks import assert_within, bounds, eps

#: math / accumulation dtype of each loss dtype (half types compute in f32, f64 in f64)
CT = {"float32": "float32", "float16": "float32", "bfloat16": "float32", "float64": "float64"}


def run_with_workspace(plan, args):
    """``plan.run(args)`` with a fresh device workspace of ``plan.workspace_size()`` bytes."""
    torch = pytest.importorskip("torch")
    n = plan.workspace_size()
    ws = torch.empty(n, dtype=torch.uint8, device="cuda") if n else None
    plan.run(args, workspace=ws)


def assert_close(out, ref, rtol, atol=0.0, *, scale=None, what=""):
    """tests._checks.assert_close: every element ``|out − ref| <= atol + rtol·max(|ref|, scale)``
    and the norm; NaN in ``ref`` ⇔ NaN in ``out``, infinities exact, a finite ``ref`` needs a
    finite ``out`` (an unwritten NaN poison fails)."""
    return _assert_close(out, ref, rtol, atol, scale=scale, what=str(what))


def check(out, ref, dt, abs_err=0.0, *, rel=None, what=""):
    """Every element within ``rel·|ref| + abs_err`` (+ ``dt``'s smallest normal): the rounding
    into ``dt`` (``rel``, default half an ulp: bounds(dt)) relative to each result, the math's
    own error ``abs_err`` (broadcastable; derived by the caller, usually k·u·(the magnitude of
    the terms)) absolute.  Expressed as :func:`assert_close` with rtol = ``rel`` and scale =
    ``|ref| + abs_err/rel``."""
    rel = bounds(dt)[0] if rel is None else rel
    return assert_within(out, ref, dt, rel, abs_err, what)


def row_depth(n):
    """Most rounded adds on a path of a row reduction of the row kernels (common/rows.py,
    losses/specs/loss_row.py): a thread folds <= 64 register elements or every tpr-th element
    (tpr >= 32 for rows <= 2048, >= 256 beyond), then 5 shuffle levels, up to 32 warp partials
    and 8 cluster partials in order.  Never more than n.  A sum of depth d errs by
    <= d·u·Σ|terms|."""
    if n <= 2048:
        per = max(64, -(-n // 32))
    else:
        per = max(64, -(-n // 256))
    return max(1, min(n, per + 45))


def reduce_error(losses, errs, reduction, u):
    """(reference, error bound) of the ``reduction`` of per-row losses (float64 tensors) whose
    own errors are ``errs``: the final sum over n rows (one CTA in a fixed order: depth
    row_depth(n)) adds depth·u·Σ|ℓ|; mean divides (one more rounding)."""
    n = losses.numel()
    if reduction == "none":
        return losses, errs
    total = losses.sum()
    err = errs.sum() + row_depth(n) * u * losses.abs().sum()
    if reduction == "mean":
        total, err = total / max(n, 1), err / max(n, 1) + u * (total / max(n, 1)).abs()
    return total, err


__all__ = ["CT", "assert_close", "bounds", "check", "eps", "reduce_error", "row_depth",
           "run_with_workspace"]
