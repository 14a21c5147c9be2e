#!/usr/bin/env python3
"""Checks the code blocks of README.md and docs/*.md (the convention is docs/doc-tests.md).

usage: check_doc_blocks.py SOURCE_DIR BUILD_DIR CTORCH_TOOL

```c blocks: a complete program (no marker) is compiled against the built library and run on the
CPU, and must exit 0; a block after <!-- doc-test: wrap --> is compiled (not run) inside a main()
that declares the variables the README's fragments use (PRELUDE below); after
<!-- doc-test: toplevel --> it is compiled at file scope; after <!-- doc-test: skip --> it is left
alone. ```sh blocks: every command must name a program that exists (a file of the tree, the built
ctorch, one on PATH, or one an earlier command of the block builds with -o), a ctorch command that exists, and only options that command's --help or
that script's text names. Nothing long is run. Exits 1 listing every failure."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

SOURCE, BUILD, TOOL = (os.path.abspath(a) for a in sys.argv[1:4])

# What the fragments of the README may use without declaring it: a device, a module, batches,
# an optimizer, a data set, the graph example's step and batches. Compiled, never run.
PRELUDE = """#include <stdio.h>
#include <ctorch.h>
ct_tensor *train_step(ct_tensor *x, ct_tensor *y);
ct_tensor *net_forward(ct_module *self, const ct_tensor *x);
"""
MAIN_OPEN = """int main(void)
{
    ct_device device = CT_DEVICE_CPU, main_device = CT_DEVICE_CPU;
    ct_module *net = NULL;
    ct_tensor *x = NULL, *y = NULL, *static_x = NULL, *static_y = NULL;
    ct_tensor *batch_x[1] = {NULL}, *batch_y[1] = {NULL};
    int num_batches = 1;
    ct_optimizer *opt = NULL;
    ct_dataset *train = NULL;
    {
"""
MAIN_CLOSE = """
    }
    return 0;
}
"""
CFLAGS = ["-std=gnu11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-I", os.path.join(SOURCE, "include")]
FRAGMENT_FLAGS = ["-Wno-unused-variable", "-Wno-unused-but-set-variable", "-Wno-unused-parameter"]
SHELL_BUILTINS = {"export", "eval", "cd", "source", "set", "unset"}
LAUNCHERS = {"mpirun", "srun", "mpiexec"}
failures = []


def blocks(path):
    """(language, marker, first line number, text) of each fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w+)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        marker = re.match(r"^<!--\s*doc-test:\s*(\w+)\s*-->$", lines[j].strip()) if j >= 0 else None
        end = i + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        yield m.group(1), marker.group(1) if marker else None, i + 1, "\n".join(lines[i + 1:end])
        i = end + 1


def fail(where, what):
    failures.append(f"{where}: {what}")


def check_c(where, marker, text, work):
    if marker == "skip":
        return
    source = os.path.join(work, "block.c")
    if marker in (None, "run"):
        unit, flags = text, []
    elif marker == "wrap":
        unit, flags = PRELUDE + MAIN_OPEN + text + MAIN_CLOSE, FRAGMENT_FLAGS
    elif marker == "toplevel":
        unit, flags = PRELUDE + text + "\n", FRAGMENT_FLAGS + ["-Wno-unused-function"]
    else:
        fail(where, f"unknown marker 'doc-test: {marker}' (run, wrap, toplevel, skip)")
        return
    with open(source, "w") as f:
        f.write(unit)
    if marker in (None, "run"):
        binary = os.path.join(work, "block")
        cmd = ["cc"] + CFLAGS + [source, "-o", binary, "-L", BUILD, "-lctorch", "-Wl,-rpath," + BUILD]
    else:
        cmd = ["cc"] + CFLAGS + flags + ["-fsyntax-only", source]
    built = subprocess.run(cmd, capture_output=True, text=True)
    if built.returncode != 0:
        fail(where, "does not compile:\n" + built.stderr[-2000:])
        return
    if marker in (None, "run"):
        env = dict(os.environ, CTORCH_DEVICE="cpu")
        try:
            ran = subprocess.run([binary], capture_output=True, text=True, timeout=60, cwd=work, env=env)
        except subprocess.TimeoutExpired:
            fail(where, "ran past 60 s")
            return
        if ran.returncode != 0:
            fail(where, f"exits {ran.returncode}:\n{ran.stdout[-1000:]}{ran.stderr[-1000:]}")


