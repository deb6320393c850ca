"""Index ranges (eqsat_ad.plan.ranges): what a statement term writes where, and what a sum
runs over, decided in the plan (the backend only emits them)."""

from __future__ import annotations

import numpy as np

import eqsat_ad as ea
from eqsat_ad.ir.expr import free_indices
from eqsat_ad.ir.index import Affine, size
from eqsat_ad.plan.lower import lower_program
from eqsat_ad.plan.normal import FreshNames, Term, expand
from eqsat_ad.plan.ranges import statement_term, sum_term


def _statement(source: str):
    (s,) = ea.parse(source).statements
    (t,) = expand(s.body, FreshNames({iv.name for iv in s.indices}, flatten=True))
    return s, t


def _free(f) -> set[str]:
    return f.free() if isinstance(f, Term) else set(free_indices(f))


def test_an_equality_inside_a_sum_is_eliminated_into_a_plain_read():
    s, t = _statement("def f(x: [N]):\n    y[i: N] = Sum[k: N]((i == k) * x[k])\n    return y\n")
    eliminated: list[str] = []
    got = statement_term(t, s.indices, eliminated)
    assert got is not None and eliminated == ["k"]
    assert not got.solved and not got.term.conds and got.axes["i"].is_full()
    assert [_free(f) for f in got.term.factors] == [{"i"}]


def test_an_equality_on_generators_is_a_scatter_at_solved_coordinates():
    s, t = _statement("def f(x: [N]):\n    y[i: N, j: N] = (i == j) * x[i]\n    return y\n")
    got = statement_term(t, s.indices, [])
    assert got is not None and got.solved == {"i": Affine.var("j")} and list(got.axes) == ["j"]
    low = lower_program(ea.parse("def f(x: [N]):\n    y[i: N, j: N] = (i == j) * x[i]\n"
                                 "    return y\n"), {"N": 5})
    assert "scatter" in low.kinds("y")


def test_a_bound_on_one_generator_narrows_its_range_into_a_slice_write():
    s, t = _statement("def f(x: [N]):\n    y[i: N] = (i >= 2) * x[i]\n    return y\n")
    got = statement_term(t, s.indices, [])
    assert got is not None and not got.term.conds
    assert got.axes["i"].lo == (Affine.constant(2),)
    prog = ea.parse("def f(x: [N]):\n    y[i: N] = (i >= 2) * x[i]\n    return y\n")
    x = np.arange(1.0, 7.0)
    np.testing.assert_array_equal(ea.compile(prog)(x), ea.evaluate(prog, x))


def test_a_sum_runs_over_its_narrowed_range_with_the_factors_free_of_it_outside():
    s, t = _statement("def f(x: [N], w: [N], z: [N]):\n"
                      "    y[i: N] = Sum[k: N]((k <= 3) * x[k] * w[i] / z[i])\n    return y\n")
    got = sum_term(t, [], divide_out=True)
    assert got is not None and list(got.inner) == ["k"]
    assert got.inner["k"].hi == (Affine.of_dim(size("N")), Affine.constant(4))  # min(N, 4)
    summed, outside = got.summed, got.outside
    assert [_free(f) for f in summed[0]] == [{"k"}] and not summed[1]
    assert [_free(f) for f in outside[0]] == [{"i"}, {"i"}] and not outside[1]
    # the strict code keeps a quotient whole: (x[k] w[i]) / z[i] stays one factor of the sum
    strict = sum_term(t, [], divide_out=False)
    assert strict is not None and not strict.outside[0]
    assert [_free(f) for f in strict.summed[0]] == [{"i", "k"}]
