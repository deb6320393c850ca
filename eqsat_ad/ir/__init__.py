"""Tensor SSA: the intermediate representation every stage consumes and produces."""

from .errors import (
    ArgumentTypeError,
    EqsatError,
    EqsatTypeError,
    EqsatValueError,
    ProgramError,
    ShapeError,
)
from .expr import (
    CMP_OPS,
    Access,
    And,
    Binary,
    Bracket,
    Call,
    Cmp,
    Const,
    Expr,
    Loc,
    Max,
    Neg,
    Pow,
    Pred,
    Rel,
    Sum,
    accessed_names,
    add,
    bound_indices,
    children,
    conj,
    const,
    div,
    eq,
    free_indices,
    fresh_name,
    map_children,
    mul,
    pred_free_indices,
    rename,
    sub,
    substitute,
    substitute_pred,
)
from .functions import BUILTINS, Function, lookup, register_function
from .index import Affine, Dim, IndexVar, as_dim, dim_str, dim_value, size
from .printer import print_expr, print_pred, print_program, print_statement
from .program import Fold, Param, Program, Statement, Step

__all__ = [
    "ArgumentTypeError",
    "BUILTINS", "CMP_OPS", "Access", "Affine", "And", "Binary", "Bracket", "Call", "Cmp", "Const",
    "Dim", "EqsatError", "EqsatTypeError", "EqsatValueError", "Expr", "Fold", "Function",
    "IndexVar", "Loc", "Max", "Neg", "Param", "Pow", "Pred", "Step",
    "Program", "ProgramError", "Rel", "ShapeError", "Statement", "Sum", "accessed_names", "add",
    "as_dim", "bound_indices", "children", "conj", "const", "dim_str", "dim_value", "div", "eq",
    "free_indices", "fresh_name", "lookup", "map_children", "mul", "pred_free_indices",
    "print_expr", "print_pred", "print_program", "print_statement", "register_function", "rename",
    "size", "sub", "substitute", "substitute_pred",
]
