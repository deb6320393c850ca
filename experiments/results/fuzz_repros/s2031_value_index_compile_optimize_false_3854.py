# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: value at compile(optimize=False) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2031`; minimized in 8 steps (30 candidates run).
at (): np.float64(0.0) vs np.float64(1.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: [N, N]):
    return Sum[i:N](ne(0.0, (i > i) * 0.001))
'''
CASE = Case('index', SOURCE, shapes={'A': ('N', 'N')}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A': array([[1.03106004612019]], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '1.0'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
