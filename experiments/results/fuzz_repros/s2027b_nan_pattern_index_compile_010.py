# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 3000 --seed 2027`; minimized in 9 steps (47 candidates run).
at (): np.float64(nan) vs np.float64(0.0) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: [N, N]):
    t1[i:N] = 1.0
    return t1[N] / 0.0
'''
CASE = Case('index', SOURCE, shapes={'A': ('N', 'N')}, sizes={'N': 0},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A': zeros((0, 0), dtype=float64),
}
STAGE = 'compile'
EXPECTED = 'nan'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '0.0'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
