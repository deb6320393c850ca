# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2029`; minimized in 6 steps (61 candidates run).
output 0: at (): np.float64(0.0) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(R: rel[2, N], w: []):
    return log(R[2, N] * tanh(w))
'''
CASE = Case('index', SOURCE, shapes={'R': (2, 'N'), 'w': ()}, sizes={'N': 1},
            relations=frozenset(['R']))
KIND = 'finite'
INPUTS = {
    'R': array([[True], [True]], dtype=bool),
    'w': 1.0,
}
STAGE = 'grad(optimize=False)'
EXPECTED = '(0.0)'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '(nan)'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
