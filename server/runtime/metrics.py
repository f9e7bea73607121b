"""Prometheus metrics of one service: requests, agent steps, LLM calls and tokens, checks, feedback.

Each service owns its registry (several services may live in one process: tests, benchmarks),
and the HTTP server exposes it at ``/metrics``. The agent's numbers come from the trace it
returns with every answer, so they count exactly what the user was shown.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from pipeline.steps import Step

_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


_STEPS = frozenset(Step)


class Metrics:
    """The counters and histograms, in their own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "docfinder_http_requests", "HTTP requests by route and status.", ["route", "status"], registry=r
        )
        self.request_seconds = Histogram(
            "docfinder_http_request_seconds", "HTTP request latency.", ["route"], buckets=_SECONDS, registry=r
        )
        self.answers = Counter("docfinder_answers", "Answers by outcome.", ["outcome"], registry=r)
        self.step_seconds = Histogram(
            "docfinder_agent_step_seconds", "Time to each agent step, from the one before.", ["step"],
            buckets=_SECONDS, registry=r,
        )  # fmt: skip
        self.llm_calls = Counter(
            "docfinder_llm_calls",
            "LLM calls by agent call (understand, transform_query, generate, supported, useful).",
            ["call"],
            registry=r,
        )
        self.llm_tokens = Counter(
            "docfinder_llm_tokens", "LLM tokens by kind (prompt, completion).", ["kind"], registry=r
        )
        self.retries = Counter("docfinder_agent_retries", "Question rewrites (transform_query).", registry=r)
        self.check_failures = Counter(
            "docfinder_check_failures", "Failed answer checks by check.", ["check"], registry=r
        )
        self.feedback = Counter(
            "docfinder_feedback", "Feedback records by label and platform.", ["label", "platform"], registry=r
        )
        self.searches = Counter("docfinder_searches", "Searches by mode.", ["mode"], registry=r)

    def observe_answer(self, outcome: str, trace: list[dict[str, Any]]) -> None:
        """Count one answer and every step of its trace."""
        self.answers.labels(outcome).inc()
        previous = 0.0
        for event in trace:
            step = event["step"]
            label = step if step in _STEPS else "other"  # a closed set: safe as a label
            self.step_seconds.labels(label).observe(max(event.get("t", previous) - previous, 0.0))
            previous = event.get("t", previous)
            if "llm_call" in event:  # the agent's own call names (understand, generate, ...)
                self.llm_calls.labels(event["llm_call"]).inc()
            for kind, count in (event.get("tokens") or {}).items():
                self.llm_tokens.labels(kind).inc(count)
            if step == Step.TRANSFORM_QUERY:
                self.retries.inc()
            if step in {Step.SUPPORTED, Step.USEFUL} and event.get("verdict") != "yes":
                self.check_failures.labels(step).inc()

    def render(self) -> bytes:
        """The registry in Prometheus' text format."""
        return generate_latest(self.registry)
