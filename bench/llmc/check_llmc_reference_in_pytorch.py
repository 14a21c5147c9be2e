#!/usr/bin/env python3
"""PyTorch's twin of llm.c's reference run (make_llmc_reference.py): the fixture's model, read
through `ctorch convert` (llm.c's .bin -> nanoGPT-named safetensors), loaded into nanoGPT's GPT
(tests/models/scripts/nanogpt_model.py) and trained on the fixture's token file in llm.c's
sequential order (batch i: tokens [i B T, i B T + B T + 1), wrapping after floor((N - 1) / (B T))
batches) with torch.optim.AdamW as train_gpt2.c's settings say; the loss over the vocabulary's
first V columns (llm.c's padded rows do not count). Each step's loss must match what llm.c printed.
This checks the fixture, ctorch's llm.c reader, and the order, against each other.

    python check_llmc_reference_in_pytorch.py CTORCH_BINARY [FIXTURE_DIR]

Exits 0 when every train and val loss agrees within relative 1e-4 (llm.c is built with -Ofast)."""
import json
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "models", "scripts"))
from nanogpt_model import GPT, GPTConfig  # noqa: E402


def tokens_of(path):
    with open(path, "rb") as f:
        data = f.read()
    header = torch.frombuffer(bytearray(data[:1024]), dtype=torch.int32)
    assert header[0].item() == 20240520 and header[1].item() == 1
    return torch.frombuffer(bytearray(data[1024:]), dtype=torch.int16).to(torch.int64) & 0xFFFF


def batch(tokens, i, B, T):
    n = (len(tokens) - 1) // (B * T)
    start = (i % n) * B * T
    window = tokens[start:start + B * T + 1]
    return window[:-1].view(B, T), window[1:].view(B, T)


def loss_of(model, x, y, V):
    t = x.shape[1]
    pos = torch.arange(0, t, dtype=torch.long)
    h = model.transformer.drop(model.transformer.wte(x) + model.transformer.wpe(pos))
    for block in model.transformer.h:
        h = block(h)
    logits = model.lm_head(model.transformer.ln_f(h))[..., :V]
    return F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))


def main():
    tool = sys.argv[1]
    fixture_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(REPO, "tests", "models", "fixtures", "llmc_tiny")
    with open(os.path.join(fixture_dir, "train_gpt2_losses.json")) as f:
        ref = json.load(f)
    with tempfile.TemporaryDirectory() as work:
        converted = os.path.join(work, "gpt.safetensors")
        subprocess.run([tool, "convert", os.path.join(fixture_dir, "gpt2_tiny.bin"), converted], check=True,
                       stdout=subprocess.DEVNULL)
        state = load_file(converted)
    c = ref["config"]
    model = GPT(GPTConfig(block_size=c["block_size"], vocab_size=c["padded_vocab_size"], n_layer=c["n_layer"],
                          n_head=c["n_head"], n_embd=c["n_embd"], dropout=0.0, bias=True))
    model.load_state_dict(state, strict=True)
    o = ref["optimizer"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"],
                                  weight_decay=o["weight_decay"])
    B, T, V = ref["batch_size"], ref["seq_len"], c["vocab_size"]
    train = tokens_of(os.path.join(fixture_dir, "tiny_shakespeare_train.bin"))
    val = tokens_of(os.path.join(fixture_dir, "tiny_shakespeare_val.bin"))
    worst = 0.0
    for step, expected in enumerate(ref["train_losses"]):
        if step % ref["val_every"] == 0:
            with torch.no_grad():
                v = sum(loss_of(model, *batch(val, i, B, T), V).item() for i in range(ref["val_batches"]))
            v /= ref["val_batches"]
            worst = max(worst, abs(v - ref["val_losses"][step // ref["val_every"]]) / abs(v))
        loss = loss_of(model, *batch(train, step, B, T), V)
        worst = max(worst, abs(loss.item() - expected) / abs(expected))
        print(f"step {step}: PyTorch {loss.item():.6f}, llm.c {expected:.6f}")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"largest relative difference {worst:.2e}")
    return 0 if worst <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
