#!/usr/bin/env python3
"""ctorch beside PyTorch: joins `ctorch bench --json` and `bench/torch_bench.py --json` by name on
one device and prints each case's two figures, their ratio (ctorch's speed over PyTorch's: above 1
ctorch is faster) and, on a CUDA device or the CPU, the target the ratio should reach, met or
missed (each device has its own table: issue 22's for the CPU, where float32 matmul is judged
against the best engine ctorch bench measured beside it, not against PyTorch).
A benchmark, not a test: missed targets do not change the exit status.

    bench/peer_compare.py --ctorch FILE --device D [--peer FILE | --no-peer REASON] [--strict] [--others]

--no-peer REASON: PyTorch was not there; prints ctorch's figures alone, saying why.
--strict: exit 1 when the join is broken: a case one side measured and the other did not, a unit
  that differs, a line that is not JSON (the rehearsal in CI runs with a fake peer to catch this).
--others: then ctorch's other results on the device (those PyTorch has no twin of), with their
  own baselines.
"""
import argparse
import json
import sys

# The ratios to reach against PyTorch on the same GPU (the targets), by name. Time units
# ("us") are inverted first, so that every ratio is ctorch's speed over PyTorch's.
CUDA_TARGETS = {
    "sum_f32_16M": 0.9, "sum_f32_256M": 0.9, "max_f32_16M": 0.9, "max_f32_256M": 0.9,
    "sum_dim0_f32_4096x4096": 0.9, "sum_dim1_f32_4096x4096": 0.9,
    "softmax_f32_4096x1000": 0.9, "cross_entropy_f32_4096x1000": 0.9,
    "add_f32_16M": 0.95, "mul_f32_16M": 0.95, "exp_f32_16M": 0.95,
    "add_f32_256M": 0.95, "mul_f32_256M": 0.95, "exp_f32_256M": 0.95,
    "train_mlp_b512": 1.0, "train_cnn_b512": 1.0,
    "train_mlp_b32": 4.0, "train_cnn_b32": 4.0,
    "matmul_f32_tf32_8192": 0.95, "matmul_bf16_8192": 0.9, "matmul_f16_8192": 0.9,
    "train_mlp4096x4_b4096_bf16": 0.9,  # issue 15: bf16 autocast training of the wide MLP
    # issue 16: replayed steps against PyTorch's whole-step CUDA graph
    "train_mlp_b32_graph": 2.0, "train_cnn_b32_graph": 1.5,
    "train_mlp_b512_graph": 1.0, "train_cnn_b512_graph": 1.0,
}
# Issue 22, the CPU beside PyTorch's CPU wheel on the same threads.
CPU_TARGETS = {
    "conv2d_fwd_bwd_cnn_b32": 1.5, "conv2d_fwd_bwd_cnn_b512": 1.0,
    "train_cnn_b32": 1.5, "train_cnn_b512": 1.0,
    "train_mlp_b32": 1.5, "train_mlp_b512": 1.0,
    "train_transformer_block_b32": 1.0,
    # issue 23
    "layer_norm_fwd_bwd_f32_8192x768": 1.0,
    # Issue 23: fused attention forward and backward beside F.scaled_dot_product_attention
    "attention_causal_fwd_bwd_t1024": 1.0, "attention_causal_fwd_bwd_t4096": 1.0,
    # Issue 24: a GPT's training step (L 6, C 384, H 6, T 256, B 8) beside nanoGPT's in PyTorch eager
    "train_gpt_l6_c384_t256_b8": 1.0,
}
# Issue 22: float32 matmul from n = 512 at >= 0.9x the best engine on the machine. ctorch bench
# measures that engine itself, in the same run: the row's own ratio (ctorch over its baseline) is
# judged, whatever PyTorch did.
CPU_ENGINE_TARGETS = {f"matmul_f32_{n}": 0.9 for n in (512, 1024, 2048, 4096, 8192)}
# Issue 22: bfloat16 at >= 4x ctorch's own float32 product of the same size, where the CPU has AMX
# (read from this machine's /proc/cpuinfo: run the join where the benchmarks ran).
CPU_RELATIVE_TARGETS = {"matmul_bf16_2048": ("matmul_f32_2048", 4.0)}
TIME_UNITS = {"us", "ms", "s"}
TIME_UNITS.add("MiB")  # memory: lower is better, as times are


