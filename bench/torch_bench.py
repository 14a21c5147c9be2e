#!/usr/bin/env python3
"""PyTorch's figures for the cases `ctorch bench` measures on a device, timed the same way and
named the same, so that scripts/gpu-check (through bench/peer_compare.py) can set them side by side.

    bench/torch_bench.py [--json] [--device D] [--quick] [--big|--no-big] [--fake] [FILTER]

Cases, as in bench/bench_elementwise.c, bench_matmul.c, bench_overhead.c, bench_train_models.c,
bench_conv2d.c, bench_transformer_block.c:
  GB/s (bytes read + written): add, mul, exp, sum, max of 16M and 256M float32; sum over dim 0 and
    over dim 1 of [4096, 4096]; softmax (dim 1) and cross-entropy of [4096, 1000]
  GFLOP/s: matmul of float32 256, 512, 1024, 2048 and 8192, without TF32 (as ctorch's cuBLAS calls by
    default); on a CUDA device again with TF32 allowed (torch.backends.cuda.matmul.allow_tf32 for
    that case only), from 1024 up, as matmul_f32_tf32_N (ctorch's with ct_set_float32_matmul_precision("high"))
  GFLOP/s: matmul of bfloat16 and float16 1024, 2048 and 8192 (matmul_bf16_N, matmul_f16_N, as
    bench/bench_half.c)
  GB/s: conversion of 16M elements float32 <-> bfloat16 and float16 (convert_f32_to_bf16_16M...)
  us: op_overhead_add_4, 1000 adds of 4 floats then a wait for the device, per add
  samples/s: the models of `ctorch train` (mlp, cnn; Adam, lr 1e-3 / 3e-3, cross-entropy) at
    batch 32 and 512, PyTorch eager, the batch already on the device
  samples/s: conv2d_fwd_bwd_cnn_b32 and _b512, the cnn's two convolutions (1 -> 16 channels on
    8 x 8, 16 -> 32 on 4 x 4, 3 x 3, padding 1) forward, then backward from fixed gradients
    (weights, biases, the second's input)
  GB/s: layer_norm_fwd_bwd_f32_8192x768, nn.LayerNorm(768) forward then backward from a fixed
    gradient (x, weight, bias), over the 5 x 25 MB a call must move (x, y; dy, x, dx)
  samples/s: train_transformer_block_b32, a training step of a small GPT-style block (embedding
    128, 4 heads, sequence 64, batch 32, vocabulary 256): nn.Embedding, nn.LayerNorm,
    F.scaled_dot_product_attention(is_causal=True), nn.GELU, a Linear head, cross-entropy, AdamW
  tokens/s: train_gpt_l6_c384_t256_b8, a training step of nanoGPT's GPT (6 layers, 384 channels, 6
    heads, sequence 256, batch 8, vocabulary 256; AdamW with its configure_optimizers groups);
    MiB: train_gpt_peak_rss_mib_l6_c384_t256_b8, how far the resident memory rose over its steps
  seq/s: attention_causal_fwd_bwd_t256, _t1024 and _t4096, F.scaled_dot_product_attention of
    [8, 12, T, 64] float32 q, k, v ([1, 12, 4096, 64] at T = 4096) with is_causal=True, forward
    and backward from a fixed gradient (bench/bench_attention.c; ctorch's figure is its fused
    path; T >= 1024: one timed call, no warm-up)
On the CPU, PyTorch runs on as many threads as ctorch's OpenMP (OMP_NUM_THREADS, else the CPUs
this process may use): torch.set_num_threads.
Timing (ct_bench_time_synced): after the warm-up calls and a wait for the device, one call is
timed to choose the calls per timed run (enough for 2 ms, 1 to 100); each run makes them and
waits for the device; the figure is from the median run. The big sizes (256M, matmul 8192) run
where ctorch's would: a device with 16 GiB or more and, for the CPU, 8 threads or more; never with
--quick (1 warm-up, 3 timed runs, for rehearsals).

--fake: import nothing, measure nothing, print every selected case with the value 1.0, marked
"fake" (CI rehearses the join with it, where PyTorch is not installed).
Exit status: 0; 2 for bad arguments, or when PyTorch (or the device) is not here (one line on
stderr).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

BIG_MIN_GIB = 16  # CT_BENCH_BIG_MIN_GIB in bench/bench.h
BIG_MIN_CPUS = 8  # CT_BENCH_BIG_MIN_CPUS
RUN_SECONDS = 0.002  # CT_BENCH_RUN_SECONDS
MAX_CALLS_PER_RUN = 100  # CT_BENCH_MAX_CALLS_PER_RUN
M16, M256 = 16 * 1024 * 1024, 256 * 1024 * 1024
ATTENTION_LENGTHS = (256, 1024, 4096)  # bench/bench_attention.c

# name, op, rows, cols (0: a vector), big; the order of bench/bench_elementwise.c
OPS = [
    ("add_f32_16M", "add", M16, 0, False),
    ("mul_f32_16M", "mul", M16, 0, False),
    ("exp_f32_16M", "exp", M16, 0, False),
    ("sum_f32_16M", "sum", M16, 0, False),
    ("max_f32_16M", "max", M16, 0, False),
    ("sum_dim0_f32_4096x4096", "sum_dim0", 4096, 4096, False),
    ("sum_dim1_f32_4096x4096", "sum_dim1", 4096, 4096, False),
    ("softmax_f32_4096x1000", "softmax", 4096, 1000, False),
    ("cross_entropy_f32_4096x1000", "cross_entropy", 4096, 1000, False),
    ("add_f32_256M", "add", M256, 0, True),
    ("mul_f32_256M", "mul", M256, 0, True),
    ("exp_f32_256M", "exp", M256, 0, True),
    ("sum_f32_256M", "sum", M256, 0, True),
    ("max_f32_256M", "max", M256, 0, True),
]
MATMUL = [256, 512, 1024, 2048, 8192]  # 8192 is big
HALF_MATMUL = [1024, 2048, 8192]  # bench/bench_half.c
TF32_MIN = 1024  # bench/bench_matmul.c: TF32 rows from 1024 up
CONV_BATCHES = [32, 512]  # bench/bench_conv2d.c
# bench/bench_transformer_block.c: embedding, heads, sequence, batch, vocabulary
EMBED, HEADS, SEQUENCE, BLOCK_BATCH, VOCAB = 128, 4, 64, 32, 256
# bench/bench_gpt.c: a GPT's training step (nanoGPT's model, from tests/models/fixtures/make_gpt_fixture.py)
GPT_CONFIG = dict(vocab_size=256, padded_vocab_size=256, block_size=256, n_layer=6, n_head=6, n_embd=384,
                  dropout=0.0, bias=True)
GPT_BATCH = 8
GPT_SUFFIX = "l6_c384_t256_b8"
# bench/bench_layer_norm.c: GPT-2 small's width, 8 sequences of 1024 tokens
LAYER_NORM_NAME, LAYER_NORM_ROWS, LAYER_NORM_WIDTH = "layer_norm_fwd_bwd_f32_8192x768", 8 * 1024, 768
TRAIN = [("train_mlp_b32", "mlp", 32, None), ("train_mlp_b512", "mlp", 512, None),
         ("train_cnn_b32", "cnn", 32, None), ("train_cnn_b512", "cnn", 512, None),
         # under torch.autocast(dtype=torch.bfloat16), as `ctorch train --amp bf16`
         ("train_mlp_b512_bf16", "mlp", 512, "bfloat16"),
         ("train_mlp4096x4_b4096_bf16", "wide", 4096, "bfloat16")]  # big only
# The same models captured whole and replayed (issue 16), PyTorch with its CUDA-graph recipe.
TRAIN_GRAPH = [("train_mlp_b32_graph", "mlp", 32), ("train_mlp_b512_graph", "mlp", 512),
               ("train_cnn_b32_graph", "cnn", 32), ("train_cnn_b512_graph", "cnn", 512)]
WIDE = 4096  # the wide MLP: Linear(4096, 4096) four times, ReLU between
LR = {"mlp": 1e-3, "cnn": 3e-3}  # ct_train_default_lr with Adam
FEATURES, CLASSES = 64, 10


def bytes_moved(op, rows, cols):
    """Bytes read and written by one call, as bench/bench_elementwise.c counts them."""
    n, f = rows * (cols or 1), 4
    if op in ("add", "mul"):
        return 3 * n * f
    if op in ("exp", "softmax"):
        return 2 * n * f
    if op in ("sum", "max"):
        return n * f + f
    if op == "sum_dim0":
        return n * f + cols * f
    if op == "sum_dim1":
        return n * f + rows * f
    return n * f + rows * 8 + f  # cross_entropy: logits, int64 targets, the loss


def selected(filter_text, name):
    """bench/bench_runner.c's ct_bench_selected: comma-separated substrings, ^ and $ anchors."""
    if filter_text is None:
        return True
    for pattern in filter_text.split(","):
        if not pattern:
            continue
        start, end = pattern.startswith("^"), len(pattern) > 1 and pattern.endswith("$")
        body = pattern[1 if start else 0:len(pattern) - 1 if end else len(pattern)]
        if start and end:
            ok = name == body
        elif start:
            ok = name.startswith(body)
        elif end:
            ok = name.endswith(body)
        else:
            ok = body in name
        if ok:
            return True
    return False


