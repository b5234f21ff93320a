"""A whole training step in one CUDA graph: a 2-layer MLP classifier trained with plain SGD,
eagerly and as a replayed ``xp.CUDAGraph``, with the same results.

The step (forward, a hand-written backward, in-place SGD updates of the weights) is ONE Python
function of namespace ops.  It is run eagerly ``--steps`` times on one copy of the weights; the
same function is captured once in an ``xp.CUDAGraph`` on a second copy (identical initial
weights) and the graph replayed ``--steps`` times.  Capturing records the step without running
it, so the graph copy starts training at the first replay; every replay runs the recorded
updates (``W1 -= lr * gW1`` is an in-place namespace op) again on the same weight arrays.  The
two copies must end up with the same weights (relative error < 1e-4) and the loss must fall.

Model: 512 samples of 64 features from 10 Gaussian clusters (numpy seed), a 64 → 128 (ReLU)
→ 10 MLP, mean cross-entropy.  The step calls ``one_hot``, whose out-of-range index check reads
a status word back on the host after every eager call (a synchronisation; ops captured in a
graph skip it): the labels are validated once on the host and the check is switched off
(``xp.set_index_checking(False)``) for both runs, so the eager timing carries no extra
synchronisation.

Run:
    python examples/graph_training_step.py                    # 100 steps, timings, loss curve
    python examples/graph_training_step.py --steps 300 --check   # exit 1 on a mismatch
Needs a CUDA GPU; without one it prints a note and exits 0.
"""

import argparse
import sys
import time

import numpy as np

import baracuda_dsl as bd

N, D, H, C = 512, 64, 128, 10      # samples, features, hidden units, classes
LR = 0.1
PARAMS = ("W1", "b1", "W2", "b2")


def make_problem(seed: int):
    """Separable synthetic data and the initial weights (host float32 / int64)."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((C, D))
    labels = rng.integers(0, C, N)
    x = (centers[labels] + rng.standard_normal((N, D))).astype(np.float32)
    init = {"W1": (rng.standard_normal((D, H)) * np.sqrt(2.0 / D)).astype(np.float32),
            "b1": np.zeros(H, np.float32),
            "W2": (rng.standard_normal((H, C)) * np.sqrt(1.0 / H)).astype(np.float32),
            "b2": np.zeros(C, np.float32)}
    return x, labels, init


def train_step(xp, p, x, labels):
    """One SGD step on the weights ``p`` (a dict of device arrays, updated in place); returns
    the mean cross-entropy before the update (a 0-D array)."""
    W1, b1, W2, b2 = (p[k] for k in PARAMS)
    # forward
    h = x @ W1 + b1                                      # (N, H)
    a = xp.relu(h)
    logits = a @ W2 + b2                                 # (N, C)
    logp = xp.log_softmax(logits, axis=-1)
    y = xp.one_hot(labels, C, dtype=xp.float32)
    loss = xp.sum(y * logp) * (-1.0 / N)
    # backward of mean cross-entropy(softmax(logits))
    dlogits = (xp.exp(logp) - y) * (1.0 / N)             # (N, C)
    gW2 = a.T @ dlogits
    gb2 = xp.sum(dlogits, axis=0)
    da = dlogits @ W2.T                                  # uses W2 before its update
    dh = xp.where(h > 0, da, 0.0)                        # ReLU'
    gW1 = x.T @ dh
    gb1 = xp.sum(dh, axis=0)
    # SGD, in place (each an in-place namespace op: recorded once, run on every replay)
    W1 -= LR * gW1
    b1 -= LR * gb1
    W2 -= LR * gW2
    b2 -= LR * gb2
    return loss


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    """||a − b|| / ||b|| in float64."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=100, help="SGD steps per run (default 100)")
    ap.add_argument("--seed", type=int, default=0, help="numpy seed of data and weights")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless the graph's weights match the eager ones and the loss fell")
    args = ap.parse_args(argv)
    if args.steps < 2:
        ap.error("--steps must be >= 2 (the loss curve must show a decrease)")
    if not bd.runtime.has_gpu():
        print("no CUDA GPU visible: nothing to run")
        return 0
    import array_api as xp

    sync = bd.runtime.synchronize
    x_h, labels_h, init = make_problem(args.seed)
    assert labels_h.min() >= 0 and labels_h.max() < C   # validated here: no check on device
    old_check = xp.set_index_checking(False)
    graph = None
    try:
        x, labels = xp.asarray(x_h), xp.asarray(labels_h)

        def weights():
            return {k: xp.asarray(v) for k, v in init.items()}

        train_step(xp, weights(), x, labels)             # first use: plans, kernel loading
        steps = args.steps

        # --- eager: one copy of the weights, the step run `steps` times
        w_eager = weights()
        curve_eager = xp.zeros((steps,), dtype=xp.float32)
        sync()
        t0 = time.perf_counter()
        for i in range(steps):
            curve_eager[i] = train_step(xp, w_eager, x, labels)
        sync()
        t_eager = (time.perf_counter() - t0) / steps

        # --- graph: a second copy, the step captured once and replayed `steps` times
        w_graph = weights()
        curve_graph = xp.zeros((steps,), dtype=xp.float32)
        graph = xp.CUDAGraph()
        with graph.capture():
            loss_graph = train_step(xp, w_graph, x, labels)  # recorded, not run
        untouched = all(np.array_equal(w_graph[k].to_numpy(), init[k]) for k in PARAMS)
        sync()
        t0 = time.perf_counter()
        for i in range(steps):
            graph.replay()
            curve_graph[i] = loss_graph
        sync()
        t_graph = (time.perf_counter() - t0) / steps

        le, lg = curve_eager.to_numpy(), curve_graph.to_numpy()
        errs = {k: _rel(w_graph[k].to_numpy(), w_eager[k].to_numpy()) for k in PARAMS}
    finally:
        if graph is not None:
            graph.close()
        xp.set_index_checking(old_check)

    print(f"MLP {D}->{H}->{C}, {N} samples, lr {LR}, {steps} steps")
    print(f"per step: eager {t_eager * 1e6:9.1f} us   graph replay {t_graph * 1e6:9.1f} us   "
          f"({t_eager / t_graph:.1f}x)")
    print(f"capture left the graph's weights untouched: {untouched}")
    print("loss curve (step: eager / graph):")
    shown = sorted(set(np.linspace(0, steps - 1, min(steps, 11)).astype(int).tolist()))
    for i in shown:
        print(f"  {i + 1:5d}: {le[i]:.6f} / {lg[i]:.6f}")
    worst = max(errs.values())
    curve_err = _rel(lg, le)
    print("weights, graph vs eager (relative error): "
          + ", ".join(f"{k} {e:.2e}" for k, e in errs.items()))
    print(f"loss curve, graph vs eager (relative error): {curve_err:.2e}")
    ok = (untouched and worst < 1e-4 and curve_err < 1e-4 and le[-1] < le[0]
          and lg[-1] < lg[0])
    print("OK" if ok else "MISMATCH")
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
