# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2028`; minimized in 6 steps (61 candidates run).
output 0: at (): np.float64(0.0) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [], R: rel[N]):
    return Sum[i:N, j:N]((j != N and i >= N) * x) ** 0.5
'''
CASE = Case('index', SOURCE, shapes={'x': (), 'R': ('N',)}, sizes={'N': 1},
            relations=frozenset(['R']))
KIND = 'finite'
INPUTS = {
    'x': 1.0,
    'R': array([True], dtype=bool),
}
STAGE = 'grad'
EXPECTED = '(0.0)'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '(nan)'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
