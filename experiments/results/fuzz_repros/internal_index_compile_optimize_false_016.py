# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: internal at compile(optimize=False) (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 9 steps (53 candidates run).
UFuncTypeError: Cannot cast ufunc 'add' output from dtype('complex128') to dtype('float64') with casting rule 'same_kind' [<eqsat_ad generated f>:7]
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [N]):
    t1[i:1, j:N] = (j >= 1) * (-2) ** 2.5
    return N <= 1
'''
CASE = Case('index', SOURCE, shapes={'x': ('N',)}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'x': array([1.0], dtype=float64),
}
STAGE = 'compile(optimize=False)'
EXPECTED = '1.0'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = "UFuncTypeError: Cannot cast ufunc 'add' output from dtype('complex128') to dtype('float64') with casting rule 'same_kind' [<eqsat_ad generated f>:7]"

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
