"""A statement run as a loop over a small axis (:mod:`eqsat_ad.plan.split`): one slice of the
output, or one term of a sum, per iteration; what does not depend on the loop is hoisted.

The loop variable is a size-like symbol of the index language (an :class:`Affine` with it in
``sizes``), counting from 1 as sizes do (the index is ``_k1 - 1``): reads at it are plain
indexing (``x[:, _k1 - 1]``), reads shifted by it are slices (``y[_k1 - 1:N]``), and the fact
``_k1 <= extent`` lets the reads be proved in range.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction

from ...ir.index import Affine, Dim
from ...ir.program import Statement
from .. import split as plan_split
from ..kernels import Fill, Kernel
from ..normal import Cond, Term, decide_static
from ..poly import Poly
from ..split import SplitPrice, is_small, split_price
from ..windows import read_ranges

_ASSIGN = re.compile(r"^(\s*)([A-Za-z_]\w*) = (.*)$")
_NAME = re.compile(r"[A-Za-z_]\w*")


class Loops:
    """Mixin of the code generator (:class:`eqsat_ad.plan.lower.statements.Codegen`)."""

    def split_axes(self, s: Statement, terms: list[Term]) -> list[tuple[str, str | Dim]]:
        """The small axes ``s`` (expanded into ``terms``) may run as a loop over: generators
        ``("gen", name)`` and summed extents ``("sum", extent)``."""
        if self.strict or self.indent or s.name in self.structured or not self.sizes:
            return []
        cands: list[tuple[str, str | Dim]] = [
            ("gen", iv.name) for iv in s.indices if is_small(iv.extent, self.sizes)]
        for t in terms:
            for iv in t.sums:
                if is_small(iv.extent, self.sizes) and ("sum", iv.extent) not in cands:
                    cands.append(("sum", iv.extent))
        return cands

    def split_choice(self, s: Statement, terms: list[Term]
                     ) -> tuple[tuple[str, str | Dim] | None, SplitPrice]:
        """How to lower ``s`` (expanded into ``terms``): a loop over a small axis when that is
        priced below running it whole (:func:`eqsat_ad.plan.split.prefer`), else None; and
        the price of that choice."""
        best_price = self.trial_price(s, terms, None)
        best = None
        for cand in self.split_axes(s, terms):
            price = self.trial_price(s, terms, cand)
            if plan_split.prefer(price, best_price):
                best, best_price = cand, price
        return best, best_price

    def trial_price(self, s: Statement, terms: list[Term],
                    cand: tuple[str, str | Dim] | None) -> SplitPrice:
        """The price of lowering ``s`` as ``terms``, whole (``cand`` None) or split by
        ``cand``: a trial lowering the first time this statement asks, then remembered.

        A trial starts from the generator's state at the statement (every trial is rolled
        back), so within one statement the price is a function of the term list and the
        candidate alone: the spread form (:mod:`eqsat_ad.plan.spread`) pays a trial only for
        the term lists it changes. :meth:`statement` forgets the prices at each statement."""
        key = (s.name, cand, tuple(t.key() for t in terms))
        price = self.trial_prices.get(key)
        if price is None:
            lower = (lambda: self.lower_terms(s, terms)) if cand is None else (
                lambda: self.run_split(s, terms, cand))
            price = self.trial_prices[key] = self.trial(lower)
        return price

    def lower_choice(self, s: Statement, terms: list[Term],
                     split: tuple[str, str | Dim] | None) -> None:
        """Emit ``s`` as :meth:`split_choice` chose."""
        if split is None:
            self.lower_terms(s, terms)
        else:
            self.run_split(s, terms, split)

    def trial(self, lower: Callable[[], None]) -> SplitPrice:
        """The split price of what ``lower()`` emits; then forgotten."""
        self.trials += 1
        mark = self.mark()
        memo, aranges, calls = dict(self.memo), dict(self.aranges), self.loop_calls
        facts, shapes = list(self.facts), dict(self.shapes)
        kinds, risky = dict(self.kinds), set(self.risky_vars)
        try:
            lower()
            ks = self.kernels[mark[1]:]
            return split_price(ks, self.loop_calls - calls + _calls(ks), self.sizes)
        finally:
            self.rollback(mark)
            self.memo, self.aranges, self.facts = memo, aranges, facts
            self.loop_calls, self.shapes = calls, shapes
            self.kinds, self.risky_vars = kinds, risky

    def run_split(self, s: Statement, terms: list[Term], cand: tuple[str, str | Dim]) -> None:
        """Emit ``s`` as a loop over the generator or summed extent ``cand``."""
        kind, which = cand
        py = self.py[s.name]
        extent = next(iv.extent for iv in s.indices if iv.name == which) if kind == "gen" \
            else which
        assert not isinstance(extent, str)
        var = self.loop_symbol()
        # (the variable counts from 1, as sizes do: facts about sizes assume them >= 1)
        at = Affine((), ((var, Fraction(1)),), Fraction(-1))
        inner: list[Term] = []
        if kind == "gen":
            pos = [iv.name for iv in s.indices].index(str(which))
            sub = Statement(s.name, tuple(iv for iv in s.indices if iv.name != which), s.body)
            target = f"{py}[{', '.join([':'] * pos + [self.aff_code(at)])}]"
            inner = [t.substitute({str(which): at}) for t in terms]
            shape = self._shape_code([self.full_axis(iv) for iv in s.indices])
            n = Poly.product_of_dims(s.shape)
            self.emit(f"{py} = np.zeros({shape}, dtype=_dt)", self.kernel(Fill, n, n,
                                                                          "zero-fill"))
        else:
            sub, target = s, py
            rest: list[Term] = []
            for t in terms:
                iv = next((x for x in t.sums if x.extent == which), None)
                if iv is None:
                    rest.append(t)
                    continue
                t = Term(t.coef, [x for x in t.sums if x is not iv], t.factors, t.conds)
                inner.append(t.substitute({iv.name: at}))
            self.lower_terms(s, rest, more=True)
        self.decide("split-loop", f"{kind} axis {which} of extent {extent}: a loop")
        self.emit(f"for {self.py[var]} in range(1, {self.dim_code(extent)} + 1):")
        start, kstart = len(self.lines), len(self.kernels)
        self.loop_start = start
        self.indent += 1
        self.facts.append(Affine.of_dim(extent) - at - 1)
        risky = False
        try:
            for t in inner:
                ranges = [c for c in read_ranges(t.factors, self.shapes)
                          if var in c.aff.size_names() and len(c.indices()) == 1]
                t2 = decide_static(replace(t, conds=t.conds + ranges))
                if t2 is None:
                    continue
                # conditions on the loop variable alone (a read's range at this iteration) are
                # tested before the term runs: a mask would still evaluate the read out of range
                per_trip = [c for c in t2.conds if c.kind in ("ge", "eq", "ne")
                            and not c.indices() and var in c.aff.size_names()]
                # (a temporary the guarded lines define is not there after the if: forgotten)
                memo, aranges = dict(self.memo), dict(self.aranges)
                if per_trip:
                    t2 = replace(t2, conds=[c for c in t2.conds if c not in per_trip])
                    self.emit("if " + " and ".join(self.trip_test(c) for c in per_trip) + ":")
                    self.indent += 1
                mark = len(self.lines)
                try:
                    for w in self.windows(t2):
                        plan = self.plan_term(w, sub)
                        if plan is not None:
                            risky |= self.write(target, sub, *plan)
                finally:
                    if per_trip:
                        if len(self.lines) == mark:
                            self.emit("pass")
                        self.indent -= 1
                        self.memo, self.aranges = memo, aranges
            if len(self.lines) == start:
                self.emit("pass")
        finally:
            self.indent -= 1
            self.facts.pop()
        self.hoist(start, kstart, var, Poly.of_dim(extent))
        if risky:
            self.risky_vars.add(s.name)
        self.shapes[s.name] = s.shape
        self.kinds[s.name] = "tensor"

    def trip_test(self, c: Cond) -> str:
        """Python code of an index-free condition (on sizes and loop variables)."""
        pos, neg = c.sides()  # (as masks print it: M >= _k2)
        op = dict(ge=">=", eq="==", ne="!=")[c.kind]
        return f"{self.aff_code(pos)} {op} {self.aff_code(neg)}"

    def loop_variant(self) -> set[str]:
        """The names that change with the loops being emitted: their variables and what the
        lines of the loop body so far compute from them."""
        variant = {self.py[v] for v in self.loop_symbols}
        for line in self.lines[self.loop_start:]:
            m = _ASSIGN.match(line)
            if m is not None and set(_NAME.findall(m.group(3))) & variant:
                variant.add(m.group(2))
        return variant

    def loop_symbol(self) -> str:
        """A fresh loop variable, a size-like symbol the code reads by its Python name."""
        self.tmp += 1
        name = f"_k{self.tmp}"
        self.py[name] = name
        self.loop_symbols.add(name)
        return name

    def hoist(self, start: int, kstart: int, var: str, trips: Poly) -> None:
        """Move the lines of the loop body (from ``start``) that do not depend on the loop
        variable before the loop; the kernels of the rest run ``trips`` times."""
        body = self.lines[start:]
        head = start - 1  # the ``for`` line
        depth = " " * (len(self.lines[head]) - len(self.lines[head].lstrip()) + 4)
        variant = {self.py[var]}
        moved: list[int] = []
        kept: list[int] = []
        for k, line in enumerate(body):
            m = _ASSIGN.match(line)
            if (m is not None and m.group(1) == depth and m.group(2).startswith("_")
                    and not set(_NAME.findall(m.group(3))) & variant):
                moved.append(k)
                continue
            kept.append(k)
            if m is not None:
                variant.add(m.group(2))
        order = [head + 1 + k for k in moved] + [head] + [head + 1 + k for k in kept]
        new_at = {old: head + n for n, old in enumerate(order)}
        self.lines[head:] = [self.lines[old] if old == head else
                             self.lines[old][4:] if old - head - 1 in moved else self.lines[old]
                             for old in order]
        in_loop = {head + 1 + k for k in kept}
        looped: list[Kernel] = []
        for k in self.kernels[kstart:]:
            if k.line in in_loop:
                looped.append(replace(k, line=new_at[k.line], space=k.space * trips))
            else:
                looped.append(replace(k, line=new_at[k.line]))
        self.kernels[kstart:] = looped
        n_trips = int(trips.evaluate({n: self.sizes.get(n, 1000) for n in trips.size_names()}))
        self.loop_calls += (n_trips - 1) * _calls([k for k in looped if k.line > head + len(
            moved)])
        # temporaries defined in the loop hold its last iteration: not reusable after it
        gone = variant - {self.py[var]}
        self.memo = {c: t for c, t in self.memo.items() if t not in gone}
        self.aranges = {c: t for c, t in self.aranges.items() if t not in gone}


def _calls(kernels: list[Kernel]) -> int:
    """Kernel calls: the kernels that touch something (views are free)."""
    return sum(1 for k in kernels if not (k.cost.is_zero() and k.alloc.is_zero()))
