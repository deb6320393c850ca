"""HTML views for notebooks and files: the cost report, and an explanation page (report, rewrite
chains, e-graph picture) as one self-contained document (inline CSS and SVG, no scripts).

Built from ``report.to_dict()`` only, so the view follows the report whatever computes it.
"""

from __future__ import annotations

from html import escape
from typing import Any

__all__ = ["explanation_html", "report_html"]

_CSS = """
.eqsat { font-family: system-ui, sans-serif; font-size: 14px; }
.eqsat table { border-collapse: collapse; margin: 6px 0 12px 0; }
.eqsat th, .eqsat td { border-bottom: 1px solid #dee2e6; padding: 3px 10px; text-align: left;
  vertical-align: top; }
.eqsat th { background: #f1f3f5; }
.eqsat code, .eqsat pre { font-family: ui-monospace, monospace; font-size: 12.5px; }
.eqsat pre { background: #f8f9fa; padding: 8px; overflow-x: auto; }
.eqsat .step { color: #868e96; font-size: 12px; }
.eqsat .better { color: #2b8a3e; font-weight: bold; }
"""


def _num(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1e6 else f"{v:.3e}"
    return escape(str(v))


def _statements(title: str, side: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{escape(r['big_o'])}</td><td>{_num(r['value'])}</td>"
        f"<td><code>{escape(r['cost'])}</code></td><td><code>{escape(r['statement'])}</code>"
        "</td></tr>"
        for r in side["statements"]
        # a returned variable costs nothing: left out, as str(report) leaves it out
        if not (r["kind"] == "output" and r["cost"] == "0")
    )
    return (f"<h4>{escape(title)}</h4><table><tr><th>scaling</th><th>at sizes</th>"
            f"<th>cost</th><th>statement</th></tr>{rows}</table>")


def report_html(report: Any) -> str:
    """A cost report (anything with ``to_dict()`` in the CostReport layout) as an HTML table."""
    d = report.to_dict() if hasattr(report, "to_dict") else dict(report)
    n, o, sat = d["naive"], d["optimized"], d["saturation"]
    sizes = ", ".join(f"{k}={v}" for k, v in d["sizes"].items()) or "none"
    if d.get("defaulted_sizes"):
        sizes += f" (defaulted: {', '.join(d['defaulted_sizes'])})"

    def largest(side: dict[str, Any]) -> str:
        lg = side.get("largest_intermediate")
        if not lg:
            return "none"
        return f"{escape(lg['elements'])} = {_num(lg['value'])} ({escape(lg['statement'])})"

    eager = d.get("eager") or {}

    def speed(x: Any) -> str:
        return f'<span class="better">{x:.4g}×</span>' if x else "n/a"  # as str(report)

    rows = [
        ("scaling", escape(eager.get("big_o", "")), escape(n["big_o"]), escape(o["big_o"])),
        ("cost", f"<code>{escape(eager.get('total', ''))}</code>",
         f"<code>{escape(n['total'])}</code>", f"<code>{escape(o['total'])}</code>"),
        ("cost at sizes", _num(eager.get("value", "")), _num(n["value"]), _num(o["value"])),
        ("largest intermediate", "", largest(n), largest(o)),
        ("speed-up of optimized", speed(d.get("eager_speedup")), speed(d.get("speedup")), "1×"),
    ]
    table = "".join(f"<tr><th>{k}</th><td>{e}</td><td>{a}</td><td>{b}</td></tr>"
                    for k, e, a, b in rows)
    why = "".join(f"<li><code>{escape(w)}</code></li>" for w in d.get("why", ()))
    return (
        f'<div class="eqsat"><style>{_CSS}</style>'
        f"<h3>Cost report</h3><p>sizes: {escape(sizes)}; prices of the plans the backend runs"
        + (", structured outputs" if d.get("structured") else "")
        + f"; predicted speed-up {speed(d.get('speedup'))}</p>"
        "<table><tr><th></th><th>eager AD</th><th>naive adjoint</th><th>optimized</th></tr>"
        f"{table}</table>"
        f"<p>e-graph: {sat['nodes']} nodes, {sat['classes']} classes, {sat['iterations']} "
        f"iterations, {sat['seconds']:.2f} s, stopped: {escape(sat['stop_reason'])}"
        + (f"; {escape(sat['note'])}" if sat.get("note") else "") + "</p>"
        + (f"<h4>why</h4><ul>{why}</ul>" if why else "")
        + _statements("naive program", n) + _statements("optimized program", o)
        + _backend(d.get("backend")) + "</div>"
    )


def _backend(b: dict[str, Any] | None) -> str:
    """The fusing backend's schedule and first-call compile time (``backend="numba"``)."""
    if not b:
        return ""
    rows = "".join(f"<tr><td><code>{escape(n)}</code></td><td>{escape(w)}</td>"
                   f"<td>{escape(b['why'].get(n, ''))}</td></tr>"
                   for n, w in b["placement"].items())
    spent = ", ".join(f"{escape(k)} {v:.2f} s" for k, v in b["compile_seconds"].items())
    return (f"<h4>backend {escape(b['name'])}</h4><table><tr><th>statement</th><th>runs as"
            f"</th><th>why</th></tr>{rows}</table><p>first call (load + compile or cache "
            f"load): {spent or 'not yet made'}</p>")


def explanation_html(expl: Any) -> str:
    """A whole page for an :class:`~eqsat_ad.why.Explanation`."""
    from ..ir.printer import print_program

    chains = []
    for name, links in expl.shown_chains().items():
        items = []
        for k, link in enumerate(links):
            fired = ""
            if k:
                fired = f'<div class="step">↓ {escape(expl.fired_text(link.fired))}</div>'
            items.append(f"{fired}<div><span class=\"step\">[{escape(link.label)}] cost "
                         f"<code>{escape(link.cost)}</code> = {_num(link.value)}</span>"
                         f"<pre>{escape(link.text)}</pre></div>")
        chains.append(f"<h4><code>{escape(name)}</code></h4>{''.join(items)}")
    why = "".join(f"<li><code>{escape(w)}</code></li>" for w in expl.why_lines())
    try:
        picture = expl.svg()
    except Exception as exc:  # a picture that cannot be drawn must not lose the page
        picture = f"<p>(no e-graph picture: {escape(str(exc))})</p>"
    title = f"eqsat_ad: why {expl.naive.name} got cheaper"
    return (
        f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{escape(title)}</title>"
        f"<style>{_CSS}</style></head><body class=\"eqsat\"><h2>{escape(title)}</h2>"
        f"<h3>Why</h3><ul>{why or '<li>no statement changed</li>'}</ul>"
        f"<h3>Extracted program</h3><pre>{escape(print_program(expl.final.program))}</pre>"
        f"<h3>Rewrite chains</h3>{''.join(chains)}"
        f"<h3>E-graph</h3>{picture}"
        f"{report_html(expl.final_report)}"
        f"<h3>Naive program</h3><pre>{escape(print_program(expl.naive))}</pre>"
        "</body></html>"
    )
