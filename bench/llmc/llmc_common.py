"""What the llm.c scripts share: llm.c's files written from Python's standard library (a GPT-2
checkpoint, token files, a byte-level tokenizer) and llm.c's train_gpt2.c built and run in a
folder of its own.

The checkpoint is gpt2_build_from_checkpoint's format (train_gpt2.c): 256 int32 (magic 20240326,
version 3, maxT, V, L, NH, C, Vp), then the 16 parameter tensors in float32, each holding all
layers in turn. Token files are dataloader.h's (magic 20240520, version 1, count, then uint16).
The tokenizer is tokenizer.h's version 2 (magic 20240328, version 2, vocab size, EOT id, then
each token as a length byte and its bytes)."""
import array
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHAKESPEARE = os.path.join(REPO, "data", "tinyshakespeare.txt")


def header(*values):
    ints = list(values) + [0] * (256 - len(values))
    return struct.pack("<256i", *ints)


def write_checkpoint(path, maxT, V, Vp, L, NH, C, seed):
    """GPT-2's initialisation (nanoGPT's _init_weights): N(0, 0.02) for the embeddings and Linear
    weights, N(0, 0.02 / sqrt(2 L)) for the two residual projections, LayerNorm 1 and 0, biases 0;
    the padded rows of wte zero, as llm.c's train_gpt2.py writes them."""
    rng = random.Random(seed)
    std, proj_std = 0.02, 0.02 / math.sqrt(2 * L)

    def normal(n, s):
        return [rng.gauss(0.0, s) for _ in range(n)]

    wte = normal(V * C, std) + [0.0] * ((Vp - V) * C)
    parts = [wte, normal(maxT * C, std),
             [1.0] * (L * C), [0.0] * (L * C),                 # ln1w, ln1b
             normal(L * 3 * C * C, std), [0.0] * (L * 3 * C),  # qkvw, qkvb
             normal(L * C * C, proj_std), [0.0] * (L * C),     # attprojw, attprojb
             [1.0] * (L * C), [0.0] * (L * C),                 # ln2w, ln2b
             normal(L * 4 * C * C, std), [0.0] * (L * 4 * C),  # fcw, fcb
             normal(L * C * 4 * C, proj_std), [0.0] * (L * C), # fcprojw, fcprojb
             [1.0] * C, [0.0] * C]                             # lnfw, lnfb
    with open(path, "wb") as f:
        f.write(header(20240326, 3, maxT, V, L, NH, C, Vp))
        for part in parts:
            values = array.array("f", part)
            if sys.byteorder != "little":
                values.byteswap()
            f.write(values.tobytes())


def write_tokens(path, tokens):
    values = array.array("H", tokens)
    if sys.byteorder != "little":
        values.byteswap()
    with open(path, "wb") as f:
        f.write(header(20240520, 1, len(tokens)))
        f.write(values.tobytes())


def write_byte_tokenizer(path, eot):
    """256 tokens, token i the byte i, so that train_gpt2.c's sampling prints text."""
    with open(path, "wb") as f:
        f.write(struct.pack("<256I", *([20240328, 2, 256, eot] + [0] * 252)))
        for i in range(256):
            f.write(bytes([1, i]))


def shakespeare_bytes():
    with open(SHAKESPEARE, "rb") as f:
        return f.read()


def patch_once(text, old, new, why):
    if text.count(old) != 1:
        sys.exit(f"llm.c's train_gpt2.c has changed: '{old}' ({why}) is not there exactly once; "
                 "this script knows llm.c at commit f1e2ace")
    return text.replace(old, new)


def build_train_gpt2(llmc_dir, work, patches):
    """Copies train_gpt2.c, llmc/ and the Makefile into work/src, applies patches
    [(old, new, why)], and builds train_gpt2 with llm.c's own Makefile (its CPU flags: -Ofast
    -march=native, -fopenmp where the compiler has it). Returns the program's path."""
    for name in ("train_gpt2.c", "Makefile", "llmc"):
        if not os.path.exists(os.path.join(llmc_dir, name)):
            sys.exit(f"LLMC_DIR '{llmc_dir}' has no {name}: give a checkout of github.com/karpathy/llm.c")
    src = os.path.join(work, "src")
    os.makedirs(src, exist_ok=True)
    shutil.copy(os.path.join(llmc_dir, "Makefile"), src)
    shutil.copytree(os.path.join(llmc_dir, "llmc"), os.path.join(src, "llmc"), dirs_exist_ok=True)
    with open(os.path.join(llmc_dir, "train_gpt2.c")) as f:
        text = f.read()
    for old, new, why in patches:
        text = patch_once(text, old, new, why)
    with open(os.path.join(src, "train_gpt2.c"), "w") as f:
        f.write(text)
    result = subprocess.run(["make", "train_gpt2"], cwd=src, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"building llm.c's train_gpt2 failed:\n{result.stdout}\n{result.stderr}")
    flags = re.findall(r"^\S*(?:cc|clang|gcc)\S* .*train_gpt2\.c.*$", result.stdout, re.M)
    return os.path.join(src, "train_gpt2"), (flags[-1] if flags else "make train_gpt2")


def llmc_commit(llmc_dir):
    try:
        return subprocess.run(["git", "-C", llmc_dir, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_train_gpt2(program, work, threads):
    """Runs it in work (it reads gpt2_124M.bin and dev/data/tinyshakespeare/*.bin from its working
    folder); its output."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    result = subprocess.run([program], cwd=work, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"llm.c's train_gpt2 failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


def prepare_run(work, checkpoint_args, train_tokens, val_tokens, seed):
    """The files train_gpt2 reads, in work."""
    os.makedirs(os.path.join(work, "dev", "data", "tinyshakespeare"), exist_ok=True)
    write_checkpoint(os.path.join(work, "gpt2_124M.bin"), seed=seed, **checkpoint_args)
    write_tokens(os.path.join(work, "dev", "data", "tinyshakespeare", "tiny_shakespeare_train.bin"), train_tokens)
    write_tokens(os.path.join(work, "dev", "data", "tinyshakespeare", "tiny_shakespeare_val.bin"), val_tokens)
    write_byte_tokenizer(os.path.join(work, "gpt2_tokenizer.bin"), eot=10)
