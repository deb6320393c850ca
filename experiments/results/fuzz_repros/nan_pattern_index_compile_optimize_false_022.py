# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile(optimize=False) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 9 steps (57 candidates run).
at (): np.float64(nan) vs np.float64(0.7825422900366437) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [N]):
    return sqrt((-1.5) ** 0.5)
'''
CASE = Case('index', SOURCE, shapes={'x': ('N',)}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([1.0], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = 'nan'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '0.7825422900366437'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
