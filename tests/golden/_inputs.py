"""Small functions whose generated adjoints are kept as golden files next to this module.

Editing this file moves line numbers in the golden files' comments: regenerate them with
``SRCGRAD_REGEN_GOLDEN=1 python -m pytest tests/test_golden.py``.
"""
import numpy as np


def straight_line(x, y):
    z = x * y + np.sin(x)
    w = z / y
    return w * w


def if_else(x):
    if x > 0:
        y = x * x
    else:
        y = -3 * x
    return y + 1


def for_accumulate(x, n):
    total = 0.0
    for i in range(n):
        total = total + x * i
    return total


def while_loop(x):
    y = x
    while y < 10.0:
        y = y * 1.5
    return y


def _helper(a, b):
    return a * b + a


def user_call(x):
    y = _helper(x, 2.0)
    return _helper(y, x)


# (name, function, wrt)
GOLDEN = [
    ("straight_line", straight_line, (0, 1)),
    ("if_else", if_else, 0),
    ("for_accumulate", for_accumulate, 0),
    ("while_loop", while_loop, 0),
    ("user_call", user_call, 0),
]
