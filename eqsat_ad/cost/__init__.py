"""Prices of programs (the prices of the plans the backend runs) and the cost report."""

from ..plan.order import ContractionPath, contraction_path
from ..plan.poly import Poly, big_o, compare, degree, leading_terms
from ..plan.price import (
    Materialized,
    ProgramCost,
    StatementCost,
    eager_cost,
    materialized_sizes,
    program_cost,
)
from .report import CostReport, SaturationStats

__all__ = [
    "ContractionPath", "CostReport", "Materialized", "Poly", "ProgramCost", "SaturationStats",
    "StatementCost", "big_o", "compare", "contraction_path", "degree", "eager_cost",
    "leading_terms", "materialized_sizes", "program_cost",
]
