# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: internal at grad(optimize=False) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 14 steps (69 candidates run).
ZeroDivisionError: float division by zero [<eqsat_ad generated f_grad>:5]
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: []):
    return (A - (1 > 2) / (1 == 2)) ** 2
'''
CASE = Case('index', SOURCE, shapes={'A': ()}, sizes={},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A': 1.0,
}
STAGE = 'grad(optimize=False)'
EXPECTED = '(nan)'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'ZeroDivisionError: float division by zero [<eqsat_ad generated f_grad>:5]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
