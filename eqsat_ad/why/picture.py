"""A picture of the e-graph: e-classes as boxes holding their e-nodes, edges to child classes,
the extracted choice highlighted, as standalone SVG (no Graphviz needed).

The layout is layered by breadth-first depth from the statement roots; classes of one layer sit
side by side in discovery order. Only expression classes are drawn (affine indices, index lists
and predicates are written into the node labels), at most ``max_classes`` of them, nearest the
roots first. The e-graph is the one the optimizer extracts from (same like-term pre-pass,
encoding, rules and limits); the choice is the optimizer's: of extraction's best few programs the
one whose plan is priced lowest, the chosen node of each class on its path filled, the classes it
passes through outlined.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from html import escape
from typing import Any

from ..egraph.encode import Encoded, encode_program
from ..egraph.extract import (
    Extraction,
    Extractor,
    cpu_clock,
    decode_index_classes,
    node_children,
)
from ..egraph.optimize import Limits, finish
from ..egraph.path import chosen_nodes
from ..egraph.rules import load_rules
from ..egraph.saturate import Snapshot, saturate
from ..ir.like_terms import merge_like_terms
from ..ir.outline import outline
from ..ir.program import Program

__all__ = ["EGraphPicture", "egraph_picture", "egraph_svg"]

_OPS = {"Add": "+", "Mul": "×", "Div": "÷"}
_CMP = {"Eq": "==", "Ne": "!=", "Ge": ">=", "Gt": ">"}
_GEN_NAMES = ("i", "j", "k", "l", "m", "p", "q", "r")

CHAR_W, NODE_H, PAD, GAP_X, GAP_Y = 7.0, 22.0, 6.0, 18.0, 46.0


@dataclass(frozen=True)
class EGraphPicture:
    """What is drawn: classes by layer, node labels, edges, the chosen nodes and the roots."""

    layers: list[list[int]]
    nodes: dict[int, list[tuple[int, str]]]
    """class -> [(node index, label)]"""
    edges: list[tuple[int, int]]
    """(node index, child class)"""
    chosen: set[int]
    roots: dict[int, str]
    """root class -> statement or output name"""
    total_classes: int
    total_nodes: int


def _names(enc: Encoded) -> dict[int, str]:
    names = dict(enc.ids.size_names)
    for i, role in enc.ids.role.items():
        if role[0] == "gen":
            pos = int(role[1])
            names[i] = _GEN_NAMES[pos] if pos < len(_GEN_NAMES) else f"g{pos}"
        else:
            names[i] = f"s{role[1]}"
    return names


def _lin_text(lv: tuple, names: Mapping[int, str]) -> str:
    terms, const = lv
    parts: list[str] = []
    for i, c in terms:
        n = names.get(i, f"v{i}")
        c = Fraction(c)
        coef = "" if c == 1 else "-" if c == -1 else f"{c}"
        parts.append(f"{coef}{n}")
    if const or not parts:
        parts.append(str(Fraction(const)))
    text = " + ".join(parts)
    return text.replace("+ -", "- ")


def _label(op: str, args: tuple, lin: dict, il: dict, pred: dict,
           names: Mapping[int, str]) -> str:
    def lin_of(c: int) -> str:
        return _lin_text(lin[c], names) if c in lin else "?"

    def pred_of(c: int) -> str:
        p = pred.get(c)
        if p is None:
            return "?"
        if p[0] == "Rel":
            return f"{p[1]}[{', '.join(_lin_text(v, names) for v in p[2])}]"
        return f"{_lin_text(p[1], names)} {_CMP[p[0]]} 0"

    if op in _OPS:
        return _OPS[op]
    if op == "Num":
        v = float(args[0])
        return str(int(v)) if v.is_integer() else f"{v:g}"
    if op == "Acc":
        idx = il.get(args[1])
        return args[0] if not idx else f"{args[0]}[{', '.join(_lin_text(v, names) for v in idx)}]"
    if op == "Br":
        return f"[{pred_of(args[0])}]"
    if op == "Pow":
        return f"^{float(args[1]):g}"
    if op in ("Call1", "Call2"):
        return str(args[0])
    if op == "Sum":
        return f"Σ {names.get(args[0], args[0])} < {lin_of(args[1])}"
    if op == "Max":
        return f"max {names.get(args[0], args[0])} < {lin_of(args[1])}"
    if op == "Scan":  # running sums: the bracket sum over lo <= j < hi
        return f"scan {lin_of(args[2])} <= {names.get(args[0], args[0])} < {lin_of(args[3])}"
    return op


def egraph_picture(
    prog: Program, rules: Any = None, sizes: Mapping[str, int] | None = None,
    limits: Limits | None = None, max_classes: int = 60,
) -> EGraphPicture:
    """Saturate ``prog`` as the optimizer does and lay out the e-graph around its roots."""
    limits = Limits() if limits is None else limits
    # the optimizer's like-term pre-pass comes first: its e-graph holds the merged program
    enc = encode_program(outline(merge_like_terms(prog)))
    files = load_rules(rules)
    run = saturate(enc.text, files, limits.iterations, limits.nodes, limits.seconds)
    snap = run.snapshot
    roots, chosen = _choice(snap, enc, sizes, limits.seconds)
    return _layout(snap, enc, roots, chosen, max_classes)


def _choice(snap: Snapshot, enc: Encoded, sizes: Mapping[str, int] | None, seconds: float
            ) -> tuple[dict[int, str], set[int]]:
    """Root classes (by statement / output) and the extractor's chosen nodes under them."""
    roots: dict[int, str] = {}
    for s in enc.program.statements:
        c = snap.lets.get(enc.body_let[s.name])
        if c is not None:
            roots.setdefault(c, s.name)
    for k, let in enumerate(enc.output_let):
        c = snap.lets.get(let) if let is not None else None
        if c is not None:
            roots.setdefault(c, "return" if len(enc.output_let) == 1 else f"return[{k}]")
    chosen: set[int] = set()
    try:
        # (the extractor's deadline is on its own clock: this thread's CPU time)
        ex = Extractor(snap, enc, sizes, cpu_clock() + seconds)
        found = ex.price(_statements_kept(ex.best_program(), sizes))
    except Exception:  # the picture is still useful without the highlight
        return roots, chosen
    if found is None:
        return roots, chosen
    return roots, chosen_nodes(snap, found[1].walks(), node_children)


