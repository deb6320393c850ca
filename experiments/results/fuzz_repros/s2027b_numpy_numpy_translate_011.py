# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: numpy at translate (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 3000 --seed 2027`; minimized in 12 steps (37 candidates run).
at (0,): np.float64(0.0) vs np.float64(1.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x):
    return np.sign(np.sqrt(x)) > x
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',)}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([-1.2476853677845947], dtype=float64),
}
STAGE = 'translate'
EXPECTED = '[False]'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '[1.]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
