# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (numpy program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2028`; minimized in 5 steps (38 candidates run).
output 0: at (1, 0): np.float64(0.0) vs np.float64(-1.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(B):
    return np.sum(B[:1] - B[:-1]) * B.sum()
'''
CASE = Case('numpy', SOURCE, shapes={'B': ('N', 'N')}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'B': array([[-1e+154, 1.0], [1.0, 1e+300]], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([[0., 0.], [0., 0.]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([[ 0., 0.], [-1., -1.]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
