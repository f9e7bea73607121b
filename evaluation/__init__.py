"""The evaluation wing: every quality metric docfinder reports, away from the serving path.

``retrieval`` scores search on a BEIR-style dataset (nDCG@10, recall@k; SciFact; ``beir``
loads and indexes it), ``context`` measures how many of a gold answer's figures reach the
LLM's context per selection strategy and budget, ``answers`` judges the agent's answers
(``judge``: the DSPy judge), ``optimize`` compiles a better program from rated answers,
``feedback`` checks that well-rated answers' sources still rank and ``feedback_report``
summarises the reactions staff gave. ``benchmarks/`` (``make bench``) calls into these;
``doubles/`` holds the local stand-ins that tests and benchmarks share. The packages it needs
come with ``pip install 'docfinder[eval]'`` (see ``extra``); ``cli`` adds its commands to
``docfinder``. Serving code never imports this package.
"""
