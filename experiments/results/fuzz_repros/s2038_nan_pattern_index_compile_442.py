# ruff: noqa: E501 - generated: programs and inputs are written on one line each
"""eqsat_ad fuzzer reproducer: nan-pattern at compile (index program, extreme inputs).

Found by `python -m eqsat_ad.fuzz --n 5000 --seed 2038`; minimized in 6 steps (88 candidates run).
at (): np.float64(1e-154) vs np.float64(inf) (+inf pattern differs)
"""

from numpy import array, float64, inf, nan, zeros  # noqa: F401 - the inputs use them

from eqsat_ad.fuzz import Case, check_case

SOURCE = '''\
def f(x: [N]):
    t0[i:2] = x[i / 2]
    t1[i:N] = t0[i]
    return 1.0 / Sum[i:N](x[i] - t1[i])
'''
CASE = Case('index', SOURCE, shapes={'x': ('N',)}, sizes={'N': 2},
            relations=frozenset([]))
KIND = 'extreme'
INPUTS = {
    'x': array([-1e+300, 1e+154], dtype=float64),
}
STAGE = 'compile'
EXPECTED = '1e-154'  # the reference (interpreter, or NumPy for a "numpy" finding)
ACTUAL = 'inf'

if __name__ == "__main__":
    print(SOURCE)
    for finding in check_case(CASE, {KIND: INPUTS})[KIND]:
        print(finding.outcome, finding.stage, finding.detail, sep=" | ")
