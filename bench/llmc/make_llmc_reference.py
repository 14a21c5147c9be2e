#!/usr/bin/env python3
"""llm.c's own losses for a tiny GPT, as a fixture: ctorch's training in llm.c's sequential order
(`ctorch train --model gpt --init gpt2_tiny.bin --data tiny_shakespeare_train.bin --data-order
sequential --batch-size 4 --seq-len 64 --lr 1e-4 --weight-decay 0 --clip-grad 0 --lr-schedule none`)
must print the same loss step for step.

    LLMC_DIR=/path/to/llm.c python3 bench/llmc/make_llmc_reference.py [OUT_DIR]

OUT_DIR (default tests/models/fixtures/llmc_tiny) gets:
  gpt2_tiny.bin                 the model, llm.c's checkpoint (maxT 64, V 256, Vp 320, L 2, NH 2,
                                C 32; GPT-2's initialisation from Python's random, seed 1337)
  tiny_shakespeare_train.bin    the first 2561 bytes of data/tinyshakespeare.txt as llm.c tokens
                                (10 batches of B 4 x T 64, so that the 41 steps wrap 4 times)
  tiny_shakespeare_val.bin      1281 bytes from the start of its last 10% (llm.c's 5 val batches)
  train_gpt2_losses.json        what train_gpt2 printed: the train loss of steps 0..40 (each the
                                forward loss before that step's update) and the val loss at steps
                                0, 10, 20, 30, 40 (before that step's training), with the settings
How: the files are put where train_gpt2.c reads them (gpt2_124M.bin, dev/data/tinyshakespeare/) in
a temporary folder, llm.c's train_gpt2.c is built there with llm.c's Makefile (its CPU flags) and
run. One change to train_gpt2.c: its train loader is made unshuffled (dataloader_init's last
argument 1 -> 0), which is llm.c's sequential order (its val loader's). The rest is llm.c's as it
is: B 4, T 64, AdamW lr 1e-4, betas 0.9, 0.999, eps 1e-8, weight decay 0, no gradient clipping,
41 steps. Run by hand (never in CI); the files are committed."""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llmc_common as common  # noqa: E402

CONFIG = dict(maxT=64, V=256, Vp=320, L=2, NH=2, C=32)
SEED = 1337
B, T = 4, 64
TRAIN_TOKENS = 10 * B * T + 1
VAL_TOKENS = 5 * B * T + 1
SHUFFLE = ("dataloader_init(&train_loader, train_tokens, B, T, 0, 1, 1);",
           "dataloader_init(&train_loader, train_tokens, B, T, 0, 1, 0);",
           "the train loader in llm.c's sequential order, as its val loader")


def main():
    llmc_dir = os.environ.get("LLMC_DIR")
    if not llmc_dir:
        print("make_llmc_reference: skipped: LLMC_DIR is not set (give a checkout of "
              "github.com/karpathy/llm.c: LLMC_DIR=/path/to/llm.c)")
        return 0
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(common.REPO, "tests", "models", "fixtures", "llmc_tiny")
    text = common.shakespeare_bytes()
    split = int(len(text) * 0.9)
    train, val = list(text[:TRAIN_TOKENS]), list(text[split:split + VAL_TOKENS])
    with tempfile.TemporaryDirectory(prefix="ctorch-llmc-") as work:
        common.prepare_run(work, CONFIG, train, val, SEED)
        program, compile_line = common.build_train_gpt2(llmc_dir, work, [SHUFFLE])
        output = common.run_train_gpt2(program, work, threads=2)
        os.makedirs(out, exist_ok=True)
        for name, made in (("gpt2_tiny.bin", "gpt2_124M.bin"),
                           ("tiny_shakespeare_train.bin", "dev/data/tinyshakespeare/tiny_shakespeare_train.bin"),
                           ("tiny_shakespeare_val.bin", "dev/data/tinyshakespeare/tiny_shakespeare_val.bin")):
            with open(os.path.join(work, made), "rb") as f, open(os.path.join(out, name), "wb") as g:
                g.write(f.read())
    steps = re.findall(r"^step (\d+): train loss ([0-9.]+)", output, re.M)
    if [int(step) for step, _ in steps] != list(range(len(steps))):
        sys.exit(f"train_gpt2's steps are not 0, 1, 2, ...:\n{output}")
    train_losses = [float(loss) for _, loss in steps]
    val_losses = [float(x) for x in re.findall(r"^val loss ([0-9.]+)", output, re.M)]
    if len(train_losses) != 41 or len(val_losses) != 5:
        sys.exit(f"train_gpt2's output has {len(train_losses)} train and {len(val_losses)} val losses, "
                 f"not 41 and 5:\n{output}")
    fixture = {
        "what": "llm.c train_gpt2.c's printed losses for gpt2_tiny.bin on these token files (bench/llmc/make_llmc_reference.py)",
        "llmc_commit": common.llmc_commit(llmc_dir),
        "compiled_with": compile_line,
        "change_to_train_gpt2_c": SHUFFLE[2] + f": '{SHUFFLE[0]}' -> '{SHUFFLE[1]}'",
        "config": dict(block_size=CONFIG["maxT"], vocab_size=CONFIG["V"], padded_vocab_size=CONFIG["Vp"],
                       n_layer=CONFIG["L"], n_head=CONFIG["NH"], n_embd=CONFIG["C"], bias=True, dropout=0.0),
        "batch_size": B, "seq_len": T, "data_order": "sequential",
        "optimizer": dict(name="AdamW", lr=1e-4, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0,
                          weight_decay_on="every parameter (llm.c's gpt2_update); 0 here", grad_clip=None,
                          lr_schedule="constant"),
        "printed_digits": 6,
        "train_losses": train_losses,
        "val_batches": 5,
        "val_every": 10,
        "val_losses": val_losses,
    }
    with open(os.path.join(out, "train_gpt2_losses.json"), "w") as f:
        json.dump(fixture, f, indent=1)
        f.write("\n")
    print(f"wrote {out}: train loss {train_losses[0]:.6f} -> {train_losses[-1]:.6f} over 41 steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
