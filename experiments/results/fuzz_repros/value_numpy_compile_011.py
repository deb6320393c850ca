# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: value at compile (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 9 steps (43 candidates run).
at (): np.float64(2.781085574346206) vs np.float64(0.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(x, B):
    t1 = np.full(x.shape, 2.0)
    s2 = 0.0
    for i in range(len(B)):
        s2 = s2 + (1.0 + np.einsum('i,i->', x[::2], x[::2]))
    return np.where(np.trace(B) <= 1.0, s2, np.trace(B))
'''
CASE = Case('numpy', SOURCE, shapes={'x': ('N',), 'B': ('N', 'N')}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'x': array([0.6249342262775364, -1e+300], dtype=float64),
    'B': array([[-1e+300, 0.987168479115347], [0.0, -1e+300]], dtype=float64),
}
STAGE = 'compile'
EXPECTED = '2.781085574346206'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '0.0'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
