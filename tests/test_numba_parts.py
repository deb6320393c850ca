"""NumPy parts (backend/fused/parts.py): consecutive statements the schedule places as NumPy
code run as one part, one call of one NumPy program returning what later statements and the
outputs read; a lone statement's part is the program it always was. (The values of mlp's
gradient, parts and all, against the interpreter's, finite and not: test_numba_epilogue.py.)"""

from __future__ import annotations

import pytest

import eqsat_ad as ea
from eqsat_ad.examples import WORKED_EXAMPLES

pytest.importorskip("numba")

from eqsat_ad.backend.fused.parts import Part, part_lines, part_program  # noqa: E402

pytestmark = pytest.mark.usefixtures("numba_cache")

MLP = next(e for e in WORKED_EXAMPLES if e.id == "mlp")

THREE = """\
def f(x: [N], y: [N]):
    a[i: N] = x[i] * y[i]
    b[i: N] = a[i] + y[i]
    c[i: N] = b[i] * x[i]
    return Sum[i: N](c[i])
"""


def _statements(src: str) -> tuple[ea.Program, dict]:
    prog = ea.parse(src)
    shapes = {p.name: p.shape for p in prog.params} | {s.name: s.shape
                                                         for s in prog.statements}
    return prog, shapes


def test_a_run_computes_its_own_statements_and_returns_what_is_read_later() -> None:
    prog, shapes = _statements(THREE)
    a, b, c = prog.statements
    part = Part(prog, shapes, [a, b, c], ["c"], frozenset())
    assert not part.single and part.name == "_np_a"
    assert [s.name for s in part.program.statements] == ["a", "b", "c"]
    assert part.reads == ["x", "y"]  # a and b are computed inside, not read
    assert part.program.returns_tuple and len(part.program.outputs) == 1
    lines = part_lines(part, shapes)
    assert lines == ["    _r = _np_a(_fin, x, y)", "    c = np.asarray(_r[0], dtype=F)"]


def test_a_lone_statement_is_its_own_program() -> None:
    prog, shapes = _statements(THREE)
    b = prog.statements[1]
    part = Part(prog, shapes, [b], ["b"], frozenset())
    assert part.single and part.reads == ["x", "y", "a"]
    assert part.program == part_program(prog, shapes, b)
    assert not part.program.returns_tuple
    assert part_lines(part, shapes) == ["    b = np.asarray(_np_b(_fin, x, y, a), dtype=F)"]


def test_parts_that_differ_have_different_digests() -> None:
    prog, shapes = _statements(THREE)
    a, b, c = prog.statements
    one = Part(prog, shapes, [a, b], ["b"], frozenset())
    two = Part(prog, shapes, [a, b], ["a", "b"], frozenset())
    assert one.digest != two.digest
    assert Part(prog, shapes, [a, b], ["b"], frozenset({"b"})).digest != one.digest


def _mlp() -> ea.Compiled:
    return ea.grad(MLP.program(), MLP.wrt, backend="numba")


def test_mlp_runs_its_last_numpy_statements_as_one_part() -> None:
    g = _mlp()
    place = g.compiled.schedule.placement
    tail = [s.name for s in g.compiled._prog.statements][-4:]
    assert all(place[n] == "numpy" for n in tail), place
    # one call of one part for the four gradients of the weights and biases
    calls = [line for line in g.source.splitlines() if "_r = _np_" in line]
    assert any(f"_r = _np_{tail[0]}(" in line for line in calls), calls
    for k, name in enumerate(tail):
        assert f"    {name} = np.asarray(_r[{k}], dtype=F)" in g.source
    for name in tail[1:]:
        assert f"_np_{name}(" not in g.source
    assert len(g.compiled._numpy_parts) < sum(1 for v in place.values() if v == "numpy")