def cpu_has_amx():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return any(line.startswith("flags") and " amx_bf16" in line for line in f)
    except OSError:
        return False


def targets_for(device):
    """(against PyTorch, against ctorch's baseline, against another ctorch row) for a device."""
    if device.startswith("cuda"):
        return CUDA_TARGETS, {}, {}
    if device == "cpu":
        return CPU_TARGETS, CPU_ENGINE_TARGETS, CPU_RELATIVE_TARGETS if cpu_has_amx() else {}
    return {}, {}, {}


def read_lines(path, problems, header=None):
    """The JSON objects of a file, one per line, in order; other lines go to problems. `ctorch
    bench --json`'s header line ({"cpu": {...}}: the CPU and its matrix engines' kernels) goes to
    header, a dict, where one is given."""
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    problems.append(f"{path}:{number}: not JSON: {line[:60]}")
                    continue
                if isinstance(row, dict) and "name" in row and "value" in row:
                    rows.append(row)
                elif isinstance(row, dict) and "cpu" in row and "name" not in row:
                    if header is not None:
                        header.update(row)
                else:
                    problems.append(f"{path}:{number}: no name and value: {line[:60]}")
    except OSError as error:
        problems.append(f"{path}: {error.strerror}")
    return rows


def cpu_summary(cpu):
    """"Intel Xeon ...; OpenBLAS SkylakeX, oneDNN avx512_core_vnni" from ctorch's header line."""
    engines = ", ".join(f"{e.get('name')} {e.get('kernel')}" + (" (BELOW the CPU)" if e.get("below_cpu") else "")
                        for e in cpu.get("engines", []) if isinstance(e, dict))
    return f"{cpu.get('model_name', '?')}; {engines or 'no engines'}"


def speed_ratio(ours, theirs, unit):
    if not ours or not theirs or ours <= 0 or theirs <= 0:
        return None
    return theirs / ours if unit in TIME_UNITS else ours / theirs


def fmt(value):
    """A figure in at most 10 columns: 4 significant digits, whole numbers from 10000 on."""
    if value is None:
        return "-"
    return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"


def fmt_ratio(value):
    return "-" if value is None else f"{value:.3f}"


def own_verdict(name, ours, ctorch, engine_targets, relative_targets):
    """A target ctorch's own figures decide: (the text, True met / False missed / None unjudged)."""
    if not ours or not ours.get("value"):
        return "not measured by ctorch", None
    if name in engine_targets:
        target, ratio = engine_targets[name], ours.get("ratio")
        if not ratio:
            return f">= {target:g}x ctorch's baseline: none measured", None
        text = f">= {target:g}x engine ({ratio:.3f})"
    else:
        other, target = relative_targets[name]
        if not ctorch.get(other, {}).get("value"):
            return f">= {target:g}x {other}: not measured", None
        ratio = ours["value"] / ctorch[other]["value"]
        text = f">= {target:g}x {other} ({ratio:.3f})"
    return (f"{text}  met", True) if ratio >= target else (f"{text}  MISSED", False)


