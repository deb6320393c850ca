"""Built-in functions as scalar code in the generated loop nests, and the helpers a generated
module carries (:data:`HELPERS`, of which :func:`helpers_for` gives those its kernels call):
:mod:`.vmath`'s vectorizable exp, expm1, tanh and sigmoid, softplus, the step function, and
sign, maximum and minimum as NumPy's own."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

__all__ = ["HELPERS", "LOOP_FUNCTIONS", "helpers_for"]

# Built-in functions as scalar code (NumPy ufuncs keep float32 scalars float32 under Numba;
# exp, expm1, tanh and sigmoid are :mod:`.vmath`'s, which LLVM vectorizes where libm's is a call
# per element, computed in float64 and rounded to F).
LOOP_FUNCTIONS: dict[str, str] = {
    "exp": "_exp", "log": "np.log", "sin": "np.sin", "cos": "np.cos", "tanh": "_tanh",
    "sqrt": "np.sqrt", "abs": "np.abs", "log1p": "np.log1p", "expm1": "_expm1",
    "max": "_maximum", "min": "_minimum", "sign": "_sign", "logaddexp": "np.logaddexp",
    "stop_gradient": "", "sigmoid": "_sigmoid", "softplus": "_softplus", "step": "_step",
}
_VMATH = Path(__file__).with_name("vmath.py")
# Of two equal arguments (0.0 and -0.0) NumPy's maximum and minimum return one by their
# kernels, not by their documentation (``where(a >= b, a, b)``): the second on x86, whose
# max/min instructions return their second operand on a tie (fuzz seed 3017, case 211:
# ``max(0.0, -0.0) ** -1`` was inf in the loops and -inf in the interpreter). The helpers take
# the rule this NumPy follows (nan from either argument, as NumPy's).
_GT = ">" if np.signbit(np.maximum(np.zeros(16), -np.zeros(16))[0]) else ">="
_LT = "<" if np.signbit(np.minimum(np.zeros(16), -np.zeros(16))[0]) else "<="
# (the digest of vmath.py in the generated source: a kernel cached by Numba under its module's
# source is never one compiled against an older vmath)
HELPERS = f'''
from {__package__}.vmath import vexp, vexpm1, vsigmoid, vtanh  # vmath {
    hashlib.sha1(_VMATH.read_bytes()).hexdigest()[:16]}
''' + "".join(f'''

@nb.njit(cache=True, error_model="numpy", inline="always")
def _{fn}(x):
    return F(v{fn}(np.float64(x)))
''' for fn in ("exp", "expm1", "tanh", "sigmoid")) + f'''

@nb.njit(cache=True, error_model="numpy", inline="always")
def _softplus(x):
    return np.logaddexp(F(0), x)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _maximum(a, b):
    return a if (a {_GT} b or a != a) else b


@nb.njit(cache=True, error_model="numpy", inline="always")
def _minimum(a, b):
    return a if (a {_LT} b or a != a) else b


@nb.njit(cache=True, error_model="numpy", inline="always")
def _sign(x):
    # (np.sign: +0.0 at -0.0, where Numba's np.sign returns -0.0; nan at nan)
    if x > 0:
        return F(1)
    if x < 0:
        return F(-1)
    return x if x != x else F(0)


@nb.njit(cache=True, error_model="numpy", inline="always")
def _step(x):
    if x > 0:
        return F(1)
    if x < 0:
        return F(0)
    if x == 0:
        return F(0.5)
    return x
'''

_VMATH_IMPORT, _, _DEFINITIONS = HELPERS.strip("\n").partition("\n")
_DEFINED = {m.group(1): block for block in _DEFINITIONS.strip("\n").split("\n\n\n")
            if (m := re.search(r"^def (\w+)\(", block, re.M))}
_VMATH = re.findall(r"\bv\w+", _VMATH_IMPORT.split(" import ")[1].split("#")[0])


def helpers_for(code: str) -> tuple[list[str], str]:
    """The part of :data:`HELPERS` that ``code`` (a module's kernels) calls: the import of
    :mod:`.vmath` (with its digest) where a helper it names needs it, and those helpers'
    definitions, so that the generated source shows only what runs."""
    used = [n for n in _DEFINED if re.search(rf"(?<![\w.]){n}\(", code)]
    needs = any(re.search(rf"\b{v}\(", _DEFINED[n]) for n in used for v in _VMATH)
    imports = [_VMATH_IMPORT] if needs else []
    return imports, "\n\n\n".join(_DEFINED[n] for n in used)
