"""Retrieval and context: from a question to the passages and evidence units the model reads.

Pure stages over the index's arrays; nothing here knows an answer exists (this room imports
nothing of :mod:`pipeline.answering`). README.md names each module and its one job.
"""
