#!/usr/bin/env python3
"""PyTorch's twin of `ctorch train --model gpt`: nanoGPT's model (GPT-2's architecture and
initialisation, lm_head tied to wte) and recipe (AdamW with weight decay on the 2-D weights only,
warm-up then cosine to MIN_LR_FACTOR x lr, gradients clipped to a norm), on the same data, the
same windows and the same settings as ctorch's default run, so that the two validation losses
can be set side by side (bench/gpt_compare.py).

    bench/gpt_twin.py [--data FILE] [--steps N] [--amp bf16] [--device cpu|cuda] [--json] [...]

The split is ctorch's (ct_token_data_split: the first floor(N (1 - f)) tokens train); training
windows are nanoGPT's get_batch (random offsets from torch's generator), validation batches
ctorch's (llm.c's sequential order from the split's start, the same at every evaluation). The
initialisation and the windows draw from PyTorch's generator, so the two runs start from
different weights of the same distribution: their losses agree statistically, not bit for bit.
"""
import argparse
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

class Block(nn.Module):
    def __init__(self, c, h, bias):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c, bias=bias)
        self.attn = nn.Module()
        self.attn.c_attn = nn.Linear(c, 3 * c, bias=bias)
        self.attn.c_proj = nn.Linear(c, c, bias=bias)
        self.ln_2 = nn.LayerNorm(c, bias=bias)
        self.mlp = nn.Module()
        self.mlp.c_fc = nn.Linear(c, 4 * c, bias=bias)
        self.mlp.c_proj = nn.Linear(4 * c, c, bias=bias)
        self.h = h

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.attn.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp.c_proj(F.gelu(self.mlp.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, block, layers, heads, channels, bias=True):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, channels), wpe=nn.Embedding(block, channels),
            h=nn.ModuleList([Block(channels, heads, bias) for _ in range(layers)]),
            ln_f=nn.LayerNorm(channels, bias=bias)))
        self.lm_head = nn.Linear(channels, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * layers))

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.transformer.wte(idx) + self.transformer.wpe(torch.arange(T, device=idx.device))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.view(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None, help="text read as bytes (default: data/tinyshakespeare.txt)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--channels", type=int, default=128)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--min-lr-factor", type=float, default=0.1)
    ap.add_argument("--clip-grad", type=float, default=1.0)
    ap.add_argument("--eval-batches", type=int, default=20)
    ap.add_argument("--val-fraction", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1337)
    ap.add_argument("--amp", choices=["none", "bf16"], default="none")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    path = a.data or __file__.rsplit("/", 2)[0] + "/data/tinyshakespeare.txt"
    ids = np.frombuffer(open(path, "rb").read(), dtype=np.uint8).astype(np.int64)
    n = len(ids)
    train_count = int(n * (1 - a.val_fraction))
    T, B = a.seq_len, a.batch_size

    def windows(starts):
        x = np.stack([ids[s:s + T] for s in starts])
        y = np.stack([ids[s + 1:s + T + 1] for s in starts])
        return torch.from_numpy(x).to(a.device), torch.from_numpy(y).to(a.device)

    def train_batch(step):
        return windows(torch.randint(train_count - T, (B,)).tolist())

    def val_batch(b):
        return windows([train_count + (b * B + r) * T for r in range(B)])

    model = GPT(256, T, a.layers, a.heads, a.channels).to(a.device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=a.lr, betas=(0.9, 0.99), eps=1e-8)

    def lr_at(step):
        min_lr = a.lr * a.min_lr_factor
        if step < a.warmup:
            return a.lr * (step + 1) / a.warmup
        ratio = (step - a.warmup) / max(1, a.steps - a.warmup)
        return min_lr + 0.5 * (1 + math.cos(math.pi * ratio)) * (a.lr - min_lr)

    dev_type = torch.device(a.device).type
    ctx = (torch.autocast(dev_type, dtype=torch.bfloat16) if a.amp == "bf16"
           else torch.autocast(dev_type, enabled=False))
    start = time.time()
    for step in range(a.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x, y = train_batch(step)
        with ctx:
            loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if a.clip_grad > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip_grad)
        opt.step()
        if not a.json and (step % 50 == 0 or step + 1 == a.steps):
            print(f"step {step + 1}/{a.steps} loss {loss.item():.4f}", flush=True)
    seconds = time.time() - start
    model.eval()
    with torch.no_grad(), ctx:
        val = sum(model(*val_batch(b)).item() for b in range(a.eval_batches)) / a.eval_batches
    result = {"val_loss": val, "final_loss": loss.item(), "seconds": seconds,
              "tokens_per_second": a.steps * B * T / seconds, "amp": a.amp, "torch": torch.__version__}
    print(json.dumps(result) if a.json else f"Validation loss: {val:.4f}  ({seconds:.1f} s)")


if __name__ == "__main__":
    sys.exit(main())
