"""Bounds of saturation and ranking (issue 11): the step loop against a stand-in e-graph and an
injected clock (no timing is measured), and the split schedule against egglog's own."""

from __future__ import annotations

import gc
import time

import numpy as np

import eqsat_ad as ea
from eqsat_ad.egraph import optimize as opt
from eqsat_ad.egraph.egglog_bindings import bindings
from eqsat_ad.egraph.encode import encode_program
from eqsat_ad.egraph.rules import (
    RuleFile,
    explore_step_text,
    load_rules,
    prelude_text,
    simplify_round_text,
)
from eqsat_ad.egraph.saturate import (
    OVERSHOOT,
    PRELUDE_FIXPOINT,
    Grower,
    _report_counts,
    _Sizer,
    split_prelude_fixpoints,
    step_phases,
    take_snapshot,
)
from eqsat_ad.examples import example

SIMPLIFY = RuleFile("simp", "simp.egg", "(ruleset simp)", True)
EXPLORE = RuleFile("expl", "expl.egg", "(ruleset expl)", False)


class FakeEGraph:
    """Commands change the graph as scripted; every command costs ``tick`` clock seconds."""

    def __init__(self, tick: float, prelude_rounds: int, growth: float, explore_changes: bool,
                 verify_changes: int = 0) -> None:
        self.tick, self.prelude_rounds, self.growth = tick, prelude_rounds, growth
        self.explore_changes, self.verify_changes = explore_changes, verify_changes
        self.now, self.n, self.left, self.commands = 0.0, 10, 0, []

    def clock(self) -> float:
        return self.now

    def size(self) -> int:
        return self.n

    def run(self, cmd: str) -> bool:
        self.now += self.tick
        self.commands.append(cmd)
        if cmd == PRELUDE_FIXPOINT:
            if self.left <= 0:
                return False
            self.left -= 1
            self.n = int(self.n * self.growth)
            return True
        self.left = 0
        if "(run-with bo expl)" in cmd:  # the exploratory pass: the prelude follows it up
            self.left = self.prelude_rounds if self.explore_changes else 0
            return self.explore_changes
        if "run-with" in cmd:  # a simplification round: a fixpoint from the start
            return False
        self.verify_changes -= 1  # the plain run of every set
        return self.verify_changes >= 0


def grower(eg: FakeEGraph, files, iterations=100, nodes=10**6, seconds=1e9) -> Grower:
    return Grower(eg.run, eg.size, eg.clock, files, iterations, nodes, seconds, 0.0, 0.0)


def test_a_step_that_multiplies_the_e_graph_is_cut_past_the_overshoot() -> None:
    eg = FakeEGraph(tick=0.0, prelude_rounds=30, growth=2.0, explore_changes=True)
    g = grower(eg, [SIMPLIFY, EXPLORE], nodes=1000)
    assert g.grow(lambda it, n: None) == "node limit"
    # stopped at the first prelude iteration past OVERSHOOT x the limit, not 2**30 nodes later
    assert OVERSHOOT * 1000 <= g.n < 2 * OVERSHOOT * 1000
    assert g.it == 2  # the simplification round, then the exploratory step that exploded


def test_the_clock_stops_a_step_in_its_middle() -> None:
    eg = FakeEGraph(tick=0.1, prelude_rounds=50, growth=1.0, explore_changes=True)
    g = grower(eg, [SIMPLIFY, EXPLORE], seconds=2.0)
    assert g.grow(lambda it, n: None) == "time limit"
    # the bound is looked at after every command: at most one command's time over
    assert eg.now <= 2.0 + 0.1 + 1e-9
    assert len(eg.commands) < 2.0 / 0.1 + 2


