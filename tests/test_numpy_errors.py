"""Errors of the NumPy front end: a ProgramError naming the construct and what to write instead,
located at the real file, line and column (the line marked ``# ERR`` below)."""

from __future__ import annotations

import importlib.util
import inspect
import os

import numpy as np
import pytest

import eqsat_ad as ea
from eqsat_ad.frontend.numpy_subset import MAX_UNROLL, translate
from eqsat_ad.ir.errors import EqsatError, ProgramError
from eqsat_ad.ir.interpreter import evaluate

W_GLOBAL = np.ones((3, 3))
CONFIG = {"scale": 2.0}


def expect(fn, shapes, message: str, marker: str | None, dtypes=None, where=None) -> ProgramError:
    """Translate ``fn``; assert the error text and that it points at ``marker`` on the ERR line
    of ``where`` (default: ``fn`` itself)."""
    with pytest.raises(ProgramError) as info:
        translate(fn, shapes, dtypes)
    err = info.value
    assert message in err.message, err.message
    if marker is not None:
        lines, first = inspect.getsourcelines(where or fn)
        (k,) = [n for n, text in enumerate(lines) if "# ERR" in text]
        assert err.loc is not None, f"no location for: {err.message}"
        assert os.path.samefile(err.loc.filename, __file__)
        assert err.loc.line == first + k
        assert err.loc.col == lines[k].index(marker)
        assert str(err).startswith(f"{err.loc.filename}:{err.loc.line}:{err.loc.col}: ")
    return err


# --- unsupported calls and attributes -----------------------------------------------------------


def unsupported_np(x):
    return np.cumsum(x)  # ERR


def unsupported_submodule(A):
    return np.linalg.inv(A)  # ERR


def unknown_method(x):
    return x.argsort()  # ERR


def unknown_attribute(x):
    return x.flags  # ERR


def global_object(x):
    return x * CONFIG["scale"]  # ERR


def unknown_module(x):
    return x * os.sep  # ERR


def global_array(x):
    return W_GLOBAL @ x  # ERR


def undefined_name(x):
    return x + undefined_thing  # ERR  # noqa: F821


def test_unsupported_numpy_function():
    expect(unsupported_np, {"x": (3,)}, "np.cumsum is not supported", "np.cumsum")
    expect(unsupported_submodule, {"A": (3, 3)}, "np.linalg is not supported", "np.linalg")


def test_attributes_on_unknown_objects():
    expect(unknown_method, {"x": (3,)}, ".argsort is not supported", "x.argsort")
    expect(unknown_attribute, {"x": (3,)}, ".flags is not supported", "x.flags")
    expect(global_object, {"x": (3,)}, "global name 'CONFIG' (dict) is not supported", "CONFIG")
    expect(unknown_module, {"x": (3,)}, "module 'os' is not supported", "os.sep")
    expect(global_array, {"x": (3,)}, "pass it as a parameter", "W_GLOBAL")
    expect(undefined_name, {"x": (3,)}, "name 'undefined_thing' is not defined", "undefined")


# --- data-dependent control flow ----------------------------------------------------------------


def data_if(x):
    if np.sum(x) > 0:  # ERR
        return x
    return -x


def data_ternary(x):
    return x if x[0] > 0 else -x  # ERR


def data_and(x):
    return (x > 0) and (x < 1)  # ERR


def test_data_dependent_if():
    err = expect(data_if, {"x": (3,)}, "data-dependent 'if'", "np.sum(x) > 0")
    assert "np.where" in err.message
    expect(data_ternary, {"x": (3,)}, "data-dependent 'conditional expression'", "x[0] > 0")
    expect(data_and, {"x": (3,)}, "use & (or np.logical_and)", "x > 0")


def symbolic_if(x):
    if x.shape[0] > 2:  # ERR
        return x
    return -x


def test_if_on_a_symbolic_size():
    expect(symbolic_if, {"x": ("N",)}, "depends on a symbolic size", "x.shape[0] > 2")


# --- loops --------------------------------------------------------------------------------------


def while_loop(x):
    while np.sum(x) > 1:  # ERR
        x = x / 2
    return x


def data_bound(x):
    s = 0.0
    for i in range(x[0]):  # ERR
        s += i
    return s


def data_bound_int(x):
    s = 0.0
    for i in range(int(x[0])):  # ERR
        s += i
    return s


def long_recurrence(x):
    p = 1.0
    for i in range(x.shape[0]):  # ERR
        p = p * x[i]
    return p


def symbolic_recurrence(x):
    h = 0.0
    for i in range(x.shape[0]):  # ERR
        h = np.tanh(h + x[i])
    return h


def breaks(x):
    s = 0.0
    for i in range(3):
        if i == 2:
            break  # ERR
        s += x[i]
    return s


def test_loop_with_unknown_bound():
    err = expect(while_loop, {"x": (3,)}, "'while' loop", "while")
    assert "for i in range(n)" in err.message
    expect(data_bound, {"x": (3,)}, "loop with an unknown bound", "x[0]")
    expect(data_bound_int, {"x": (3,)}, "int() of an array value", "int(x[0])")


