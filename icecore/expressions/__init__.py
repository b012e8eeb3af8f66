"""Filters: parse SQL text, bind to a schema, project onto partitions, evaluate.

One evaluator per module (STYLE): ``model`` (the expression nodes), ``parser`` (SQL text ->
unbound expressions), ``bind``, ``rewrite_not``, ``projection``, ``arrow_summaries``
and ``arrow_metrics`` (one-object adapters: ``manifest_eval``, ``metrics_eval``), ``residual``.
"""
