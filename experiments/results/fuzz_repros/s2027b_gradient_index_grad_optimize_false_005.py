# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: gradient at grad(optimize=False) (index program, nonfinite inputs).

Found by `python -m eqsat_ad.fuzz --n 3000 --seed 2027`; minimized in 6 steps (32 candidates run).
output 0: at (0, 0): np.float64(0.0) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: [N, N], B: []):
    return (Sum[i:N]((i != 0) * A[i / 2, i]) * ((N >= 1) + B)) ** 2
'''
CASE = Case('index', SOURCE, shapes={'A': ('N', 'N'), 'B': ()}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'nonfinite'
INPUTS = {
    'A': array([[-1.3399613873794758, inf], [-1.8888178700496088, -1.6628519758119287]], dtype=float64),
    'B': -inf,
}
STAGE = 'grad(optimize=False)'
EXPECTED = '([[0., 0.], [0., 0.]], nan)'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '([[nan, 0.], [ 0., 0.]], nan)'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
