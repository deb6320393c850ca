# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: fd at gradient (interpreter) (numpy program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 2 steps (38 candidates run).
d/dA[1, 0]: nan vs finite differences 0.0
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A):
    s1 = 0.0
    for _ in range(2):
        A = np.full((A.shape[0], A[1:].shape[0]), -1.5) @ A[1:]
    return np.einsum('i,i->', np.sqrt(A[-1]), A[0] - A[-1])
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('M', 'N')}, sizes={'N': 1, 'M': 2},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A': array([[1.6673230445836849], [-0.9875535311518222]], dtype=float64),
}
STAGE = 'gradient (interpreter)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'nan'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