def test_a_step_is_not_started_when_its_predicted_time_does_not_fit() -> None:
    eg = FakeEGraph(tick=0.1, prelude_rounds=2, growth=1.0, explore_changes=True)
    g = Grower(eg.run, eg.size, eg.clock, [EXPLORE], 100, 10**6, 1.0, 0.0, 0.0)
    assert g.grow(lambda it, n: None) == "time limit"
    assert eg.now <= 1.0  # steps of ~0.4 s: the one that would overrun was never started


def test_saturated_only_when_a_plain_run_changes_nothing() -> None:
    eg = FakeEGraph(tick=0.0, prelude_rounds=1, growth=1.0, explore_changes=False,
                    verify_changes=2)
    steps: list[tuple[int, int]] = []
    g = grower(eg, [EXPLORE])
    assert g.grow(lambda it, n: steps.append((it, n))) == "saturated"
    plain = [c for c in eg.commands if "(run expl)" in c]
    assert len(plain) == 3  # two plain runs still changed the graph, the third did not
    assert [it for it, _ in steps] == [1, 2, 3]


def test_iteration_and_node_limits_between_steps() -> None:
    eg = FakeEGraph(tick=0.0, prelude_rounds=1, growth=1.0, explore_changes=True)
    assert grower(eg, [EXPLORE], iterations=3).grow(lambda it, n: None) == "iteration limit"
    eg = FakeEGraph(tick=0.0, prelude_rounds=1, growth=1.5, explore_changes=True)
    g = grower(eg, [EXPLORE], nodes=100)
    assert g.grow(lambda it, n: None) == "node limit" and 100 <= g.n < OVERSHOOT * 100


def test_split_schedules_keep_their_scheduler_declarations() -> None:
    files = load_rules(None)
    phases = step_phases(files, simplify=False)
    assert phases[1] is None and phases[-1] is None  # prelude fixpoints between the commands
    for cmd in phases:
        if cmd is not None:
            assert cmd.startswith("(run-schedule (let-scheduler")
            assert "(saturate (run prelude))" not in cmd.split("(repeat")[0]
    assert split_prelude_fixpoints("(run-schedule (seq (run a)) (saturate (run prelude)))") == [
        "(run-schedule (seq (run a)))", None
    ]


def _egraph(prog: ea.Program, files):
    eg = bindings.EGraph()
    for source in [prelude_text()] + [f.text for f in files]:
        eg.parse_and_run_program(source)
    eg.parse_and_run_program(encode_program(prog).text)
    eg.parse_and_run_program("(run-schedule (saturate (run prelude)))")
    return eg


def test_the_split_step_grows_the_same_e_graph_as_one_command() -> None:
    ex = example("E8")
    prog = ea.vjp(ea.parse(ex.source), ex.wrt[0])
    files = load_rules(None)
    whole, split = _egraph(prog, files), _egraph(prog, files)
    size = _Sizer(take_snapshot(whole))
    for simplify in (True, True, True, False, False):
        whole.parse_and_run_program(simplify_round_text(files) if simplify
                                    else explore_step_text(files))
        for cmd in step_phases(files, simplify):
            if cmd is not None:
                split.parse_and_run_program(cmd)
                continue
            while _report_counts(split.parse_and_run_program(PRELUDE_FIXPOINT), {}):
                pass
        assert size(whole) == size(split)
    a, b = take_snapshot(whole), take_snapshot(split)
    assert (a.n_nodes, a.n_classes) == (b.n_nodes, b.n_classes)


