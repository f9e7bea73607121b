"""The running service's own machinery: admission control (bounded queues for searches and
questions), Prometheus metrics with fixed label sets, and structured logs carrying the
request id. Nothing here knows a door, a store or a model.
"""
