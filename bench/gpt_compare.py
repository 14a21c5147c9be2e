#!/usr/bin/env python3
"""Sets the default run of `ctorch train --model gpt` beside its PyTorch twin (bench/gpt_twin.py:
the same model, data, split, steps and hyperparameters) and beside itself under bf16 autocast, and
checks that the validation losses agree within 0.05 nats (issue 24).

    bench/gpt_compare.py [--ctorch build/ctorch] [--device cpu] [--steps N] [--skip-torch] [--skip-bf16]

Prints one line per run and a JSON summary; exits 1 when a difference is 0.05 nats or more.
Run it with the PyTorch venv's python (~/.cache/ctorch/torch-cpu/bin/python), or with
--skip-torch where there is no PyTorch.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 0.05


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    raise SystemExit("no JSON line in:\n" + text)


def run(command):
    print("$ " + " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"exit {done.returncode}:\n{done.stdout}\n{done.stderr}")
    result = last_json(done.stdout)
    print(json.dumps(result), flush=True)  # each run as it ends: a long comparison stopped keeps them
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ctorch", default=os.path.join(HERE, "..", "build", "ctorch"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=None, help="both runs (default: ctorch's default run's)")
    ap.add_argument("--threads", type=int, default=0, help="PyTorch's threads (0: its default)")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--skip-bf16", action="store_true")
    a = ap.parse_args()
    extra = ["--steps", str(a.steps)] if a.steps else []
    base = [a.ctorch, "train", "--model", "gpt", "--device", a.device, "--json"] + extra
    rows = {"ctorch_f32": run(base)}
    if not a.skip_bf16:
        rows["ctorch_bf16"] = run(base + ["--amp", "bf16"])
    if not a.skip_torch:
        twin = [sys.executable, os.path.join(HERE, "gpt_twin.py"), "--json", "--device",
                "cuda" if a.device.startswith("cuda") else "cpu", "--threads", str(a.threads)] + extra
        rows["pytorch_f32"] = run(twin)
    for name, r in rows.items():
        print(f"{name:12s} val_loss {r['val_loss']:.4f}  {r['tokens_per_second']:9.0f} tokens/s  "
              f"{r['seconds']:.1f} s", flush=True)
    ok = True
    checks = {}
    ref = rows["ctorch_f32"]["val_loss"]
    for name in ("pytorch_f32", "ctorch_bf16"):
        if name in rows:
            diff = abs(rows[name]["val_loss"] - ref)
            checks[name + "_vs_ctorch_f32"] = diff
            ok = ok and diff < TOLERANCE
            print(f"|{name} - ctorch_f32| = {diff:.4f} nats ({'within' if diff < TOLERANCE else 'NOT within'} "
                  f"{TOLERANCE})")
    print(json.dumps({"runs": rows, "differences": checks, "tolerance": TOLERANCE, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
