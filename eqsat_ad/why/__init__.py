"""Seeing the optimizer's reasoning: rewrite chains, e-graph pictures, HTML reports.

``explain(prog_or_grad)`` replays saturation and returns an :class:`Explanation` (``print`` it
for the chains, ``.html()`` for a page, ``.svg()`` for the e-graph picture);
``report_html(report)`` renders a cost report for notebooks.
"""

from .chain import ChainLink, Explanation, Step, explain, explain_compiled
from .html import report_html
from .picture import egraph_svg

__all__ = ["ChainLink", "Explanation", "Step", "egraph_svg", "explain", "explain_compiled",
           "report_html"]
