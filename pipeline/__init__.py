"""Pure retrieval and selection stages over small frozen dataclasses.

Nothing here imports another docfinder package: the index builder, the server and the
bots all depend on these types and stages, never the other way round.
"""
