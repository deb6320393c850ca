# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile(optimize=False) (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2030` (program 349); minimized in 4 steps (19 candidates run).
at (): np.float64(-1.3607347575667218e+308) vs np.float64(-inf) (-inf pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(C):
    t1 = np.where(C[:, 0] <= np.mean(C, axis=-1), np.sum(C.T, axis=0), np.clip(C[:, 0], -1.0, 1.0))
    return np.where(C[:-1] >= C[:-1], C[:-1], C[:-1]).sum() * np.einsum('i,i->', C[:, 0] * t1, t1)
'''
CASE = Case('numpy', SOURCE, shapes={'C': ('N', 'M')}, sizes={'N': 4, 'M': 3},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'C': array([[1.9337765618223026, 1.8060665620472367, -1e+154],
     [0.991929996311697, 1e+154, -1.168498856455045],
     [-1.9738758508043606, 1.0160982344671756, -1.3718052308392277],
     [1.9323687917198678, -0.8968239644531852, 1.0107374490865497]], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = '-1.3607347575667218e+308'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '-inf'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
