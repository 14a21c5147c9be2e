"""Writes scheduler_fixture.h: PyTorch's learning rates of two parameter groups (SGD, lr 0.1 and
0.02) over STEPS steps of ExponentialLR, MultiStepLR, LambdaLR, SequentialLR, ChainedScheduler and
ReduceLROnPlateau, as tests/optim/test_more_lr_schedulers.c makes them. Run with the PyTorch venv:
    ~/.cache/ctorch/torch-cpu/bin/python tests/optim/make_scheduler_fixture.py > tests/optim/scheduler_fixture.h
"""
import torch
from torch.optim import lr_scheduler as L

STEPS = 10
METRICS = [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85]


def optimizer():
    a, b = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
    return torch.optim.SGD([{"params": [a], "lr": 0.1}, {"params": [b], "lr": 0.02}], lr=0.5)


CASES = {
    "exponential": lambda o: L.ExponentialLR(o, gamma=0.9),
    "multi_step": lambda o: L.MultiStepLR(o, milestones=[2, 5], gamma=0.5),
    "lambda": lambda o: L.LambdaLR(o, [lambda e: 0.5 ** e, lambda e: 1.0 / (1.0 + e)]),
    "sequential": lambda o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.25, total_iters=3), L.ExponentialLR(o, gamma=0.8)], milestones=[3]),
    "chained": lambda o: L.ChainedScheduler([L.StepLR(o, step_size=2, gamma=0.5), L.ExponentialLR(o, gamma=0.9)]),
    "plateau": lambda o: L.ReduceLROnPlateau(o, factor=0.5, patience=1, cooldown=1, min_lr=0.001),
}

print("/* Made by make_scheduler_fixture.py with torch %s: do not edit. */" % torch.__version__)
for name, make in CASES.items():
    o = optimizer()
    s = make(o)
    rates = [g["lr"] for g in o.param_groups]
    for t in range(STEPS):
        o.step()
        if name == "plateau":
            s.step(METRICS[t])
        else:
            s.step()
        rates += [g["lr"] for g in o.param_groups]
    print("static const double scheduler_fixture_%s[%d] = {%s};" % (name, len(rates), ", ".join(repr(r) for r in rates)))
