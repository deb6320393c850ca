"""Programs that only move data run unguarded (eqsat_ad/ir/selection.py): the rule's cases, and
its claim checked against the interpreter on inf, nan and signed zeros, both backends, on fixed
and on generated programs (strides, shifts, reversals, diagonals, masks)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba_inputs import agree

import eqsat_ad as ea
from eqsat_ad.ir.interpreter import evaluate
from eqsat_ad.ir.program import Statement
from eqsat_ad.ir.selection import moves_data, needs_guard, selects

SELECTIONS = {
    "stride": "def f(x: [N], w: [N]):\n    y[i: N] = (2*i < N) * x[2*i]\n"
              "    return Sum[i: N](w[i] * y[i])\n",
    "transpose": "def f(A: [N, M], W: [M, N]):\n    return Sum[i: N, j: M](W[j, i] * A[i, j])\n",
    "diag": "def f(x: [N], B: [N, N]):\n    D[i: N, j: N] = (i == j) * x[i]\n"
            "    return Sum[i: N, j: N](D[i, j] * B[i, j])\n",
    "shift_scale": "def f(x: [N], w: [N]):\n    y[i: N] = -2.5 * x[i + 1] / 4.0\n"
                   "    return Sum[i: N](w[i] * y[i])\n",
    "reverse": "def f(x: [N], w: [N]):\n    return Sum[i: N](w[i] * x[N - 1 - i])\n",
    "first": "def f(x: [N]):\n    return x[0]\n",
}

NOT_SELECTIONS = {
    # a stored mask times data: 0.0 * inf is nan where the inlined bracket gives 0
    "stored_mask": "def f(x: [N], w: [N]):\n    m[i: N] = (i > 2) * 1.0\n"
                   "    y[i: N] = m[i] * x[i]\n    return Sum[i: N](w[i] * y[i])\n",
    "sum_of_terms": "def f(x: [N]):\n    return Sum[i: N](x[i])\n",
    "product_of_data": "def f(x: [N], w: [N]):\n    return Sum[i: N](w[i] * x[i] * x[i])\n",
    "function": "def f(x: [N], w: [N]):\n    return Sum[i: N](w[i] * exp(x[i]))\n",
    "difference": "def f(x: [N], w: [N]):\n    return Sum[i: N](w[i] * (x[i] - x[i + 1]))\n",
}


def _gradient_programs(src: str) -> tuple[ea.Program, ea.Program, ea.Program]:
    prog = ea.parse(src)
    wrt = prog.param_names
    g = ea.grad(prog, wrt=wrt)
    return prog, g.naive, g.program


def test_the_rule_reads_the_expressions() -> None:
    prog = ea.parse(SELECTIONS["diag"])
    d = prog.statements[0]
    assert isinstance(d, Statement) and selects(d.body)
    sel = ea.parse("def f(x: [N], B: [N, N]):\n    y[i: N] = Sum[j: N]((i == j) * B[i, j])\n"
                   "    z[i: N] = Sum[j: N]((i < j) * B[i, j])\n    return y[0] + z[0]\n")
    y, z = sel.statements
    assert selects(y.body)  # an equality fixes j: one term
    assert not selects(z.body)  # a range of j: a sum of terms
    def body(expr: str) -> bool:
        p = ea.parse(f"def f(x: [N], w: [N]):\n    y[i: N] = {expr}\n    return y[0]\n")
        s = p.statements[0]
        assert isinstance(s, Statement)
        return selects(s.body)

    assert body("(i > 2) * 2.0 * x[i]") and body("-x[i + 1] / 4.0") and body("(i < 3)")
    assert not body("0.0 * x[i]")  # 0 * inf is nan
    assert not body("1e-40 * x[i]")  # 0 in float32
    assert not body("x[i] / 0.0") and not body("x[i] / w[i]") and not body("x[i] * w[i]")
    assert not body("x[i] + 1.0") and not body("exp(x[i])") and not body("x[i] ** 2")


@pytest.mark.parametrize("name", sorted(SELECTIONS))
def test_gradients_that_move_data_are_unguarded(name: str) -> None:
    _, naive, optimized = _gradient_programs(SELECTIONS[name])
    assert moves_data(naive) and moves_data(optimized)
    assert not needs_guard(naive, optimized)


@pytest.mark.parametrize("name", sorted(NOT_SELECTIONS))
def test_other_programs_stay_guarded(name: str) -> None:
    prog, naive, optimized = _gradient_programs(NOT_SELECTIONS[name])
    assert not moves_data(prog)
    if name == "sum_of_terms":  # (its gradient is a constant: that one moves no data)
        return
    assert needs_guard(naive, optimized)
    g = ea.grad(ea.parse(NOT_SELECTIONS[name]), wrt=ea.parse(NOT_SELECTIONS[name]).param_names)
    if g.program != g.naive:
        x = np.linspace(-1.0, 1.0, 6)
        g(*([x] * len(g.program.param_names)))
        assert g.compiled.fallback is not None


def _poisoned(prog: ea.Program, sizes: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    for p in prog.params:
        shape = tuple(d if isinstance(d, int) else sizes[d.name] for d in p.shape)
        v = rng.standard_normal(shape)
        flat = v.reshape(-1)
        if flat.size:
            at = rng.integers(0, flat.size, size=min(4, flat.size))
            flat[at] = [np.inf, -np.inf, np.nan, -0.0][:len(at)]
        out[p.name] = v
    return out


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("name", sorted(SELECTIONS))
def test_unguarded_code_agrees_with_the_interpreter_on_inf_and_nan(name: str,
                                                                   backend: str) -> None:
    if backend == "numba":
        pytest.importorskip("numba")
    prog = ea.parse(SELECTIONS[name])
    wrt = prog.param_names
    g = ea.grad(prog, wrt=wrt, backend=backend)
    sizes = {n: 7 if n == "N" else 5 for n in prog.size_names()}
    for seed in range(3):
        args = _poisoned(prog, sizes, seed)
        got = g(**args)
        assert g.compiled.fallback is None
        agree(got, evaluate(g.naive, **args), 1e-12)


def test_the_report_prices_no_guard_pass() -> None:
    g = ea.grad(ea.parse(SELECTIONS["stride"]), wrt=("x", "w"), sizes={"N": 1 << 16})
    assert "guard" not in str(g.report)
    other = ea.grad(ea.parse(NOT_SELECTIONS["stored_mask"]), wrt=("x",), sizes={"N": 1 << 16})
    if other.program != other.naive:
        assert "guard: one pass" in str(other.report)


@st.composite
def _gathers(draw: st.DrawFn) -> str:
    """A program of masked, scaled, strided and shifted reads of x (and a product with w)."""
    lines = ["def f(x: [N], w: [N]):"]
    reads = []
    for k in range(draw(st.integers(1, 3))):
        a = draw(st.sampled_from([1, 2, -1, 3]))
        b = draw(st.integers(-2, 2))
        index = f"{a}*i + {b}" if a != -1 else f"N - 1 - i + {b}"
        mask = draw(st.sampled_from(["", "(i > 1) * ", "(2*i < N) * ", "(i < N - 2) * "]))
        c = draw(st.sampled_from(["", "2.0 * ", "-0.5 * "]))
        lines.append(f"    y{k}[i: N] = {mask}{c}x[{index}]")
        reads.append(f"y{k}[{draw(st.sampled_from(['i', 'N - 1 - i']))}]")
    pick = draw(st.integers(0, len(reads) - 1))
    lines.append(f"    return Sum[i: N](w[i] * {reads[pick]})")
    return "\n".join(lines) + "\n"


@settings(max_examples=25, deadline=None)
@given(_gathers(), st.integers(0, 2**16))
def test_generated_data_movement_gradients_agree_unguarded(src: str, seed: int) -> None:
    prog = ea.parse(src)
    g = ea.grad(prog, wrt=("x", "w"), sizes={"N": 9})
    args = _poisoned(prog, {"N": 9}, seed)
    got = g(**args)
    assert not needs_guard(g.naive, g.program)  # (every generated program moves data)
    assert g.compiled.fallback is None
    agree(got, evaluate(g.naive, **args), 1e-12)
