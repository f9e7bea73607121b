"""Evaluation: every quality metric docfinder reports has its home here.

``retrieval`` scores search on a BEIR-style dataset (nDCG@10, recall@k; SciFact), ``context``
measures how many of a gold answer's figures reach the LLM's context per selection strategy
and budget, ``feedback`` checks that well-rated answers' sources still rank, and
``feedback_report`` summarises the reactions staff gave. ``benchmarks/`` calls into these for
``make bench``.
"""
