# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: internal at compile(optimize=False) (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 14 steps (41 candidates run).
NameError: name '_t1' is not defined [<eqsat_ad generated f>:7]
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A):
    t3 = np.sign(A @ A)
    return t3
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('N', 'N')}, sizes={'N': 0},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A': zeros((0, 0), dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = '[]'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = "NameError: name '_t1' is not defined [<eqsat_ad generated f>:7]"

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