def _statements_kept(best: Extraction, sizes: Mapping[str, int] | None) -> set[str]:
    """The statements of the program the optimizer keeps: of extraction's best few, the one
    whose plan is priced lowest once tidied as the optimizer tidies them."""
    candidates = [best.program, *best.alternatives]
    k, _ = finish(candidates, sizes)
    return {s.name for s in candidates[k].statements}


def _layout(snap: Snapshot, enc: Encoded, roots: dict[int, str], chosen: set[int],
            max_classes: int) -> EGraphPicture:
    lin, il, pred = decode_index_classes(snap)
    names = _names(enc)
    by_class: dict[int, list[int]] = {}
    for k, (_, c, _) in enumerate(snap.nodes):
        if snap.sort[c] == "E" and snap.nodes[k][0] != "Subst":
            by_class.setdefault(c, []).append(k)
    depth: dict[int, int] = {}
    order: list[int] = []
    frontier = [c for c in roots if c in by_class]
    for c in frontier:
        depth[c] = 0
    while frontier and len(order) < max_classes:
        nxt: list[int] = []
        for c in frontier:
            if len(order) >= max_classes:
                break
            order.append(c)
            for k in by_class.get(c, ()):
                op, _, args = snap.nodes[k]
                for child in node_children(op, args):
                    if child not in depth and child in by_class:
                        depth[child] = depth[c] + 1
                        nxt.append(child)
        frontier = nxt
    shown = set(order)
    layers: dict[int, list[int]] = {}
    for c in order:
        layers.setdefault(depth[c], []).append(c)
    nodes = {
        c: [(k, _label(snap.nodes[k][0], snap.nodes[k][2], lin, il, pred, names))
            for k in by_class[c]]
        for c in order
    }
    edges = [
        (k, child) for c in order for k in by_class[c]
        for child in node_children(snap.nodes[k][0], snap.nodes[k][2]) if child in shown
    ]
    e_classes = {c for c, s in snap.sort.items() if s == "E"}
    return EGraphPicture([layers[d] for d in sorted(layers)], nodes, edges, chosen,
                         {c: n for c, n in roots.items() if c in shown}, len(e_classes),
                         sum(len(v) for v in by_class.values()))


def _node_w(label: str) -> float:
    return max(24.0, CHAR_W * len(label) + 12)