def test_long_and_symbolic_recurrences_become_folds():
    # once errors (unroll limit, symbolic bound): recurrences are rolled loops now
    n = MAX_UNROLL + 1
    x = np.linspace(0.5, 1.5, n)
    for fn, shapes in ((long_recurrence, {"x": (n,)}), (symbolic_recurrence, {"x": ("N",)})):
        prog = translate(fn, shapes)
        assert len(prog.folds) == 1
        assert evaluate(prog, x) == pytest.approx(fn(x), rel=1e-9)


def growing(x):
    for _i in range(MAX_UNROLL + 1):  # ERR
        x = x[:, None]
    return x


def test_unroll_limit_for_a_loop_that_is_not_a_fold():
    err = expect(growing, {"x": (3,)}, f"loop of {MAX_UNROLL + 1} iterations", "for")
    assert "not a fold either" in err.message and "changes shape" in err.message


def test_break_is_refused():
    expect(breaks, {"x": (3,)}, "'break' is not supported", "break")


# --- mutation -----------------------------------------------------------------------------------


def item_assign(x):
    x[0] = 1.0  # ERR
    return x


def inplace_param(x):
    x += 1.0  # ERR
    return x


def inplace_view(x):
    y = x.T
    y *= 2.0  # ERR
    return y


def inplace_alias(x):
    a = x * 2.0
    b = a
    b += 1.0  # ERR
    return a


def local_item_assign(x):
    y = x * 2.0
    y[::2] = 0.0  # ERR
    return y


def alias_item_assign(x):
    y = x * 2.0
    z = y[1:]
    y[0] = 1.0  # ERR
    return z


def test_mutation_of_inputs():
    expect(item_assign, {"x": (3,)}, "mutates the input array 'x'", "x[0] = 1.0")
    expect(inplace_param, {"x": (3,)}, "mutates the input array 'x'", "x += 1.0")
    expect(inplace_view, {"x": (3, 2)}, "mutates the input array 'x'", "y *= 2.0")
    expect(inplace_alias, {"x": (3,)}, "may also change 'a'", "b += 1.0")
    expect(local_item_assign, {"x": (3,)}, "assignment to a strided slice", "y[::2] = 0.0")
    expect(alias_item_assign, {"x": (3,)}, "may also change 'z'", "y[0] = 1.0")


def scalar_rebinding(x, w):
    w += 1.0  # a float is rebound, not mutated: allowed
    s = x[0]
    s += 2.0
    return w * s


def test_rebinding_scalars_is_not_mutation():
    prog = translate(scalar_rebinding, {"x": (3,), "w": ()})
    assert ea.evaluate(prog, np.array([1.0, 2.0, 3.0]), 0.5) == pytest.approx(4.5)


# --- shapes and indices -------------------------------------------------------------------------


def bad_broadcast(x, y):
    return x + y  # ERR


def bad_matmul(A, B):
    return A @ B  # ERR


def out_of_bounds(x):
    return x[5]  # ERR


def symbolic_slice(x):
    return x[1:]  # ERR


def fancy(x):
    return x[x > 0]  # ERR


def fancy_list(x):
    return x[[0, 1]]  # ERR


def array_power(x, y):
    return x**y  # ERR


def too_many_indices(x):
    return x[0, 1]  # ERR


def test_shape_and_index_errors():
    expect(bad_broadcast, {"x": (3,), "y": (4,)}, "could not be broadcast", "x + y")
    expect(bad_broadcast, {"x": ("N",), "y": ("M",)}, "symbolic sizes broadcast only", "x + y")
    expect(bad_matmul, {"A": (3, 4), "B": (3, 4)}, "not aligned: 4 != 3", "A @ B")
    expect(out_of_bounds, {"x": (3,)}, "index 5 is out of bounds", "x[5]")
    expect(symbolic_slice, {"x": ("N",)}, "slice 1: of an axis of symbolic size N", "x[1:]")
    expect(fancy, {"x": (3,)}, "boolean mask", "x[x > 0]")
    expect(fancy_list, {"x": (3,)}, "fancy indexing", "x[[0, 1]]")
    expect(array_power, {"x": (3,), "y": (3,)}, "np.exp(y * np.log(x))", "x**y")
    expect(too_many_indices, {"x": (3,)}, "too many indices", "x[0, 1]")


# --- functions, parameters, helpers -------------------------------------------------------------


def no_return(x):
    y = x * 2  # noqa: F841
    return


def nested_def(x):
    def g(y):  # ERR
        return y

    return g(x)


def _bad_helper(v):
    return np.cumsum(v)  # ERR


def calls_bad_helper(x):
    return _bad_helper(x) + 1.0


def test_function_level_errors():
    expect(no_return, {"x": (3,)}, "'return' without a value", None)
    expect(nested_def, {"x": (3,)}, "nested function", "def g")
    # An error inside an inlined helper points into the helper's source.
    expect(calls_bad_helper, {"x": (3,)}, "np.cumsum is not supported", "np.cumsum",
           where=_bad_helper)


