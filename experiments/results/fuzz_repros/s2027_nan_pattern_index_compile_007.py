# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 2000 --seed 2027`; minimized in 3 steps (32 candidates run).
at (): np.float64(nan) vs np.float64(0.0) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: [M, M], A1: [M, N], w: []):
    t0[i:N] = 1.0
    t1[i:3, j:N] = softplus(A1[M - 1 - j, j + i] ** 0.5)
    return t0[N] * t1[1, 1]
'''
CASE = Case('index', SOURCE, shapes={'A': ('M', 'M'), 'A1': ('M', 'N'), 'w': ()}, sizes={'N': 3, 'M': 2},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A': array([[-0.573963833748323, 1.9188394915991998], [0.4574814061764284, 0.45661000688322684]], dtype=float64),
    'A1': array([[1.0628778190223802, 1.0917034161766572, -0.46595417646277415],
     [1.2153919029296236, -1.4749383268054734, 1.7196747759662794]], dtype=float64),
    'w': -1.015974611434773,
}
STAGE = 'compile'
EXPECTED = 'nan'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '0.0'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