def render_svg(pic: EGraphPicture, title: str = "") -> str:
    """The picture as an SVG document (inline styles: embeddable in HTML as it is)."""
    class_box: dict[int, tuple[float, float, float, float]] = {}
    node_box: dict[int, tuple[float, float, float, float]] = {}
    y = 30.0 if title else 10.0
    width = 0.0
    for layer in pic.layers:
        x = 10.0
        for c in layer:
            inner = sum(_node_w(lbl) for _, lbl in pic.nodes[c]) + PAD * (len(pic.nodes[c]) + 1)
            w, h = max(inner, 40.0), NODE_H + 2 * PAD + 14
            class_box[c] = (x, y, w, h)
            nx = x + PAD
            for k, lbl in pic.nodes[c]:
                nw = _node_w(lbl)
                node_box[k] = (nx, y + PAD + 14, nw, NODE_H)
                nx += nw + PAD
            x += w + GAP_X
        width = max(width, x)
        y += NODE_H + 2 * PAD + 14 + GAP_Y
    height = y
    chosen_classes = {c for c in class_box for k, _ in pic.nodes[c] if k in pic.chosen}
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="monospace" font-size="12">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
        'fill="#555"/></marker></defs>',
    ]
    if title:
        out.append(f'<text x="10" y="18" font-size="13" font-weight="bold">{escape(title)}</text>')
    for k, child in pic.edges:
        if k not in node_box or child not in class_box:
            continue
        nx, ny, nw, nh = node_box[k]
        cx, cy, cw, _ = class_box[child]
        x1, y1 = nx + nw / 2, ny + nh
        x2, y2 = cx + cw / 2, cy
        hot = k in pic.chosen
        color, sw = ("#d9480f", 2.0) if hot else ("#999", 1.0)
        if y2 > y1:
            d = f"M {x1:.1f} {y1:.1f} C {x1:.1f} {y1 + 20:.1f} {x2:.1f} {y2 - 20:.1f} " \
                f"{x2:.1f} {y2:.1f}"
        else:  # an edge back up (a cycle in the e-graph): loop around the side
            side = max(x1, x2) + 40
            d = f"M {x1:.1f} {y1:.1f} C {side:.1f} {y1 + 40:.1f} {side:.1f} {y2 - 40:.1f} " \
                f"{x2:.1f} {y2:.1f}"
        out.append(f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{sw}" '
                   'marker-end="url(#arrow)"/>')
    for c, (x, y0, w, h) in class_box.items():
        hot = c in chosen_classes
        out.append(
            f'<rect x="{x:.1f}" y="{y0:.1f}" width="{w:.1f}" height="{h:.1f}" rx="8" '
            f'fill="#f8f9fa" stroke="{"#d9480f" if hot else "#adb5bd"}" '
            f'stroke-width="{2 if hot else 1}" stroke-dasharray="{"" if hot else "4 3"}"/>'
        )
        tag = f"e{c}" + (f"  {pic.roots[c]}" if c in pic.roots else "")
        out.append(f'<text x="{x + 6:.1f}" y="{y0 + 13:.1f}" fill="#495057" font-size="10">'
                   f'{escape(tag)}</text>')
        for k, lbl in pic.nodes[c]:
            nx, ny, nw, nh = node_box[k]
            picked = k in pic.chosen
            out.append(
                f'<rect x="{nx:.1f}" y="{ny:.1f}" width="{nw:.1f}" height="{nh:.1f}" rx="4" '
                f'fill="{"#ffd8a8" if picked else "#ffffff"}" '
                f'stroke="{"#d9480f" if picked else "#868e96"}"/>'
            )
            out.append(f'<text x="{nx + nw / 2:.1f}" y="{ny + 15:.1f}" text-anchor="middle">'
                       f'{escape(lbl)}</text>')
    shown = len(class_box)
    note = f"{shown} of {pic.total_classes} expression classes shown" + (
        " (nearest the roots)" if shown < pic.total_classes else "")
    out.append(f'<text x="10" y="{height - 6:.0f}" fill="#868e96" font-size="10">'
               f'{escape(note)}; filled: the extracted choice</text>')
    out.append("</svg>")
    return "\n".join(out)


def egraph_svg(prog: Program, rules: Sequence[str] | str | None = None,
               sizes: Mapping[str, int] | None = None, limits: Limits | None = None,
               max_classes: int = 60) -> str:
    """The e-graph of ``prog`` after saturation as SVG, the extracted choice highlighted."""
    pic = egraph_picture(prog, rules, sizes, limits, max_classes)
    return render_svg(pic, f"e-graph of {prog.name}")