def main(argv):
    parser = argparse.ArgumentParser(description="ctorch bench beside PyTorch, joined by name.")
    parser.add_argument("--ctorch", required=True, help="ctorch bench --json output")
    parser.add_argument("--peer", help="bench/torch_bench.py --json output")
    parser.add_argument("--no-peer", metavar="REASON", help="PyTorch is not there: ctorch alone")
    parser.add_argument("--device", required=True, help="the device both ran on (cuda:0, cpu)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the join is broken")
    parser.add_argument("--others", action="store_true", help="also ctorch's results without a PyTorch twin")
    args = parser.parse_args(argv)
    if bool(args.peer) == bool(args.no_peer):
        parser.error("give --peer FILE or --no-peer REASON")

    problems, header = [], {}
    all_rows = read_lines(args.ctorch, problems, header)
    ctorch = {r["name"]: r for r in all_rows if r.get("device", args.device) == args.device}
    peer, peer_version, fake = {}, "PyTorch", False
    if args.peer:
        for r in read_lines(args.peer, problems):
            if r.get("device") != args.device:
                problems.append(f"{args.peer}: {r['name']} ran on {r.get('device')}, not {args.device}")
                continue
            peer[r["name"]] = r
            peer_version = r.get("peer", peer_version)
            fake = fake or bool(r.get("fake"))
    peer_targets, engine_targets, relative_targets = targets_for(args.device)
    judged = set(peer_targets) | set(engine_targets) | set(relative_targets)

    # The rows: PyTorch's cases in its order; without a peer, ctorch's results that have targets.
    if args.peer:
        names = list(peer)
        names += [n for n in ctorch if n in judged and n not in peer]
    else:
        names = [n for n in ctorch if n in judged]

    title = f"ctorch beside {peer_version} on {args.device}"
    if fake:
        title = (f"ctorch beside a FAKE PyTorch on {args.device} (every PyTorch figure 1.0: a rehearsal "
                 "of the join, not a measurement)")
    print(f"---- {title} ----")
    if args.no_peer:
        print(f"PyTorch: {args.no_peer}; ctorch's figures alone")
    if args.device == "cpu" and isinstance(header.get("cpu"), dict):
        print(f"ctorch's CPU: {cpu_summary(header['cpu'])}")
    header = f"{'benchmark':28s} {'unit':9s} {'ctorch':>10s} {'PyTorch':>10s} {'ratio':>7s}  target"
    print(header)
    met = missed = 0
    broken = []
    for name in names:
        ours, theirs = ctorch.get(name), peer.get(name)
        unit = (ours or theirs)["unit"]
        if ours and theirs and ours["unit"] != theirs["unit"]:
            broken.append(f"{name}: ctorch in {ours['unit']}, PyTorch in {theirs['unit']}")
        if args.peer and (not ours or not theirs):
            broken.append(f"{name}: measured by {'PyTorch' if theirs else 'ctorch'} alone")
        value = ours["value"] if ours else None
        peer_value = theirs["value"] if theirs else None
        ratio = speed_ratio(value, peer_value, unit)
        target = peer_targets.get(name)
        if name in engine_targets or name in relative_targets:
            verdict, outcome = own_verdict(name, ours, ctorch, engine_targets, relative_targets)
            met, missed = met + (outcome is True), missed + (outcome is False)
        elif target is None:
            verdict = ""
        elif not args.peer:
            verdict = f">= {target:g}"
        elif ours and value == 0:
            verdict, missed = f">= {target:g}  FAILED (ctorch's case failed)", missed + 1
        elif ratio is None:
            verdict = f">= {target:g}  -"
        elif ratio >= target:
            verdict, met = f">= {target:g}  met", met + 1
        else:
            verdict, missed = f">= {target:g}  MISSED", missed + 1
        print(f"{name:28s} {unit:9s} {fmt(value):>10s} {fmt(peer_value):>10s} {fmt_ratio(ratio):>7s}  {verdict}".rstrip())
    with_target = len([n for n in names if n in judged])
    if with_target and (args.peer or engine_targets):
        against = f"{peer_version} and ctorch's own baselines" if engine_targets else peer_version
        print(f"targets against {against}: {met} met, {missed} missed"
              + (f", {with_target - met - missed} not judged" if with_target > met + missed else ""))
    if args.others:
        others = [r for r in all_rows if not (r["name"] in names and r.get("device", args.device) == args.device)]
        if others:
            print(f"---- ctorch's other benchmarks (against their own baselines) ----")
            print(f"{'benchmark':28s} {'device':8s} {'ctorch':>10s} {'unit':9s} {'baseline':>10s} {'ratio':>7s}  target")
            for r in others:
                status = "met" if r.get("met", True) else "MISSED"
                print(f"{r['name']:28s} {r.get('device', '-'):8s} {fmt(r['value']):>10s} {r['unit']:9s} "
                      f"{fmt(r.get('baseline')):>10s} {fmt_ratio(r.get('ratio')):>7s}  {r.get('target', '')} {status}")
    for line in problems + broken:
        print(f"peer_compare: {line}", file=sys.stderr)
    if args.strict and (problems or broken or (args.peer and not names)):
        if args.peer and not names:
            print("peer_compare: nothing to compare", file=sys.stderr)
        print("peer_compare: the join of ctorch's and PyTorch's results is broken", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