def test_an_exploding_matrix_chain_stops_near_the_node_limit() -> None:
    src = ("def f(A0: [D0, D1], A1: [D1, D2], A2: [D2, D3], A3: [D3, D4], A4: [D4, D5], "
           "A5: [D5, D6], A6: [D6, D7], A7: [D7, D8]):\n    return Sum[i0: D0, i1: D1, i2: D2, "
           "i3: D3, i4: D4, i5: D5, i6: D6, i7: D7, i8: D8](A0[i0, i1] * A1[i1, i2] * "
           "A2[i2, i3] * A3[i3, i4] * A4[i4, i5] * A5[i5, i6] * A6[i6, i7] * A7[i7, i8])\n")
    prog = ea.parse(src)
    adj = ea.vjp(prog, [p.name for p in prog.params])
    res = ea.optimize(adj, limits=ea.Limits(nodes=5000, seconds=60), cache=False)
    st = res.report.stats
    # one exploratory step used to take this e-graph from ~550 to ~180,000 e-nodes
    assert st.stop_reason == "node limit" and st.nodes < 4 * OVERSHOOT * 5000
    rng = np.random.default_rng(0)
    dims = [3, 2, 4, 2, 3, 2, 2, 3, 2]
    inputs = {f"A{k}": rng.standard_normal((dims[k], dims[k + 1])) for k in range(8)}
    inputs["out_bar"] = 1.0
    names = [p.name for p in adj.params]
    args = {n: inputs[n] if n in inputs else 1.0 for n in names}
    for a, b in zip(ea.evaluate(res.program, **args), ea.evaluate(adj, **args), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10)


def test_ranking_stops_at_its_deadline_with_extractions_best(monkeypatch) -> None:
    progs = [ea.parse(f"def f(x: [N]):\n    return Sum[i: N]({k} * x[i])\n") for k in (3, 2, 1)]
    now = [0.0]

    def clock() -> float:
        now[0] += 1.0
        return now[0]

    monkeypatch.setattr(opt, "cpu_clock", clock)
    tidied: list[ea.Program] = []
    monkeypatch.setattr(opt, "tidy", lambda p: tidied.append(p) or p)
    # past the deadline after the first candidate: extraction's best, the others never looked at
    assert opt.finish(progs, None, deadline=0.5) == (0, progs[0])
    assert tidied == progs[:1]
    now[0] = 0.0
    tidied.clear()
    opt.finish(progs, None, deadline=1e9)
    assert tidied == progs
    # a repeated candidate is priced once and the first of equals kept
    assert opt.finish([progs[1], progs[1]], None) == (0, progs[1])


class _Held:
    """An object the collector tracks (has a __dict__)."""


def test_the_worker_never_walks_the_callers_heap(monkeypatch, tmp_path) -> None:
    # A full collection in the forked worker used to walk every object of the caller (a test
    # process holds millions), charging seconds of CPU to the saturation budget. Count what a
    # collection in the worker would walk: the caller's objects must not be among them.
    from eqsat_ad.egraph import saturate as sat

    held = [_Held() for _ in range(200_000)]
    seen = tmp_path / "tracked"
    take = sat.take_snapshot

    def counting_snapshot(eg):
        seen.write_text(str(len(gc.get_objects())))
        return take(eg)

    monkeypatch.setattr(sat, "take_snapshot", counting_snapshot)  # inherited by the fork
    prog = ea.parse("def f(x: [N]):\n    return Sum[i: N](2.0 * x[i])\n")
    ea.optimize(prog, limits=ea.Limits(seconds=30), cache=False)
    assert len(gc.get_objects()) > len(held)  # the caller's own view: all of them
    assert int(seen.read_text()) < len(held) // 10


def test_the_optimizers_clock_counts_only_its_own_thread() -> None:
    # Other threads' work (a BLAS pool spinning after a product, the caller's own threads) is
    # not the optimizer's: charged to Limits.seconds it cut saturation and extraction short and
    # the result depended on what else the process ran.
    import threading

    from eqsat_ad.egraph.extract import cpu_clock

    a = np.random.default_rng(0).standard_normal((400, 400))
    done = threading.Event()

    def work() -> None:
        b = a
        for _ in range(40):  # NumPy releases the GIL in the product and tanh
            b = np.tanh(b @ a)
        done.set()

    ours, process = cpu_clock(), time.process_time()
    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert done.is_set()
    other = time.process_time() - process
    assert other > 0.05  # the other thread did work this process was charged for
    assert cpu_clock() - ours < other / 4  # and the optimizer's clock saw little of it
