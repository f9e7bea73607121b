"""Pure stages over small frozen dataclasses, in two rooms on a shared floor.

- :mod:`pipeline.retrieval`: retrieval and context, the stages over the index (search, fusion,
  scoping, evidence units, context selection and order);
- :mod:`pipeline.answering`: answer composition, the reading of a reply (its checks, its
  quotes, the rule packs);
- here, the floor both stand on: the shared types, errors, Protocols, the strategy registry,
  the lexical analyser, figures, citations, steps and their wording.

The retrieval room imports nothing of the answering room, and nothing here imports another
docfinder package: the index builder, the server and the bots depend on these, never the other
way round (``tests/test_architecture.py``). README.md names every module.
"""
