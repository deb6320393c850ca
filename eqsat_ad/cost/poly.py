"""Re-export of :mod:`eqsat_ad.plan.poly` (the plan prices in these polynomials)."""

from ..plan.poly import (
    ONE,
    ZERO,
    Monomial,
    Poly,
    as_poly,
    big_o,
    compare,
    degree,
    leading_terms,
    poly_max,
)

__all__ = [
    "ONE", "ZERO", "Monomial", "Poly", "as_poly", "big_o", "compare", "degree", "leading_terms",
    "poly_max",
]
