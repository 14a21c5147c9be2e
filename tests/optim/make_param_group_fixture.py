"""Writes param_group_fixture.h: PyTorch's parameters after STEPS steps of SGD, Adam, AdamW,
RMSprop (centered and not) and Adagrad
over two parameter groups (decay / no decay, different lr, betas, momentum), in float64, from
the gradients param_group_steps.h gives. Run with the PyTorch venv:
    ~/.cache/ctorch/torch-cpu/bin/python tests/optim/make_param_group_fixture.py > tests/optim/param_group_fixture.h
"""
import math
import torch

SIZES = [5, 3, 4]  # params 0, 1, 2; group 0 = {0, 2}, group 1 = {1}
STEPS = 4


def initial(k, i):
    return 0.5 - 0.3 * i + 0.05 * i * i + 0.1 * k


def gradient(step, k, i):
    return math.sin(1.0 + 0.7 * i + 1.3 * step + 0.5 * k) * (1.0 + 0.5 * step)


def run(make):
    params = [torch.tensor([initial(k, i) for i in range(n)], dtype=torch.float64, requires_grad=True)
              for k, n in enumerate(SIZES)]
    opt = make([{"params": [params[0], params[2]]}, {"params": [params[1]]}])
    for step in range(STEPS):
        for k, p in enumerate(params):
            p.grad = torch.tensor([gradient(step, k, i) for i in range(p.numel())], dtype=torch.float64)
        opt.step()
    return [v for p in params for v in p.detach().tolist()]


CASES = {
    "sgd": lambda ps: torch.optim.SGD(
        [dict(ps[0], lr=0.05, weight_decay=0.1, momentum=0.9), dict(ps[1], lr=0.2, weight_decay=0.0, momentum=0.5)],
        lr=0.01, momentum=0.0, dampening=0.1),
    "adam": lambda ps: torch.optim.Adam(
        [dict(ps[0], lr=0.01, weight_decay=0.1), dict(ps[1], lr=0.03, weight_decay=0.0, betas=(0.8, 0.99))],
        lr=0.001, eps=1e-6),
    "adamw": lambda ps: torch.optim.AdamW(
        [dict(ps[0], lr=0.01, weight_decay=0.1), dict(ps[1], lr=0.03, weight_decay=0.0, betas=(0.8, 0.99))],
        lr=0.001, eps=1e-6),
    "rmsprop_centered": lambda ps: torch.optim.RMSprop(
        [dict(ps[0], lr=0.01, weight_decay=0.1, momentum=0.5), dict(ps[1], lr=0.02, weight_decay=0.0, momentum=0.0)],
        lr=0.001, alpha=0.9, eps=1e-6, centered=True),
    "rmsprop": lambda ps: torch.optim.RMSprop(
        [dict(ps[0], lr=0.01, weight_decay=0.1, momentum=0.9), dict(ps[1], lr=0.02, weight_decay=0.0, momentum=0.0)],
        lr=0.001),
    "adagrad": lambda ps: torch.optim.Adagrad(
        [dict(ps[0], lr=0.05, weight_decay=0.1), dict(ps[1], lr=0.1, weight_decay=0.0)],
        lr=0.01, lr_decay=0.1, initial_accumulator_value=0.1, eps=1e-10),
}

print("/* Made by make_param_group_fixture.py with torch %s: do not edit. */" % torch.__version__)
for name, make in CASES.items():
    values = run(make)
    print("static const double param_group_fixture_%s[%d] = {%s};" % (
        name, len(values), ", ".join(repr(v) for v in values)))
