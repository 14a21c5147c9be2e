#!/usr/bin/env python3
"""Loads a GPT checkpoint that ctorch wrote with nanoGPT's names (ct_gpt_checkpoint_save with
CT_GPT_FORMAT_NANOGPT, `ctorch convert IN OUT.safetensors`, `ctorch train --model gpt --save`)
into nanoGPT's own GPT class (nanogpt_model.py beside this script: nanoGPT's model.py as it is),
with load_state_dict(strict=True), and runs it on a batch.

    python check_nanogpt_file.py FILE.safetensors... [--tokens 1,2,3,...] [--expect-loss X]

The config comes from the file's __metadata__ (nanoGPT's GPTConfig fields). Prints the config
and the loss of the tokens (inputs tokens[:-1], targets tokens[1:]; default: 0, 1, ..., 8 modulo
the vocabulary); with --expect-loss, exits 1 unless the loss agrees within relative 1e-5.
Exits 0 when the file loads, 1 when it does not (with PyTorch's message)."""
import argparse
import os
import sys

import torch
from safetensors import safe_open
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nanogpt_model import GPT, GPTConfig  # noqa: E402


def check(path, args):
    with safe_open(path, framework="pt") as f:
        meta = f.metadata() or {}
    fields = dict(block_size=int(meta["block_size"]), vocab_size=int(meta["vocab_size"]),
                  n_layer=int(meta["n_layer"]), n_head=int(meta["n_head"]), n_embd=int(meta["n_embd"]),
                  dropout=float(meta["dropout"]), bias=meta["bias"] == "True")
    config = GPTConfig(**fields)
    model = GPT(config)
    state = load_file(path)
    # nanoGPT keeps the causal mask as a buffer only where PyTorch lacks flash attention
    expected = set(model.state_dict().keys())
    missing = sorted(expected - set(state))
    unexpected = sorted(set(state) - expected)
    if missing or unexpected:
        print(f"{path}: missing {missing}, unexpected {unexpected}", file=sys.stderr)
        return 1
    model.load_state_dict(state, strict=True)
    if not torch.equal(model.transformer.wte.weight, model.lm_head.weight):
        print("lm_head.weight is not transformer.wte.weight", file=sys.stderr)
        return 1
    vocab = int(meta.get("unpadded_vocab_size", meta["vocab_size"]))
    if args.tokens:
        tokens = [int(t) for t in args.tokens.split(",")]
    else:
        tokens = [i % vocab for i in range(min(9, config.block_size + 1))]
    idx = torch.tensor([tokens[:-1]], dtype=torch.long)
    targets = torch.tensor([tokens[1:]], dtype=torch.long)
    model.eval()
    with torch.no_grad():
        logits, loss = model(idx, targets)
    print(f"nanoGPT's GPT loaded {path}: {fields}; loss {loss.item():.6f}")
    if args.expect_loss is not None and abs(loss.item() - args.expect_loss) > 1e-5 * abs(args.expect_loss):
        print(f"the loss {loss.item()} is not the expected {args.expect_loss}", file=sys.stderr)
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("files", nargs="+")
    parser.add_argument("--tokens", default=None)
    parser.add_argument("--expect-loss", type=float, default=None)
    args = parser.parse_args()
    return max(check(path, args) for path in args.files)


if __name__ == "__main__":
    sys.exit(main())
