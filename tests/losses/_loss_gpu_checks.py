"""Helpers the row-loss and CTC GPU tests share: run a plan with its workspace, compare with a
float64 torch reference."""

import pytest


def run_with_workspace(plan, args):
    """``plan.run(args)`` with a fresh device workspace of ``plan.workspace_size()`` bytes."""
    torch = pytest.importorskip("torch")
    n = plan.workspace_size()
    ws = torch.empty(n, dtype=torch.uint8, device="cuda") if n else None
    plan.run(args, workspace=ws)


def assert_close(out, ref, tol, what="", finite_only=False):
    """``out`` has ``ref``'s NaN pattern and a relative L2 error <= ``tol`` on the other
    entries; with ``finite_only`` also ``ref``'s ±inf pattern, and only finite entries count."""
    torch = pytest.importorskip("torch")
    out, ref = out.double().cpu(), ref.double().cpu()
    if ref.numel() == 0:
        return
    nan = torch.isnan(ref)
    assert torch.equal(torch.isnan(out), nan), f"{what}: NaN pattern differs"
    if finite_only:
        assert torch.equal(torch.isinf(out), torch.isinf(ref)), f"{what}: inf pattern differs"
        keep = torch.isfinite(ref)
    else:
        keep = ~nan
    out, ref = out[keep], ref[keep]
    den = max(ref.norm().item(), 1.0)
    err = (out - ref).norm().item() / den
    assert err <= tol, f"{what}: relative error {err:.3g} > {tol}"
