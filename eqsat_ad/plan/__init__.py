"""The plan: what the backend runs for a program, and the price of exactly that.

``lower``: builds it, statement by statement, each kernel with the NumPy line that runs it
(:func:`eqsat_ad.plan.lower.lower_program`; the backends load and run what it built);
``normal``: the normal form of a statement (terms: coefficient, summed indices, brackets,
factors); ``ranges``: equalities solved, index ranges narrowed (what a term writes where);
``windows``: windows, bands and scans (summed indices confined to ranges);
``spread``: sums of reads distributed over their contractions; ``split``: a small axis run as a
loop; ``order``: the contraction order (one search, priced and run); ``kernels``: the kernels
the generated code calls, with iteration spaces and allocations; ``price``: a program's price =
the sum over the kernels of its lowering; ``memory``: what the plan holds at once; ``poly``: the
size polynomials prices are written in; ``same_code``: whether two plans run the same code.
"""

from .kernels import Kernel, Plan
from .order import EXACT_LIMIT, OPTIMAL_LIMIT, ContractionPath, contraction_path

__all__ = [
    "EXACT_LIMIT", "OPTIMAL_LIMIT", "ContractionPath", "Kernel", "Plan", "contraction_path",
]
