# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: internal at compile(optimize=False) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 6 steps (32 candidates run).
TypeError: float() argument must be a string or a real number, not 'complex' [<eqsat_ad generated f>:6]
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A1: [2, N]):
    return (-1.5) ** 0.5
'''
CASE = Case('index', SOURCE, shapes={'A1': (2, 'N')}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A1': array([[1.0], [1.0]], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = 'nan'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = "TypeError: float() argument must be a string or a real number, not 'complex' [<eqsat_ad generated f>:6]"

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
