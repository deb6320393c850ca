# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2031` (program 1396); minimized in 9 steps (51 candidates run).
output 0: at (0, 0): np.float64(nan) vs np.float64(0.0) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: [N, N]):
    t0[i:N, j:N] = A[i, N - 1]
    t1[i:3, j:N] = i < j
    return (log(0.0) + t0[N - 1, N - 1] * t1[3, N - 1]) ** 2
'''
CASE = Case('index', SOURCE, shapes={'A': ('N', 'N')}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A': array([[1.9200925144874044]], dtype=float64),
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([[nan]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([[0.]])'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
