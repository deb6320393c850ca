"""The deep programs of issue 11 (a long sum of squares, a long chain of statements, an unrolled
RNN's adjoint) and the chain's hand-written gradient: shared by experiments/scale.py and
tests/test_scale.py."""

from __future__ import annotations

import numpy as np

import eqsat_ad as ea


def sum_of_squares(n: int) -> str:
    return "def f(x: [N]):\n    return " + " + ".join(f"x[{i}] * x[{i}]" for i in range(n)) + "\n"


def statement_chain(n: int) -> str:
    lines = ["def f(x: [N]):", "    s0 = x[0] * x[0]"]
    lines += [f"    s{i} = s{i - 1} + x[{i % 7}] * x[{i % 5}]" for i in range(1, n)]
    return "\n".join(lines + [f"    return s{n - 1}"]) + "\n"


def chain_gradient(n: int, x: np.ndarray) -> np.ndarray:
    g = np.zeros_like(x)
    g[0] += 2 * x[0]
    for i in range(1, n):
        g[i % 7] += x[i % 5]
        g[i % 5] += x[i % 7]
    return g


def rnn_adjoint(steps: int) -> ea.Program:
    lines = ["def f(x: [N], W: [N, N]):", "    h0[i: N] = x[i]"]
    lines += [
        f"    h{t}[i: N] = tanh(Sum[j: N](W[i, j] * h{t - 1}[j]))" for t in range(1, steps + 1)
    ]
    lines.append(f"    return Sum[i: N](h{steps}[i])")
    return ea.vjp(ea.parse("\n".join(lines) + "\n"), "W")
