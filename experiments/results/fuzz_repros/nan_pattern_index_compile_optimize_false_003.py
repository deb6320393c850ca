# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile(optimize=False) (index program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 6 steps (39 candidates run).
at (): np.float64(inf) vs np.float64(-inf) (+inf pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(w: []):
    return Sum[j:1](w) ** (-1)
'''
CASE = Case('index', SOURCE, shapes={'w': ()}, sizes={},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'w': -0.0,
}
STAGE = 'compile(optimize=False)'
EXPECTED = 'inf'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = '-inf'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
