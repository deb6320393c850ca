# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: internal at compile(optimize=False) (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 11 steps (54 candidates run).
ZeroDivisionError: division by zero [<eqsat_ad generated f>:5]
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x, z):
    t1 = 100.0 / np.full(x.shape, 0.0)
    return z
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',), 'z': ()}, sizes={'N': 0},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': zeros((0,), dtype=float64),
    'z': 1.0,
}
STAGE = 'compile(optimize=False)'
EXPECTED = '1.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'ZeroDivisionError: division by zero [<eqsat_ad generated f>:5]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
