"""Train a small Llama-style decoder on baracuda kernels alone, and on torch, with the same seed
and data, and compare loss curves, tokens/s and peak memory.

Model (defaults; ``--layers`` … change them): 8 decoder blocks of d_model 1024, 16 query heads and
4 key/value heads of 64 (GQA) with rotary embeddings (base 10000), SwiGLU MLP of 2816, RMSNorm
(eps 1e-5) before each, tied input / output embeddings over a 32000-token vocabulary, and the loss
as a fused linear cross-entropy (the (tokens, vocab) logits never exist).  bfloat16 parameters,
AdamW (fused, lr 6e-4 with 20 warm-up steps then cosine to 10 %, weight decay 0.1), batch 8 ×
1024 tokens.

Backends (one model definition, the layers picked per backend; parameters and names identical, so
both start from the same state dict):

- ``baracuda``: ``baracuda_dsl.torch`` modules — Embedding, RMSNorm, Attention (fused QKV GEMM,
  rope, flash attention with GQA, output GEMM), SwiGLU (GEMMs + the gate kernel),
  LinearCrossEntropyLoss; torch runs only the residual adds, views and the optimizer.
- ``torch``: torch.nn modules and functional ops (SDPA with ``enable_gqa``, rope in torch ops,
  ``F.cross_entropy`` over materialised logits).
- ``baracuda-unfused``: the baracuda model with the loss as ``bt.linear`` + ``bt.cross_entropy``
  (materialised logits) — the fused loss's memory saving in a whole training step.

``--compile`` wraps the model in ``torch.compile(fullgraph=True)`` (the baracuda custom ops are
opaque nodes; no graph breaks).  ``--runs`` names several configurations to run in one process
(``all`` = baracuda, baracuda+compile, torch, torch+compile, baracuda-unfused).

Data: a synthetic language with learnable structure — a fixed random bigram chain over the
vocabulary (Zipf-distributed tokens, 4 possible successors per token with fixed probabilities),
sampled with numpy from ``--seed``; the loss floor is about its conditional entropy (printed).
Every run sees the same batches in the same order.

Measured per run (after ``--warmup`` steps, which include compilation): tokens/s (wall clock over
the timed steps, one synchronisation at the end; losses stay on the GPU until then), peak
``torch.cuda.max_memory_allocated`` over the timed steps (every baracuda workspace comes from
torch's caching allocator, so it is counted), and the loss of every step.  The first run named
is the reference of the loss-curve comparison (:func:`compare`: max |Δ| of the 10-step moving
averages, mean |Δ| over the last 100 steps).

Writes ``--out DIR``: ``train_llama.json`` (config, per-run losses, tokens/s, peak memory, the
comparison) and ``train_llama_loss.png`` (the loss curves; needs matplotlib — without it the plot
is skipped with a note and ``--plot-from DIR/train_llama.json`` renders it later elsewhere).

Run (GPU host):
    python3 examples/train_llama.py --runs all --steps 300 --out $OUT
    python3 examples/train_llama.py --runs baracuda --steps 20 --layers 2      # a quick look
    python3 examples/train_llama.py --plot-from out/train_llama.json --out out  # plot only
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np

RUNS_ALL = ("baracuda", "baracuda+compile", "torch", "torch+compile", "baracuda-unfused")


@dataclass(frozen=True)
class Config:
    """The model and training shape."""

    vocab: int = 32000
    dim: int = 1024
    layers: int = 8
    heads: int = 16
    kv_heads: int = 4
    hidden: int = 2816
    seq_len: int = 1024
    batch: int = 8
    rope_base: float = 10000.0
    eps: float = 1e-5
    lr: float = 6e-4
    warmup_lr_steps: int = 20
    weight_decay: float = 0.1


# ------------------------------------------------------------------------------------ data
def markov_corpus(cfg: Config, n_seqs: int, seed: int):
    """(tokens (n_seqs, seq_len + 1) int64, conditional entropy in nats) of a bigram language:
    every token has 4 successors drawn from a Zipf distribution over the vocabulary (weight
    rank^-1.1), taken with probabilities 0.55 / 0.25 / 0.12 / 0.08; the first token of each
    sequence is Zipf-distributed too."""
    rng = np.random.default_rng(seed)
    zipf = np.arange(1, cfg.vocab + 1, dtype=np.float64) ** -1.1
    zipf /= zipf.sum()
    ids = rng.permutation(cfg.vocab)                      # the token id of each rank
    succ = ids[rng.choice(cfg.vocab, size=(cfg.vocab, 4), p=zipf)]
    probs = np.array([0.55, 0.25, 0.12, 0.08])
    entropy = float(-(probs * np.log(probs)).sum())
    cum = np.cumsum(probs)
    toks = np.empty((n_seqs, cfg.seq_len + 1), np.int64)
    toks[:, 0] = ids[rng.choice(cfg.vocab, size=n_seqs, p=zipf)]
    for j in range(1, cfg.seq_len + 1):
        pick = np.minimum(np.searchsorted(cum, rng.random(n_seqs)), 3)
        toks[:, j] = succ[toks[:, j - 1], pick]
    return toks, entropy


# ----------------------------------------------------------------------------------- model
def torch_layers(torch):
    """The torch.nn / functional building blocks, with the baracuda modules' parameter names."""
    F = torch.nn.functional

    def rope_tables(n, d, base, device):
        inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
        return ang.cos().float().to(device), ang.sin().float().to(device)

    def rope(x, cos, sin):
        s, half = x.shape[1], x.shape[-1] // 2
        c = cos[:s].to(x.dtype)[None, :, None, :]
        sn = sin[:s].to(x.dtype)[None, :, None, :]
        a, b = x[..., :half], x[..., half:]
        return torch.cat((a * c - b * sn, b * c + a * sn), -1)

    class Attention(torch.nn.Module):
        def __init__(self, dim, n_heads, n_kv_heads, max_seq_len, rope_base, bias=False,
                     device=None, dtype=None):
            super().__init__()
            self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, dim // n_heads
            kw = dict(bias=bias, device=device, dtype=dtype)
            self.qkv = torch.nn.Linear(dim, (n_heads + 2 * n_kv_heads) * self.head_dim, **kw)
            self.o = torch.nn.Linear(n_heads * self.head_dim, dim, **kw)
            cos, sin = rope_tables(max_seq_len, self.head_dim, rope_base, device)
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)

        def forward(self, x):
            b, s, _ = x.shape
            h, hk, d = self.n_heads, self.n_kv_heads, self.head_dim
            q, k, v = self.qkv(x).view(b, s, h + 2 * hk, d).split((h, hk, hk), dim=2)
            q, k = rope(q, self.cos, self.sin), rope(k, self.cos, self.sin)
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                               v.transpose(1, 2), is_causal=True,
                                               enable_gqa=True)
            return self.o(o.transpose(1, 2).reshape(b, s, h * d))

    class SwiGLU(torch.nn.Module):
        def __init__(self, dim, hidden, device=None, dtype=None):
            super().__init__()
            kw = dict(bias=False, device=device, dtype=dtype)
            self.gate = torch.nn.Linear(dim, hidden, **kw)
            self.up = torch.nn.Linear(dim, hidden, **kw)
            self.down = torch.nn.Linear(hidden, dim, **kw)

        def forward(self, x):
            return self.down(F.silu(self.gate(x)) * self.up(x))

    class LinearCrossEntropyLoss(torch.nn.Module):
        def forward(self, x, weight, target):
            logits = F.linear(x, weight)
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), target.reshape(-1))

    return dict(Embedding=torch.nn.Embedding, RMSNorm=torch.nn.RMSNorm, Attention=Attention,
                SwiGLU=SwiGLU, LinearCrossEntropyLoss=LinearCrossEntropyLoss)