help_cache = {}


def ctorch_help(args):
    key = tuple(args)
    if key not in help_cache:
        out = subprocess.run([TOOL] + args + ["--help"], capture_output=True, text=True, timeout=30)
        help_cache[key] = out.stdout + out.stderr
    return help_cache[key]


def commands(line):
    """The simple commands of a line: split at && || ; |, with those inside $( ) added."""
    inner = re.findall(r"\$\(([^()]*)\)", line)
    outer = re.sub(r"\"?\$\([^()]*\)\"?", "SUBST", line)
    parts = re.split(r"&&|\|\||;|\|", outer)
    for text in inner:
        parts += re.split(r"&&|\|\||;|\|", text)
    return [p.strip() for p in parts if p.strip()]


def check_ctorch(where, words):
    top = ctorch_help([])
    if not words or words[0] in ("--version", "--help", "version"):
        return
    sub = words[0]
    if not re.search(r"^\s+" + re.escape(sub) + r"\b", top, re.M):
        fail(where, f"ctorch has no command '{sub}'")
        return
    help_args = [sub] + (["--model", "gpt"] if sub == "train" and "gpt" in words else [])
    text = ctorch_help(help_args)
    for w in words[1:]:
        option = w.split("=", 1)[0]
        if option.startswith("--") and not re.search(re.escape(option) + r"\b", text):
            fail(where, f"'ctorch {' '.join(help_args)} --help' does not name {option}")


def check_command(where, command, made):
    try:
        words = shlex.split(command)
    except ValueError as e:
        fail(where, f"cannot be parsed ({e}): {command}")
        return
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words.pop(0)
    if not words or words[0] in SHELL_BUILTINS:
        return
    if words[0] in LAUNCHERS:
        # the program is the first word after the launcher's options that names ctorch or a path
        rest = [i for i, w in enumerate(words[1:], 1) if w == "ctorch" or w.startswith("./") or w.startswith("build/")]
        if not rest:
            fail(where, f"no program after {words[0]}: {command}")
            return
        words = words[rest[0]:]
    program = words[0]
    made.update(words[i + 1] for i, w in enumerate(words[:-1]) if w == "-o")  # cc ... -o NAME
    if program in made or program[2:] in made:
        return
    if program == "ctorch" or re.match(r"^(\./)?build/ctorch$", program):
        check_ctorch(where, words[1:])
        return
    if "/" in program:
        relative = program[2:] if program.startswith("./") else program
        path = os.path.join(BUILD, relative[len("build/"):]) if relative.startswith("build/") else os.path.join(SOURCE, relative)
        if relative.startswith("build/") and not os.path.exists(path):
            return  # a build output this build may not have made (another build's examples)
        if not os.access(path, os.X_OK):
            fail(where, f"{program} is not an executable file of the tree")
            return
        text = open(path, errors="replace").read() if os.path.getsize(path) < 1 << 20 else ""
        for w in words[1:]:
            option = w.split("=", 1)[0]
            if option.startswith("--") and option not in text:
                fail(where, f"{program} does not know {option}")
        return
    if program == "SUBST":
        return
    if shutil.which(program) is None and program not in LAUNCHERS:
        fail(where, f"'{program}' is not a program on PATH")


def check_sh(where, text):
    logical = re.sub(r"\\\n", " ", text)
    made = set()  # programs an earlier command of the block builds
    for number, line in enumerate(logical.split("\n")):
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            for command in commands(line):
                check_command(f"{where} (line {number + 1})", command, made)


def main():
    pages = [os.path.join(SOURCE, "README.md")]
    docs = os.path.join(SOURCE, "docs")
    pages += sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    counts = {"c": 0, "sh": 0}
    with tempfile.TemporaryDirectory() as work:
        for page in pages:
            name = os.path.relpath(page, SOURCE)
            for language, marker, line, text in blocks(page):
                where = f"{name}:{line}"
                if language == "c":
                    counts["c"] += 1
                    check_c(where, marker, text, work)
                elif language in ("sh", "bash", "shell"):
                    counts["sh"] += 1
                    check_sh(where, text)
    for f in failures:
        print("doc block " + f, file=sys.stderr)
    print(f"checked {counts['c']} C blocks and {counts['sh']} shell blocks in {len(pages)} pages: "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
