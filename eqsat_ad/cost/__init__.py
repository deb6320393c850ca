"""Cost model (polynomial prices of what the backend executes) and the cost report."""

from .model import (
    Contraction,
    ContractionPath,
    Materialized,
    ProgramCost,
    StatementCost,
    Term,
    contraction_path,
    expression_cost,
    materialized_sizes,
    plan_contraction,
    program_cost,
    statement_cost,
    statement_terms,
    subterm_key,
)
from .poly import Poly, big_o, compare, degree, leading_terms
from .report import CostReport, SaturationStats

__all__ = [
    "Contraction", "ContractionPath", "CostReport", "Materialized", "Poly", "ProgramCost",
    "SaturationStats", "StatementCost", "Term", "big_o", "compare", "contraction_path", "degree",
    "expression_cost", "leading_terms", "materialized_sizes", "plan_contraction", "program_cost",
    "statement_cost", "statement_terms", "subterm_key",
]
