"""The plan: what the backend runs for a program, and the price of exactly that.

``order``: the contraction order (one search for the cost model, extraction and the backend).
"""

from .order import OPTIMAL_LIMIT, ContractionPath, contraction_path

__all__ = ["OPTIMAL_LIMIT", "ContractionPath", "contraction_path"]
