"""The optimizer: Tensor SSA in an egglog e-graph.

encode.py (whole program -> egglog text, canonical binders), prelude.egg (the term language,
analyses, affine arithmetic, substitution), rules.py (rule files ``rules/*.egg``), saturate.py
(bounded saturation in a worker process), extract.py (cost-based extraction), decode.py (the
chosen e-nodes read back as Tensor SSA), optimize.py (``optimize``, ``Optimized``, ``Limits``),
check.py (``check_rules``).
"""