def cpu_threads():
    """What ctorch's CPU backend reports (omp_get_max_threads): OMP_NUM_THREADS, else the CPUs
    this process may run on."""
    try:
        value = int(os.environ.get("OMP_NUM_THREADS", "").split(",")[0])
        if value > 0:
            return value
    except ValueError:
        pass
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cpu_memory_bytes():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


class Peer:
    """The device and its timing, PyTorch's or a fake one."""

    def __init__(self, args):
        self.args = args
        self.fake = args.fake
        self.device_name = args.device
        if self.fake:
            self.torch = None
            self.version = "fake"
            self.device = None
            return
        try:
            import torch  # noqa: F401 (imported here so that --fake and --help need no PyTorch)
            import torch.nn.functional  # noqa: F401
        except ImportError as error:
            die(f"PyTorch is not importable here ({error})")
        self.torch = torch
        self.version = f"torch {torch.__version__}"
        try:
            self.device = torch.device(args.device)
        except RuntimeError as error:
            die(f"--device {args.device}: {error}")
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                die(f"--device {args.device}: PyTorch sees no CUDA device")
            index = self.device.index or 0
            if index >= torch.cuda.device_count():
                die(f"--device {args.device}: PyTorch sees {torch.cuda.device_count()} CUDA device(s)")
            self.device = torch.device("cuda", index)
            torch.cuda.set_device(self.device)
            # Exact float32, as ctorch's cuBLAS calls and im2col convolutions: no TF32.
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            torch.set_float32_matmul_precision("highest")
        elif self.device.type == "cpu":
            torch.set_num_threads(cpu_threads())  # the count ctorch's OpenMP takes
        else:
            die(f"--device {args.device}: only cpu and cuda[:N] are measured")
        self.device_name = str(self.device) if self.device.type == "cuda" else "cpu"

    def big_sizes(self):
        if self.args.big is not None:
            return self.args.big
        if self.args.quick:
            return False
        if self.fake:
            return False
        if self.device.type == "cuda":
            total = self.torch.cuda.get_device_properties(self.device).total_memory
            return total >= BIG_MIN_GIB << 30
        return cpu_memory_bytes() >= BIG_MIN_GIB << 30 and cpu_threads() >= BIG_MIN_CPUS

    def synchronize(self):
        if self.device is not None and self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def repeats(self, warmup, repeats):
        return (min(warmup, 1), min(repeats, 3)) if self.args.quick else (warmup, repeats)

    def time_synced(self, fn, warmup, repeats):
        """ct_bench_time_synced: seconds per call of the median run."""
        warmup, repeats = self.repeats(warmup, repeats)
        for _ in range(warmup):
            fn()
        self.synchronize()
        calls = calls_per_run(self.timed_run(fn, 1))
        times = [self.timed_run(fn, calls) for _ in range(repeats)]
        return statistics.median(times) / calls

    def time_plain(self, fn, warmup, repeats):
        """ct_bench_time: the median of single timed calls (fn waits for the device itself)."""
        warmup, repeats = self.repeats(warmup, repeats)
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    def timed_run(self, fn, calls):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        self.synchronize()
        return time.perf_counter() - start


