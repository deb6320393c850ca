# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2035`; minimized in 8 steps (64 candidates run).
at (): np.float64(inf) vs np.float64(-inf) (+inf pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: [], R: rel[N, 2]):
    return A / -Sum[i:N](R[i, 2])
'''
CASE = Case('index', SOURCE, shapes={'A': (), 'R': ('N', 2)}, sizes={'N': 1},
            relations=frozenset(['R']))
KIND = 'finite'
INPUTS = {
    'A': 1.0,
    'R': array([[True, False]], dtype=bool),
}
STAGE = 'compile'
EXPECTED = 'inf'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '-inf'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
