"""Shared checks of the NumPy-subset front end's tests: translate a function, compare the
reference interpreter with NumPy on random inputs, and its gradient with central differences."""

from __future__ import annotations

import numpy as np

import eqsat_ad as ea
from eqsat_ad.frontend.numpy_subset import translate
from eqsat_ad.ir import Program, Sum, children
from eqsat_ad.ir.checks import check_program
from eqsat_ad.ir.interpreter import evaluate

RNG = np.random.default_rng(20260529)


def _inputs(shapes: dict[str, tuple[int, ...]], positive: bool = False) -> dict[str, np.ndarray]:
    out = {}
    for name, shape in shapes.items():
        a = RNG.normal(size=shape)
        out[name] = np.abs(a) + 0.5 if positive else a
    return out


def check(fn, shapes, *, symbolic=None, dtypes=None, positive=False, inputs=None) -> Program:
    """Translate ``fn`` and compare the interpreter with NumPy on random inputs."""
    prog = translate(fn, symbolic or shapes, dtypes)
    check_program(prog)
    assert ea.parse(str(prog)) == prog  # prints as index language and parses back
    args = inputs if inputs is not None else _inputs(shapes, positive)
    got = evaluate(prog, **args)
    want = fn(**args)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    else:
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    return prog


def check_grad(fn, shapes, wrt, *, positive=False, inputs=None) -> None:
    """Reverse-mode gradient of the translation vs central differences of the NumPy function."""
    prog = translate(fn, shapes)
    args = inputs if inputs is not None else _inputs(shapes, positive)
    grads = evaluate(ea.vjp(prog, wrt=wrt), **args, ybar=1.0)
    grads = grads if isinstance(grads, tuple) else (grads,)
    names = (wrt,) if isinstance(wrt, str) else wrt
    h = 1e-6
    for name, g in zip(names, grads, strict=True):
        x = args[name]
        fd = np.zeros_like(x)
        for k in np.ndindex(x.shape):
            xp, xm = x.copy(), x.copy()
            xp[k] += h
            xm[k] -= h
            fd[k] = (fn(**{**args, name: xp}) - fn(**{**args, name: xm})) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


def count_sums(prog: Program) -> int:
    def go(e) -> int:
        return (1 if isinstance(e, Sum) else 0) + sum(go(c) for c in children(e))

    return sum(go(s.body) for s in prog.statements) + sum(go(o) for o in prog.outputs)