def calls_per_run(seconds_per_call):
    if not seconds_per_call > 0:
        return MAX_CALLS_PER_RUN
    return max(1, min(MAX_CALLS_PER_RUN, math.ceil(RUN_SECONDS / seconds_per_call)))


def op_function(peer, op, rows, cols):
    torch, F, device = peer.torch, peer.torch.nn.functional, peer.device
    torch.manual_seed(1)
    shape = (rows, cols) if cols else (rows,)
    if op in ("softmax", "cross_entropy"):
        a = torch.randn(shape, dtype=torch.float32, device=device)
    else:
        a = torch.rand(shape, dtype=torch.float32, device=device)
    b = torch.rand(shape, dtype=torch.float32, device=device) if op in ("add", "mul") else None
    target = torch.randint(0, cols, (rows,), dtype=torch.int64, device=device) if op == "cross_entropy" else None
    return {
        "add": lambda: torch.add(a, b),
        "mul": lambda: torch.mul(a, b),
        "exp": lambda: torch.exp(a),
        "sum": lambda: torch.sum(a),
        "max": lambda: torch.max(a),
        "sum_dim0": lambda: torch.sum(a, 0),
        "sum_dim1": lambda: torch.sum(a, 1),
        "softmax": lambda: torch.softmax(a, 1),
        "cross_entropy": lambda: F.cross_entropy(a, target),
    }[op]