def two_params(x, y):
    return x + y


def test_parameter_errors():
    with pytest.raises(ProgramError, match="no shape given for parameter 'y'") as info:
        translate(two_params, {"x": (3,)})
    assert info.value.loc is not None and info.value.loc.line == two_params.__code__.co_firstlineno
    with pytest.raises(ProgramError, match="'z' is not a parameter"):
        translate(two_params, {"x": (3,), "y": (3,), "z": ()})
    with pytest.raises(ProgramError, match="must be a tuple"):
        translate(two_params, {"x": 3, "y": (3,)})
    with pytest.raises(ProgramError, match="not supported"):
        translate(two_params, {"x": (3,), "y": (3,)}, dtypes={"x": "complex128"})
    with pytest.raises(ProgramError, match="also a parameter name"):
        translate(two_params, {"x": ("y",), "y": (3,)})


def test_functions_without_source():
    # a lambda is translated like the equivalent def (its source line is read)
    assert "lambda_" in str(translate(lambda x: x * 2.0, {"x": (3,)}))
    namespace_l: dict = {}
    exec("g = lambda x: x\n", namespace_l)  # noqa: S102 - a lambda with no file
    with pytest.raises(ProgramError, match="cannot read the source of the lambda"):
        translate(namespace_l["g"], {"x": (3,)})
    with pytest.raises(ProgramError, match="expects a Python function"):
        translate(len, {"a": (3,)})
    with pytest.raises(ProgramError, match="expects a Python function"):
        translate(np.sum, {"a": (3,)})
    namespace: dict = {}
    exec("def f(x):\n    return x\n", namespace)  # noqa: S102 - a function with no file
    with pytest.raises(ProgramError, match="cannot read the source"):
        translate(namespace["f"], {"x": (3,)})


def test_every_error_is_an_eqsat_error():
    # ProgramError is what every failure above raises; it is an EqsatError for callers.
    assert issubclass(ProgramError, EqsatError)


# --- many invalid programs: always a located ProgramError, never an internal exception ----------

_INVALID_BODIES = [
    "return np.sum(x, axis=(0, 0))",
    "return np.sum(x, axis=3)",
    "return np.einsum('ij,jk->ik', x, x)",
    "return np.einsum('i->j', x)",
    "return np.einsum('i...->i', x)",
    "return np.zeros(-1)",
    "return x.reshape(2, 2)",
    "return x[..., ...]",
    "return x[::0]",
    "return x[1.5]",
    "return np.transpose(x, (1, 0))",
    "return x @ 2.0",
    "return np.where(x)",
    "return 1 / 0",
    "return np.concatenate([x, x[None]])",
    "return np.diag(np.ones((2, 2, 2)))",
    "return np.trace(x)",
    "return x.shape[5]",
    "return np.eye(3, k=1.5)",
    "return (lambda y: y)(x)",
    "return [y for y in x]",
    "return f'{x}'",
    "import os\n    return x",
    "global g\n    return x",
    "try:\n        return x\n    except Exception:\n        return x",
    "with open('f') as fh:\n        return x",
    "(y,) = x\n    return y",
    "del x\n    return 1.0",
    "return np.max(x, axis=1)",
    "return x**x",
    "return np.inf * x",
    "return x // 2",
    "return ~x",
    "return np.outer(np.ones((2, 2)), x)",
    "return np.dot(np.ones((2, 3, 4)), np.ones((5, 6)))",
    "return np.stack([x, x[:2]])",
    "return np.ones((2, 3)) @ np.ones((2, 3))",
    "for i in range(10**7):\n        x = x[None]\n    return x",
    "return np.sum(x, keepdims=1)",
    "return np.sum(x, out=x)",
    "return x.sum(axis=x)",
    "return np.exp(x, x)",
    "return range(3)",
    "return x[x]",
    "return undefined_helper(x)",
    "return print(x)",
    "return np.clip(x, x > 0, 1.0) + x[None][None][0, 0, 0, 0]",
    "return x.T.T.T[3]",
    "return np.float64(x) ** np.zeros(3)",
    "return max(x)",
    "return len(3)",
    "return x + None",
    "return x + 'a'",
    "return np.concatenate(x)",
    "if x[0] > 0 or x.shape[0] > 1:\n        return x\n    return x",
]


@pytest.mark.parametrize("body", _INVALID_BODIES)
def test_invalid_programs_give_located_program_errors(body, tmp_path):
    path = tmp_path / "bad_fn.py"
    path.write_text(f"import numpy as np\n\n\ndef f(x):\n    {body}\n")
    spec = importlib.util.spec_from_file_location(f"bad_{abs(hash(body))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(ProgramError) as info:
        translate(module.f, {"x": (3,)})
    err = info.value
    assert err.loc is not None, err.message
    assert err.loc.filename == str(path) and err.loc.line >= 4
