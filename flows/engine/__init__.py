"""The evaluation engine: the plan of an evaluation and how each part is read and computed, the comparison of
evaluations (no Prefect: flows/pipeline wraps both in flows), the limits that bound memory, the phases `--profile`
reports, the tie warning and what the provenance records of the implementation.
"""