def model(torch, kind):
    nn = torch.nn
    if kind == "wide":
        layers = []
        for k in range(4):
            layers += [nn.Linear(WIDE, WIDE)] + ([nn.ReLU()] if k < 3 else [])
        return nn.Sequential(*layers)
    if kind == "mlp":  # tools/train_models.c: Linear(F, 256) ReLU Linear(256, C)
        return nn.Sequential(nn.Linear(FEATURES, 256), nn.ReLU(), nn.Linear(256, CLASSES))
    side = int(math.isqrt(FEATURES))  # the sample as a 1 x 8 x 8 image
    pooled = side // 2 // 2
    return nn.Sequential(nn.Unflatten(1, (1, side, side)),
                         nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(1), nn.Linear(32 * pooled * pooled, CLASSES))


def train_function(peer, kind, batch, amp=None):
    torch, device = peer.torch, peer.device
    torch.manual_seed(0)
    net = model(torch, kind).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=LR.get(kind, 1e-3))
    features, classes = (WIDE, WIDE) if kind == "wide" else (FEATURES, CLASSES)
    x = torch.rand((batch, features), dtype=torch.float32, device=device)
    y = torch.randint(0, classes, (batch,), dtype=torch.int64, device=device)
    F = torch.nn.functional
    device_type = torch.device(device).type

    def step():
        optimizer.zero_grad()
        with torch.autocast(device_type=device_type, dtype=getattr(torch, amp or "float32"), enabled=amp is not None):
            loss = F.cross_entropy(net(x), y)
        loss.backward()
        optimizer.step()
    return step


