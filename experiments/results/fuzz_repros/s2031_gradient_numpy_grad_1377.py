# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2031` (program 1377); minimized in 3 steps (39 candidates run).
output 0: at (0, 0): np.float64(0.5) vs np.float64(1.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A):
    t2 = np.max(A[:-1] + 100.0)
    return t2
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('M', 'N')}, sizes={'N': 2, 'M': 2},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'A': array([[1e-300, 5e-324], [1.0, 1.0]], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([[0.5, 0.5], [0. , 0. ]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([[1., 0.], [0., 0.]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
