# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: internal at grad (index program, finite inputs).

Found by `python -m eqsat_ad.fuzz --n 4000 --seed 2026`; minimized in 7 steps (24 candidates run).
IndexError: index 2 is out of bounds for axis 0 with size 1 [<eqsat_ad generated f_grad>:12]
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(A: [N, 3]):
    t0[i:N] = Sum[j:3, k:N](log(A[j + k, i / 2]))
    t1[i:N, j:N] = Sum[k:3](max(A[j + k, i], t0[2 * j]))
    return t1[1, 1]
'''
CASE = Case('index', SOURCE, shapes={'A': ('N', 3)}, sizes={'N': 1},
            relations=frozenset([]))
KIND = 'finite'
INPUTS = {
    'A': array([[1.7551071080149185, -0.7193260693165391, 0.9400176851125901]], dtype=float64),
}
STAGE = 'grad'
EXPECTED = '([[0., 0., 0.]])'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'IndexError: index 2 is out of bounds for axis 0 with size 1 [<eqsat_ad generated f_grad>:12]'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