def conv_function(peer, batch):
    """bench/bench_conv2d.c: the cnn's convolutions forward, then backward from fixed gradients."""
    torch, device = peer.torch, peer.device
    F = torch.nn.functional
    torch.manual_seed(0)
    side = int(math.isqrt(FEATURES))

    def tensor(*shape, grad=False, uniform=False):
        t = (torch.rand if uniform else torch.randn)(shape, dtype=torch.float32, device=device)
        return t.requires_grad_(grad)
    x1, w1, b1 = tensor(batch, 1, side, side, uniform=True), tensor(16, 1, 3, 3, grad=True), tensor(16, grad=True)
    g1 = tensor(batch, 16, side, side)
    x2 = tensor(batch, 16, side // 2, side // 2, grad=True, uniform=True)
    w2, b2 = tensor(32, 16, 3, 3, grad=True), tensor(32, grad=True)
    g2 = tensor(batch, 32, side // 2, side // 2)
    leaves = (w1, b1, x2, w2, b2)

    def step():
        for t in leaves:
            t.grad = None
        y1 = F.conv2d(x1, w1, b1, padding=1)
        y2 = F.conv2d(x2, w2, b2, padding=1)
        torch.autograd.backward([y1, y2], [g1, g2])
    return step


def layer_norm_function(peer):
    """bench/bench_layer_norm.c: nn.LayerNorm(768) of [8192, 768] forward, then backward from a
    fixed upstream gradient (x, weight and bias get gradients)."""
    torch = peer.torch
    torch.manual_seed(0)
    x = torch.randn((LAYER_NORM_ROWS, LAYER_NORM_WIDTH), dtype=torch.float32, device=peer.device,
                    requires_grad=True)
    norm = torch.nn.LayerNorm(LAYER_NORM_WIDTH).to(peer.device)
    dy = torch.randn((LAYER_NORM_ROWS, LAYER_NORM_WIDTH), dtype=torch.float32, device=peer.device)

    def step():
        x.grad = None
        norm.zero_grad(set_to_none=True)
        norm(x).backward(dy)
    return step


def transformer_step(peer):
    """bench/bench_transformer_block.c's block and step, in PyTorch's own modules."""
    torch, device = peer.torch, peer.device
    nn, F = torch.nn, torch.nn.functional
    B, T, C, H = BLOCK_BATCH, SEQUENCE, EMBED, HEADS

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(VOCAB, C)
            self.wpe = nn.Parameter(torch.randn(T, C) * 0.02)
            self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.fc, self.gelu, self.fc2 = nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C)
            self.head = nn.Linear(C, VOCAB)
            nn.init.normal_(self.wte.weight, std=0.02)

        def forward(self, tokens):
            x = self.wte(tokens).view(B, T, C) + self.wpe
            q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(C, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
            x = x + self.fc2(self.gelu(self.fc(self.ln2(x))))
            return self.head(x).view(B * T, VOCAB)

    torch.manual_seed(0)
    net = Block().to(device)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=1e-2)
    tokens = torch.randint(0, VOCAB, (B * T,), dtype=torch.int64, device=device)
    targets = torch.randint(0, VOCAB, (B * T,), dtype=torch.int64, device=device)

    def step():
        optimizer.zero_grad()
        F.cross_entropy(net(tokens), targets).backward()
        optimizer.step()
    return step


def nanogpt():
    """nanoGPT's model classes, as the GPT test's fixture script defines them."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models", "fixtures",
                        "make_gpt_fixture.py")
    spec = importlib.util.spec_from_file_location("make_gpt_fixture", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def status_mib(field):
    """VmRSS or VmHWM of this process in MiB (Linux), or None."""
    try:
        with open("/proc/self/status", encoding="utf-8") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w", encoding="utf-8") as f:
            f.write("5")
        return True
    except OSError:
        return False


def gpt_measure(peer, results):
    """bench/bench_gpt.c's step (forward with the loss, backward, AdamW with nanoGPT's groups) and
    the rise of the process's resident memory over the warm-up and timed steps, into results."""
    torch, device = peer.torch, peer.device
    known = reset_peak_rss()
    before = status_mib("VmRSS")
    torch.manual_seed(0)
    c, batch = GPT_CONFIG, 1 if peer.args.quick else GPT_BATCH  # --quick: one sequence, as ctorch's
    net = nanogpt().GPT(c).to(device)
    optimizer = net.configure_optimizers(0.1, 6e-4, (0.9, 0.95), foreach=None)
    idx = torch.randint(0, c["vocab_size"], (batch, c["block_size"]), dtype=torch.int64, device=device)
    targets = torch.randint(0, c["vocab_size"], (batch, c["block_size"]), dtype=torch.int64, device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        _, loss = net(idx, targets)
        loss.backward()
        optimizer.step()
    results["speed"] = batch * c["block_size"] / peer.time_synced(step, 3, 10)
    hwm = status_mib("VmHWM")
    results["peak"] = hwm - before if known and hwm is not None and before is not None else 0.0
    return results


def attention_batch(t):
    return 1 if t >= 4096 else 8  # bench/bench_attention.c's batch_at


def attention_function(peer, t):
    """bench/bench_attention.c's call: causal attention forward and backward."""
    torch, F = peer.torch, peer.torch.nn.functional
    torch.manual_seed(0)
    b = attention_batch(t)
    q, k, v = (torch.randn((b, 12, t, 64), device=peer.device, requires_grad=True) for _ in range(3))
    g = torch.randn((b, 12, t, 64), device=peer.device)

    def step():
        q.grad = k.grad = v.grad = None
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)
    return step


