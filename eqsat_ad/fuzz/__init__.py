"""A fuzzer of the whole pipeline, as a project tool: ``make fuzz`` or ``python -m eqsat_ad.fuzz``.

:mod:`.index_gen` and :mod:`.numpy_gen` write random programs as source text; :mod:`.check`
runs one through the interpreter, ``optimize=False`` and optimized compiled code and gradients
and classifies what differs (:mod:`.compare`); :mod:`.runner` does that in a killable worker
under a time limit; :mod:`.reduce` minimizes a failure; :mod:`.report` prints the table and
writes reproducers; :mod:`.fuzz` is the loop.
"""

from .case import INPUT_KINDS, Case, draw_inputs
from .check import OUTCOMES, Finding, check_case, outcome_of
from .fuzz import GENERATORS, FuzzResult, fuzz, make_case
from .reduce import Reduced, reduce_case
from .runner import Runner

__all__ = ["GENERATORS", "INPUT_KINDS", "OUTCOMES", "Case", "Finding", "FuzzResult", "Reduced",
           "Runner", "check_case", "draw_inputs", "fuzz", "make_case", "outcome_of",
           "reduce_case"]
