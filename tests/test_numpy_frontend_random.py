"""The NumPy-subset front end on random programs (hypothesis): expressions and loops written at
random translate to programs the reference interpreter evaluates as NumPy runs them."""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy_frontend_checks import check, check_grad

# ================================================================================================
# Random NumPy expressions (hypothesis): translation == NumPy
# ================================================================================================

_GEN_SHAPES = {"a": (3, 4), "b": (4,), "c": ()}


def _expr(data, shape: str, depth: int) -> str:
    """A random NumPy expression of the given shape ('34', '43', '4', '3' or '0')."""
    d = depth - 1
    leaf = depth <= 0
    opts = {
        "34": ["a"] if leaf else [
            "a", "({x} {op} {y})", "({x} {op} {v})", "({x} {op} {s})", "np.tanh({x})",
            "np.maximum({x}, {s})", "np.where({x} > {v}, {x}, {s})", "{t}.T", "{x}[::-1]",
            "np.outer({w}, {v})", "np.exp(-np.abs({x}))", "({x} ** 2)",
        ],
        "43": ["a.T"] if leaf else ["{x}.T", "np.transpose({x})", "np.einsum('ij->ji', {x})"],
        "4": ["b"] if leaf else [
            "b", "({v} {op} {v2})", "np.sum({x}, axis=0)", "{x}[1]", "{v}[::-1]",
            "({w} @ {x})", "np.min({x}, axis=0)", "np.dot({t}, {w})",
        ],
        "3": ["a[:, 0]"] if leaf else [
            "np.sum({x}, axis=1)", "({x} @ {v})", "{x}[:, 2]", "np.max({x}, axis=1)",
            "np.mean({x}, axis=-1)",
        ],
        "0": ["c", "1.5"] if leaf else [
            "c", "np.sum({v})", "np.mean({x})", "{v}[0]", "np.trace({x}[:, :3])", "2.0",
            "({s} {op} {s2})",
        ],
    }[shape]
    template = data.draw(st.sampled_from(opts))
    parts = {
        "x": lambda: _expr(data, "34", d), "y": lambda: _expr(data, "34", d),
        "t": lambda: _expr(data, "43", d), "v": lambda: _expr(data, "4", d),
        "v2": lambda: _expr(data, "4", d), "w": lambda: _expr(data, "3", d),
        "s": lambda: _expr(data, "0", d), "s2": lambda: _expr(data, "0", d),
        "op": lambda: data.draw(st.sampled_from(["+", "-", "*"])),
    }
    return template.format(**{k: f() for k, f in parts.items() if "{" + k + "}" in template})


_GENERATED = iter(range(10**9))


def _check_source(src: str) -> None:
    """Write ``src`` (a module defining ``f(a, b, c)``) to a file, the front end reads source,
    import it and check its ``f``."""
    with tempfile.NamedTemporaryFile("w", suffix=f"_gen{next(_GENERATED)}.py", delete=False) as fh:
        fh.write(src)
    try:
        spec = importlib.util.spec_from_file_location(Path(fh.name).stem, fh.name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        check(module.f, _GEN_SHAPES)
    finally:
        os.unlink(fh.name)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_numpy_expressions_translate_exactly(data):
    body = _expr(data, data.draw(st.sampled_from(["34", "4", "0"])), 3)
    src = f"import numpy as np\n\n\ndef f(a, b, c):\n    return {body}\n"
    _check_source(src)


def test_integer_counters_stay_integers():
    def f(x):
        k = 0
        tri = 0
        for i in range(x.shape[0]):
            k += 1
            tri += i
        return x[k - 1] * tri + x[tri - 2 * k + 1]

    prog = check(f, {"x": (4,)})
    assert len(prog.statements) == 0  # indices resolved at translation: x[3] * 6 + x[-1]

    def count(x):
        k = 0
        for _i in range(len(x)):
            k += 1
        return x[k - 1]

    check(count, {"x": (5,)}, symbolic={"x": ("N",)})


_LOOP_TERMS = [
    "b[i]", "a[1, i]", "b[3 - i]", "b[i - 1]", "b[(2 * i) % 4]", "np.sum(a[:, i] * b[i])",
    "np.max(a[:, i])", "c * i", "np.tanh(b[i]) * b[3 - i]", "a[i % 3, i]", "t",
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_loops_translate_exactly(data):
    """Accumulation loops with locals, index guards and wrapping indices: summed or unrolled,
    always equal to running the loop."""
    lines = ["s = 0.0", "v = np.zeros(3)", "for i in range(4):", "    t = a[0, i] * 2.0"]
    for _ in range(data.draw(st.integers(1, 3))):
        term = data.draw(st.sampled_from(_LOOP_TERMS))
        other = data.draw(st.sampled_from(_LOOP_TERMS))
        target = data.draw(st.sampled_from(["s", "v"]))
        guard = data.draw(st.sampled_from(["", "i > 1", "i != 2", "i <= 2 and i >= 1"]))
        op = data.draw(st.sampled_from(["+=", "-="]))
        stmt = f"{target} {op} {term} * {other}"
        if guard:
            lines += [f"    if {guard}:", f"        {stmt}"]
        else:
            lines.append(f"    {stmt}")
    lines.append("return s + np.sum(v * v) + t")
    src = "import numpy as np\n\n\ndef f(a, b, c):\n" + "".join(f"    {x}\n" for x in lines)
    _check_source(src)


def test_item_assignment_on_local_arrays_is_a_functional_update():
    def f(x, A):
        y = np.zeros(x.shape[0])
        y[0] = x[0]
        for i in range(1, x.shape[0]):
            y[i] = y[i - 1] + x[i]  # cumulative sum: carried, unrolled
        B = A.copy()
        B[1:, ::-1] = x[:3, None] * 2.0
        B[0] += 1.0
        B[..., 2] -= x[1]
        z = x * 1.0
        z[:] = 3.0
        return y, B, z

    check(f, {"x": (5,), "A": (4, 3)})
    check_grad(updated_sum, {"x": (5,)}, "x")


def updated_sum(x):
    y = x * 1.0
    y[1:3] = np.exp(x[:2])
    y[-1] *= x[0]
    return np.sum(y * y)