def train_graph_function(peer, kind, batch):
    """PyTorch's whole-step CUDA-graph recipe (torch.cuda.graphs, "whole network capture"): a
    static batch, Adam with capturable=True, three warm-up steps on a side stream, the step captured
    once; each call replays it."""
    torch, device = peer.torch, peer.device
    torch.manual_seed(0)
    net = model(torch, kind).to(device)
    optimizer = torch.optim.Adam(net.parameters(), lr=LR.get(kind, 1e-3), capturable=True)
    x = torch.rand((batch, FEATURES), dtype=torch.float32, device=device)
    y = torch.randint(0, CLASSES, (batch,), dtype=torch.int64, device=device)
    F = torch.nn.functional
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(net(x), y).backward()
            optimizer.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    optimizer.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        F.cross_entropy(net(x), y).backward()
        optimizer.step()
    return graph.replay


def cases(peer):
    """(name, unit, measure) for each case to run; measure() returns the figure."""
    big = peer.big_sizes()
    out = []
    for name, op, rows, cols, is_big in OPS:
        if is_big and not big:
            continue
        gigabytes = bytes_moved(op, rows, cols) * 1e-9

        def measure(op=op, rows=rows, cols=cols, gigabytes=gigabytes, is_big=is_big):
            fn = op_function(peer, op, rows, cols)
            return gigabytes / peer.time_synced(fn, 3, 10 if is_big else 30)
        out.append((name, "GB/s", measure))
    on_cuda = peer.device_name.startswith("cuda")
    for n in MATMUL:
        if n > 2048 and not big:
            continue

        def measure(n=n, tf32=False):
            torch = peer.torch
            torch.manual_seed(0)
            a = torch.randn((n, n), dtype=torch.float32, device=peer.device)
            b = torch.randn((n, n), dtype=torch.float32, device=peer.device)
            repeats = 10 if n <= 1024 else (4 if n <= 2048 else 3)
            torch.backends.cuda.matmul.allow_tf32 = tf32
            try:
                return 2.0 * n * n * n * 1e-9 / peer.time_synced(lambda: torch.matmul(a, b), 1 if n > 2048 else 2, repeats)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = False  # every other case is exact float32
        out.append((f"matmul_f32_{n}", "GFLOP/s", measure))
        if on_cuda and n >= TF32_MIN:
            out.append((f"matmul_f32_tf32_{n}", "GFLOP/s", lambda n=n: measure(n, tf32=True)))
    for short, dtype_name in (("bf16", "bfloat16"), ("f16", "float16")):
        for n in HALF_MATMUL:
            if n > 2048 and not big:
                continue

            def measure_half(n=n, dtype_name=dtype_name):
                torch = peer.torch
                dtype = getattr(torch, dtype_name)
                torch.manual_seed(0)
                a = torch.randn((n, n), dtype=torch.float32, device=peer.device).to(dtype)
                b = torch.randn((n, n), dtype=torch.float32, device=peer.device).to(dtype)
                repeats = 10 if n <= 1024 else (4 if n <= 2048 else 3)
                return 2.0 * n * n * n * 1e-9 / peer.time_synced(lambda: torch.matmul(a, b), 1 if n > 2048 else 2, repeats)
            out.append((f"matmul_{short}_{n}", "GFLOP/s", measure_half))
    for source, target in (("f32", "bf16"), ("bf16", "f32"), ("f32", "f16"), ("f16", "f32")):
        def measure_convert(source=source, target=target):
            torch = peer.torch
            dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
            torch.manual_seed(0)
            x = torch.randn((M16,), dtype=torch.float32, device=peer.device).to(dtypes[source])
            gigabytes = M16 * (x.element_size() + torch.empty((), dtype=dtypes[target]).element_size()) * 1e-9
            return gigabytes / peer.time_synced(lambda: x.to(dtypes[target]), 3, 30)
        out.append((f"convert_{source}_to_{target}_16M", "GB/s", measure_convert))

    def overhead():
        torch = peer.torch
        a = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float32, device=peer.device)
        b = torch.tensor([5.0, 6.0, 7.0, 8.0], dtype=torch.float32, device=peer.device)

        def adds():
            for _ in range(1000):
                torch.add(a, b)
            peer.synchronize()
        return peer.time_plain(adds, 3, 21) / 1000 * 1e6
    out.append(("op_overhead_add_4", "us", overhead))
    for name, kind, batch, amp in TRAIN:
        if kind == "wide" and not big:
            continue

        def measure(kind=kind, batch=batch, amp=amp):
            return batch / peer.time_synced(train_function(peer, kind, batch, amp), 3, 10)
        out.append((name, "samples/s", measure))
    for batch in CONV_BATCHES:
        out.append((f"conv2d_fwd_bwd_cnn_b{batch}", "samples/s",
                    lambda batch=batch: batch / peer.time_synced(conv_function(peer, batch), 3, 10)))
    out.append((LAYER_NORM_NAME, "GB/s",
                lambda: 5 * LAYER_NORM_ROWS * LAYER_NORM_WIDTH * 4 * 1e-9 /
                peer.time_synced(layer_norm_function(peer), 3, 20)))
    out.append((f"train_transformer_block_b{BLOCK_BATCH}", "samples/s",
                lambda: BLOCK_BATCH / peer.time_synced(transformer_step(peer), 3, 10)))
    gpt_results = {}
    out.append((f"train_gpt_{GPT_SUFFIX}", "tokens/s", lambda: gpt_measure(peer, gpt_results)["speed"]))
    out.append((f"train_gpt_peak_rss_mib_{GPT_SUFFIX}", "MiB",
                lambda: (gpt_results or gpt_measure(peer, gpt_results))["peak"]))
    for t in ATTENTION_LENGTHS:
        def measure_attention(t=t):
            length = t // 8 if peer.args.quick else t
            warmup, repeats = (0, 1) if length >= 1024 else (1, 3)
            return attention_batch(length) / peer.time_synced(attention_function(peer, length), warmup, repeats)
        out.append((f"attention_causal_fwd_bwd_t{t}", "seq/s", measure_attention))
    for name, kind, batch in TRAIN_GRAPH:
        if not on_cuda:  # CUDA graphs only (ctorch's rows on the CPU are in bench_graphs.c)
            continue

        def measure(kind=kind, batch=batch):
            return batch / peer.time_synced(train_graph_function(peer, kind, batch), 3, 10)
        out.append((name, "samples/s", measure))
    return out


