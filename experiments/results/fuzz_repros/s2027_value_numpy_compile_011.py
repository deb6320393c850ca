# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: value at compile (numpy program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 2000 --seed 2027`; minimized in 3 steps (15 candidates run).
at (): np.float64(-0.3302086019048746) vs np.float64(0.9721278530541735)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
import numpy as np

def f(A, B):
    s1 = 0.0
    for i in range(len(A)):
        s1 += A[-1] @ np.dot(np.full((A[i].shape[0], A[1:].shape[0]), 1.0), np.clip(np.full((A[1:].shape[0],), 0.5), -1.0, 1.0))
    return np.sin(np.dot(np.trace(A) * np.full((A[1:].shape[0],), 0.001), A[1:] * B[:-1] @ np.diag(A)))
'''
CASE = Case('numpy', SOURCE, shapes={'A': ('N', 'N'), 'B': ('N', 'N')}, sizes={'N': 4},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'A': array([[1.9601505161397093, nan, 0.9736076366723492, -0.9087480393269716],
     [1.4386550086238405, 1.7249037482919176, 1e+154, -1e+154],
     [-0.6170490493290006, 1.6779377536217115, 5e-324, -1.7663015400251652],
     [1.9948825561914032, 5e-324, 0.6579468891283907, 0.0]], dtype=float64),
    'B': array([[-0.4348640502677158, -0.4708273351294172, -1.9146400318261354, 0.4632027447077187],
     [-1.615300763883017, 5e-324, -1.3163591517339175, 1e+300],
     [1e+154, -0.5892924830433203, -0.33057475684796517, -0.9380205912961765],
     [-0.9661742313975865, -1.987932710346537, 1.374765562786568, nan]], dtype=float64),
}
STAGE = 'compile'
EXPECTED = '-0.3302086019048746'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '0.9721278530541735'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
