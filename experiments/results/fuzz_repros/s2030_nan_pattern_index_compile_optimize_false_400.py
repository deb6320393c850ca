# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile(optimize=False) (index program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2030` (program 400); minimized in 11 steps (71 candidates run).
at (): np.float64(0.0) vs np.float64(nan) (nan pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A1: [N]):
    t0[i:N] = 0.0
    return Sum[i:N](t0[i] / Sum[j:2](A1[j]))
'''
CASE = Case('index', SOURCE, shapes={'A1': ('N',)}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'A1': array([5e-324], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = '0.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'nan'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
