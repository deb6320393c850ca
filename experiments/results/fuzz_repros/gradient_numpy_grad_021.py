# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (numpy program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 3 steps (35 candidates run).
output 0: at (2, 2): np.float64(0.0) vs np.float64(1.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A):
    t2 = np.diag(A) / np.diag(A)
    return np.trace(A) * t2[-1] + np.min(t2, axis=0)
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('N', 'N')}, sizes={'N': 3},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'A': array([[-1.027872845012703, 1.8674800784273755, -1.2899836434262686],
     [-1e+154, 1e+154, -0.8004631408677423],
     [-1e-300, 1.0670232605401055, -1.5306146325055052]], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([[1., 0., 0.], [0., 1., 0.], [0., 0., 0.]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([[1., 0., 0.], [0., 1., 0.], [0., 0., 1.]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
