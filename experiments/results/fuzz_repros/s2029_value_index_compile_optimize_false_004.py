# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: value at compile(optimize=False) (index program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2029`; minimized in 4 steps (44 candidates run).
at (): np.float64(0.0) vs np.float64(4.0)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: [N, N]):
    return Sum[i:N](Sum[j:N, k:N](A[j, i]))
'''
CASE = Case('index', SOURCE, shapes={'A': ('N', 'N')}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'A': array([[1e+154, -1e+154], [1.0, 1.0]], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '4.0'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
