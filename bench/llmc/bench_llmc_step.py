#!/usr/bin/env python3
"""Times a training step of llm.c's train_gpt2.c (the CPU peer of `ctorch train --model gpt`) on
the issue's benchmark model: L 6, C 384, H 6, T 256, B 8, byte-level (V = Vp = 256, maxT 256),
float32, built with llm.c's own Makefile (its CPU flags: -Ofast -march=native -fopenmp).

    LLMC_DIR=/path/to/llm.c python3 bench/llmc/bench_llmc_step.py [--steps N] [--threads N] [--json]

Without LLMC_DIR it prints why it is skipped and exits 0. train_gpt2.c is changed only where its
settings are fixed in the source: B 4 -> 8 and T 64 -> 256, its 41 steps -> N + 1, and its
periodic validation and sampling off (they are not training steps). The first step (warm-up:
first touch of the memory) is left out; the figure is the median of the others, from the
"(took X ms)" train_gpt2 prints for each step (its forward, backward and AdamW update)."""
import argparse
import json
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llmc_common as common  # noqa: E402

L, C, H, T, B, V = 6, 384, 6, 256, 8, 256


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3, help="timed steps after the warm-up (default 3)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="OMP_NUM_THREADS (default: the CPUs)")
    parser.add_argument("--json", action="store_true", help="one JSON line")
    args = parser.parse_args()
    llmc_dir = os.environ.get("LLMC_DIR")
    if not llmc_dir:
        print("bench_llmc_step: skipped: LLMC_DIR is not set (give a checkout of github.com/karpathy/llm.c: "
              "LLMC_DIR=/path/to/llm.c)")
        return 0
    patches = [
        ("int B = 4;", f"int B = {B};", "the benchmark's batch"),
        ("int T = 64;", f"int T = {T};", "the benchmark's sequence length"),
        ("for (int step = 0; step <= 40; step++)", f"for (int step = 0; step <= {args.steps}; step++)",
         "the steps to time, after a warm-up"),
        ("if (step % 10 == 0) {", "if (0) {", "no periodic validation"),
        ("if (step > 0 && step % 20 == 0) {", "if (0) {", "no sampling"),
    ]
    text = common.shakespeare_bytes()
    train = list(text[:(args.steps + 2) * B * T + 1])
    val = list(text[-(B * T + 1):])
    with tempfile.TemporaryDirectory(prefix="ctorch-llmc-bench-") as work:
        common.prepare_run(work, dict(maxT=T, V=V, Vp=V, L=L, NH=H, C=C), train, val, seed=1)
        program, compile_line = common.build_train_gpt2(llmc_dir, work, patches)
        output = common.run_train_gpt2(program, work, args.threads)
    took = [float(ms) for ms in re.findall(r"^step \d+: train loss [0-9.]+ \(took ([0-9.]+) ms\)", output, re.M)]
    if len(took) != args.steps + 1:
        sys.exit(f"train_gpt2 printed {len(took)} steps, not {args.steps + 1}:\n{output}")
    ms = statistics.median(took[1:])
    result = {"peer": "llm.c train_gpt2.c", "llmc_commit": common.llmc_commit(llmc_dir), "compiled_with": compile_line,
              "L": L, "C": C, "H": H, "T": T, "B": B, "vocab": V, "threads": args.threads,
              "steps_timed": args.steps, "ms_per_step": ms, "tokens_per_second": B * T / (ms / 1000.0),
              "all_steps_ms": took}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"llm.c train_gpt2.c, L {L} C {C} H {H} T {T} B {B}, {args.threads} threads: {ms:.0f} ms a step "
              f"(median of {args.steps} after a warm-up), {result['tokens_per_second']:.0f} tokens/s")
        print(f"  built: {compile_line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