def die(message):
    print(f"torch_bench: {message}", file=sys.stderr)
    sys.exit(2)


def main(argv):
    parser = argparse.ArgumentParser(description="PyTorch's figures for ctorch bench's device cases.")
    parser.add_argument("--json", action="store_true", help="one JSON object per result")
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N] (default cpu)")
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 warm-up, 3 timed runs")
    parser.add_argument("--big", dest="big", action="store_true", default=None, help="the 256M ops and matmul 8192 too")
    parser.add_argument("--no-big", dest="big", action="store_false", help="never the big sizes")
    parser.add_argument("--fake", action="store_true", help="no PyTorch: every case with the value 1.0 (rehearsals)")
    parser.add_argument("filter", nargs="?", default=None, help="names: substrings, comma-separated; ^ and $ anchor")
    args = parser.parse_args(argv)
    peer = Peer(args)
    if not args.json:
        print(f"{'benchmark':28s} {'device':8s} {'value':>12s} {'unit':9s} peer")
    for name, unit, measure in cases(peer):
        if not selected(args.filter, name):
            continue
        if peer.fake:
            value = 1.0
        else:
            try:
                value = measure()
            except Exception as error:  # one case failing (out of memory, say) leaves the others
                print(f"torch_bench {name}: FAILED: {error}", file=sys.stderr)
                continue
            finally:
                if peer.device.type == "cuda":
                    peer.torch.cuda.empty_cache()
        if args.json:
            record = {"name": name, "device": peer.device_name, "value": float(f"{value:.6g}"),
                      "unit": unit, "peer": peer.version}
            if peer.fake:
                record["fake"] = True
            print(json.dumps(record), flush=True)
        else:
            print(f"{name:28s} {peer.device_name:8s} {value:12.3f} {unit:9s} {peer.version}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