def baracuda_layers(torch, fused_loss: bool = True):
    """The baracuda_dsl.torch modules (``fused_loss=False``: linear + cross-entropy ops)."""
    import baracuda_dsl.torch as bt

    class UnfusedLoss(torch.nn.Module):
        def forward(self, x, weight, target):
            logits = bt.linear(x, weight)
            return bt.cross_entropy(logits.view(-1, logits.shape[-1]), target.reshape(-1))

    return dict(Embedding=bt.Embedding, RMSNorm=bt.RMSNorm, Attention=bt.Attention,
                SwiGLU=bt.SwiGLU,
                LinearCrossEntropyLoss=bt.LinearCrossEntropyLoss if fused_loss else UnfusedLoss)


def build_model(torch, cfg: Config, L: dict, device):
    """The decoder over the building blocks ``L`` (bfloat16 on ``device``)."""
    kw = dict(device=device, dtype=torch.bfloat16)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn_norm = L["RMSNorm"](cfg.dim, eps=cfg.eps, **kw)
            self.attn = L["Attention"](cfg.dim, cfg.heads, cfg.kv_heads, cfg.seq_len,
                                       cfg.rope_base, bias=False, **kw)
            self.mlp_norm = L["RMSNorm"](cfg.dim, eps=cfg.eps, **kw)
            self.mlp = L["SwiGLU"](cfg.dim, cfg.hidden, **kw)

        def forward(self, x):
            x = x + self.attn(self.attn_norm(x))
            return x + self.mlp(self.mlp_norm(x))

    class Llama(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = L["Embedding"](cfg.vocab, cfg.dim, **kw)
            self.blocks = torch.nn.ModuleList(Block() for _ in range(cfg.layers))
            self.norm = L["RMSNorm"](cfg.dim, eps=cfg.eps, **kw)
            self.loss = L["LinearCrossEntropyLoss"]()

        def forward(self, ids, targets):
            h = self.embed(ids)
            for blk in self.blocks:
                h = blk(h)
            return self.loss(self.norm(h), self.embed.weight, targets)

    return Llama()


def init_state(torch, model, cfg: Config, seed: int) -> dict:
    """GPT-style initial weights (normal 0.02; residual projections / sqrt(2·layers); norms 1)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    state = {}
    for name, p in model.state_dict().items():
        if name.endswith("norm.weight"):
            t = torch.ones(p.shape)
        else:
            std = 0.02 / math.sqrt(2 * cfg.layers) if name.endswith(("o.weight", "down.weight")) \
                else 0.02
            t = torch.randn(p.shape, generator=g) * std
        state[name] = t.to(p.dtype)
    return state


# -------------------------------------------------------------------------------- training
def lr_at(step: int, steps: int, cfg: Config) -> float:
    if step < cfg.warmup_lr_steps:
        return cfg.lr * (step + 1) / cfg.warmup_lr_steps
    t = (step - cfg.warmup_lr_steps) / max(1, steps - cfg.warmup_lr_steps)
    return cfg.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, t))))


def train_run(torch, name: str, cfg: Config, state: dict, data, steps: int, warmup: int) -> dict:
    """Train ``steps`` steps of configuration ``name``; losses, tokens/s, peak memory."""
    backend = name.split("+")[0]
    L = torch_layers(torch) if backend == "torch" else baracuda_layers(
        torch, fused_loss=backend != "baracuda-unfused")
    dev = torch.device("cuda")
    model = build_model(torch, cfg, L, dev)
    model.load_state_dict(state)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.95),
                            weight_decay=cfg.weight_decay, fused=True)
    fwd = torch.compile(model, fullgraph=True) if name.endswith("+compile") else model
    losses = []
    n_batches = data.shape[0] // cfg.batch
    t0 = None
    for step in range(steps):
        if step == warmup:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            t0 = time.perf_counter()
        b = data[(step % n_batches) * cfg.batch:(step % n_batches + 1) * cfg.batch]
        for group in opt.param_groups:
            group["lr"] = lr_at(step, steps, cfg)
        loss = fwd(b[:, :-1], b[:, 1:])
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        if step == 0:
            print(f"  [{name}] step 0 loss {loss.item():.4f}", flush=True)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0 if t0 is not None else float("nan")
    timed = steps - warmup
    out = dict(run=name, losses=[float(x) for x in torch.stack(losses).float().cpu()],
               tokens_per_s=timed * cfg.batch * cfg.seq_len / wall if timed > 0 else None,
               ms_per_step=1e3 * wall / timed if timed > 0 else None,
               peak_gib=torch.cuda.max_memory_allocated() / 2**30)
    del model, opt, fwd
    torch.cuda.empty_cache()
    return out


def moving_avg(xs, w=10):
    a = np.asarray(xs, np.float64)
    if len(a) < w:
        return a
    return np.convolve(a, np.ones(w) / w, mode="valid")


def compare(results: list) -> dict:
    """Each later run's loss curve against the first run's: ``max_ma`` = max |Δ| of the 10-step
    moving averages (dominated by the steep first steps, where a one-step shift is a large Δ),
    ``tail`` = mean |Δ| of the per-step losses over the last 100 steps (or all, if fewer)."""
    ref = np.asarray(results[0]["losses"], np.float64)
    ref_ma = moving_avg(ref)
    out = {}
    for r in results[1:]:
        los = np.asarray(r["losses"], np.float64)
        m = moving_avg(los)
        n = min(len(m), len(ref_ma))
        k = min(100, len(los), len(ref))
        out[r["run"]] = dict(max_ma=float(np.abs(m[:n] - ref_ma[:n]).max()) if n else None,
                             tail=float(np.abs(los[-k:] - ref[-k:]).mean()) if k else None)
    return out


def plot(summary: dict, path: str) -> bool:
    """The loss curves of every run into ``path`` (PNG); False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (render it later with --plot-from)")
        return False
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=120)
    for r in summary["results"]:
        tps = r.get("tokens_per_s")
        label = r["run"] + (f" ({tps / 1e3:.0f}k tok/s, {r['peak_gib']:.1f} GiB)" if tps else "")
        ax.plot(r["losses"], label=label, lw=1.2)
    ax.axhline(summary["entropy"], color="grey", ls=":", lw=1, label="data entropy")
    c = summary["config"]
    ax.set(xlabel="step", ylabel="loss (nats / token)",
           title=f"Llama-style {c['layers']}×{c['dim']} (GQA {c['heads']}/{c['kv_heads']}, "
                 f"vocab {c['vocab']}) — {summary.get('gpu', '')}")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def print_table(summary: dict) -> None:
    """The Markdown table of the runs (tokens/s, ms/step, ratio to torch eager, peak memory,
    final loss, loss-curve differences against the first run)."""
    base = {r["run"]: r for r in summary["results"]}
    torch_tps = (base.get("torch") or {}).get("tokens_per_s")
    first = summary["results"][0]["run"]
    print(f"\n| run | tokens/s | ms/step | vs torch eager | peak GiB | final loss (10-step mean) | "
          f"max Δ 10-step avg vs {first} | mean Δ last 100 steps vs {first} |")
    print("|---|---|---|---|---|---|---|---|")
    cmp = compare(summary["results"])
    for r in summary["results"]:
        tps = r["tokens_per_s"]
        rel = f"{tps / torch_tps:.2f}" if tps and torch_tps else "-"
        d = cmp.get(r["run"], {})
        ma = "-" if d.get("max_ma") is None else f"{d['max_ma']:.3f}"
        tail = "-" if d.get("tail") is None else f"{d['tail']:.4f}"
        print(f"| {r['run']} | {tps:,.0f} | {r['ms_per_step']:.1f} | {rel} | {r['peak_gib']:.2f} "
              f"| {np.mean(r['losses'][-10:]):.4f} | {ma} | {tail} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", choices=("baracuda", "torch", "baracuda-unfused"),
                    help="one backend (with --compile); or use --runs")
    ap.add_argument("--compile", action="store_true", help="torch.compile(fullgraph=True)")
    ap.add_argument("--runs", default=None, help=f"comma list of {', '.join(RUNS_ALL)}, or all")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=10, help="untimed first steps")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=Config.layers)
    ap.add_argument("--dim", type=int, default=Config.dim)
    ap.add_argument("--batch", type=int, default=Config.batch)
    ap.add_argument("--seq-len", type=int, default=Config.seq_len)
    ap.add_argument("--out", default=None, help="directory for the JSON and the PNG")
    ap.add_argument("--plot-from", default=None, help="render the PNG of a saved JSON and exit")
    ns = ap.parse_args(argv)
    if ns.plot_from:
        with open(ns.plot_from) as f:
            summary = json.load(f)
        out = ns.out or os.path.dirname(ns.plot_from)
        os.makedirs(out, exist_ok=True)
        plot(summary, os.path.join(out, "train_llama_loss.png"))
        print_table(summary)
        return 0

    import torch

    if not torch.cuda.is_available():
        print("train_llama: needs a CUDA GPU; none found")
        return 0
    if ns.runs:
        runs = RUNS_ALL if ns.runs == "all" else tuple(ns.runs.split(","))
    else:
        runs = ((ns.backend or "baracuda") + ("+compile" if ns.compile else ""),)
    for r in runs:
        if r.split("+")[0] not in ("baracuda", "torch", "baracuda-unfused") or \
                r.split("+")[1:] not in ([], ["compile"]):
            ap.error(f"unknown run {r!r}; choose from {', '.join(RUNS_ALL)}")
    heads = max(1, ns.dim // 64)
    cfg = Config(layers=ns.layers, dim=ns.dim, heads=heads, kv_heads=max(1, heads // 4),
                 hidden=256 * round(ns.dim * 8 / 3 / 256), batch=ns.batch, seq_len=ns.seq_len)
    if ns.steps <= ns.warmup:
        ap.error(f"--steps ({ns.steps}) must exceed --warmup ({ns.warmup})")
    n_seqs = cfg.batch * ns.steps                   # every step a fresh batch
    toks, entropy = markov_corpus(cfg, n_seqs, ns.seed)
    data = torch.as_tensor(toks, device="cuda")
    torch.manual_seed(ns.seed)
    probe = build_model(torch, cfg, torch_layers(torch), torch.device("meta"))
    state = init_state(torch, probe, cfg, ns.seed)
    n_params = sum(p.numel() for p in probe.parameters())
    gpu = torch.cuda.get_device_name()
    print(f"{gpu}: {n_params / 1e6:.1f} M parameters, {cfg.batch}×{cfg.seq_len} tokens/step, "
          f"{ns.steps} steps ({ns.warmup} untimed); data entropy {entropy:.3f} nats")
    results = []
    for r in runs:
        print(f"run {r} ...", flush=True)
        results.append(train_run(torch, r, cfg, state, data, ns.steps, ns.warmup))
        res = results[-1]
        print(f"  [{r}] {res['tokens_per_s']:,.0f} tokens/s, {res['ms_per_step']:.1f} ms/step, "
              f"peak {res['peak_gib']:.2f} GiB, last loss {res['losses'][-1]:.4f}", flush=True)
    summary = dict(config=asdict(cfg), gpu=gpu, torch=torch.__version__, steps=ns.steps,
                   warmup=ns.warmup, seed=ns.seed, entropy=entropy, n_params=n_params,
                   argv=sys.argv[1:], results=results, loss_vs_first=compare(results))
    print_table(summary)
    if ns.out:
        os.makedirs(ns.out, exist_ok=True)
        with open(os.path.join(ns.out, "train_llama.json"), "w") as f:
            json.dump(summary, f, indent=1)
        plot(summary, os.path.join(ns.out, "train_llama_loss.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
