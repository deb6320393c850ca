# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2035`; minimized in 4 steps (34 candidates run).
output 0: at (0, 0): np.float64(nan) vs np.float64(0.0) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: [N, M]):
    t0[i:M, j:2] = (eq(0.0, A[2 * j, i]) - A[N - 1, M - 1 - i] * A[i, 2 * j]) ** (-2)
    return t0[M, 0]
'''
CASE = Case('index', SOURCE, shapes={'A': ('N', 'M')}, sizes={'N': 1, 'M': 2},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A': array([[1.608899286559834, 1.4435911269647925]], dtype=float64),
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([[nan, 0.]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([[0., 0.]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
