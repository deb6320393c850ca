# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: internal at grad(optimize=False) (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 13 steps (61 candidates run).
ZeroDivisionError: division by zero [<eqsat_ad generated f_grad>:6]
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x):
    return x[0] / 0.0
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',)}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([1.0], dtype=float64),
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([inf])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'ZeroDivisionError: division by zero [<eqsat_ad generated f_grad>:6]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
