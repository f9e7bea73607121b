"""How the CLI shows things: rich progress bars, hit lists with citations, reports."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from index_build.ingest_report import IngestReport
from pipeline.answers import AskResult
from pipeline.citations import marker
from pipeline.retrieval.context import Context
from pipeline.wording import printable
from server.doors.doctor import Check


def shown(text: str) -> str:
    """Untrusted text (a file name, a document's title) for the terminal: no markup, no control characters."""
    return escape(printable(text))


def shown_lines(text: str) -> str:
    """Untrusted text of several lines (a document's words, an answer written from them) for the
    terminal: no markup, no escape sequence, its line breaks kept."""
    return escape(printable(text, lines=True))


_LABELS = {"files": "Files", "pages": "Pages", "chunks": "Chunks", "embeddings": "Embeddings"}


class RichIngestProgress:
    """A progress sink drawing one rich bar per task: an ingest's files, pages, chunks and
    embeddings; an audit's stages."""

    def __init__(self, console: Console, enabled: bool = True) -> None:
        self._progress = Progress(
            TextColumn("{task.description:<11}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not enabled,
        )
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> RichIngestProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._progress.stop()

    def start(self, task: str, total: int | None) -> None:
        self._tasks[task] = self._progress.add_task(_LABELS.get(task, task), total=total)

    def advance(self, task: str, amount: int = 1) -> None:
        self._progress.advance(self._tasks[task], amount)

    def update(self, task: str, done: int, total: int) -> None:
        """Set a task's bar to ``done`` of ``total``, adding the bar on its first update (the
        audit's stages; callable from a worker thread, as rich's progress is thread-safe)."""
        if task not in self._tasks:
            self.start(task, total)
        self._progress.update(self._tasks[task], completed=done, total=total)


def print_hits(console: Console, result: Any) -> None:
    """Numbered passages with their citation (title, heading path, pages, source)."""
    if not result.hits:
        console.print(f"No passages found for [bold]{escape(result.query)}[/].")
        return
    console.print(f"[bold]{escape(result.query)}[/]  [dim]({result.mode}, index {result.version})[/]\n")
    for n, hit in enumerate(result.hits, start=1):
        chunk = hit.chunk
        console.print(
            f"[bold cyan]{marker(n)}[/] [bold]{shown(chunk.citation_label())}[/]"
            f"  [dim]score {hit.score:.4f}[/]"
        )
        console.print(f"    [dim]{shown(chunk.source)}[/]")
        text = " ".join(chunk.text.split())
        console.print("    " + shown_lines(text[:400] + ("…" if len(text) > 400 else "")) + "\n")


def print_ingest_report(console: Console, report: IngestReport) -> None:
    """A one-screen summary of an ingest, failures listed with their reasons."""
    state = f"version {report.version} is live" if report.published else "index unchanged"
    console.print(
        f"[green]✓[/] {state}: {report.documents} documents, {report.pages} pages, {report.chunks} chunks "
        f"({report.converted} converted, {report.reused} unchanged, {report.removed} removed; "
        f"{report.embedded_chunks} chunks and {report.embedded_units} evidence units embedded, "
        f"{report.pooled_units} units pooled from their chunks) "
        f"in {report.seconds:.1f} s"
    )
    if report.ignored:
        console.print(
            f"[dim]{len(report.ignored)} ignored (file types docfinder does not read): "
            f"{shown(', '.join(report.ignored[:5]))}{' …' if len(report.ignored) > 5 else ''}[/]"
        )
    if report.failures:
        console.print(f"[red]{len(report.failures)} file(s) skipped:[/]")
        for failure in report.failures:
            console.print(f"  [red]✗[/] {shown(failure.path)}: {shown(failure.reason)}")


_CHECK_MARKS = {"ok": "[green]✓[/]", "warn": "[yellow]![/]", "fail": "[red]✗[/]", "skipped": "[dim]-[/]"}


def print_checks(console: Console, checks: Sequence[Check]) -> None:
    """``docfinder doctor``: one line per check, its fix under it, and a verdict."""
    for check in checks:
        console.print(
            f"{_CHECK_MARKS[check.status]} [bold]{check.name:<9}[/] {escape(check.detail)} "
            f"[dim]({check.seconds:.1f} s)[/]"
        )
        if check.fix:
            console.print(f"  [bold]fix:[/] {escape(check.fix)}")
    failed = [c.name for c in checks if c.status == "fail"]
    if failed:
        console.print(f"[red]not ready:[/] {', '.join(failed)} failed")
    else:
        console.print("[green]ready[/]")


def print_index_info(console: Console, info: dict[str, Any]) -> None:
    """The live version's summary as a table."""
    console.print(
        f"[bold]{escape(info['index_dir'])}[/] version {info['version']} ({info['created_at']}), "
        f"embedder {info['embedder']['name']} ({info['embedder']['dimensions']} dims, "
        f"{info['embedder'].get('backend', 'torch')})"
    )
    console.print(f"{info['documents']} documents, {info['pages']} pages, {info['chunks']} chunks")
    program = info["program"]
    scores = (
        f" (validation score {program['score_before']} → {program['score_after']})"
        if "score_after" in program
        else ""
    )
    console.print(f"answering program: {escape(program['name'])}{scores}")
    table = Table("collection", "documents", "chunks", "evidence units")
    for name, counts in info["collections"].items():
        table.add_row(
            name, str(counts["documents"]), str(counts["chunks"]), str(counts.get("evidence_units", 0))
        )
    console.print(table)
    if "document_list" in info:
        listing = Table("title", "organisation", "period", "version", "pages", "units", "collection")
        for d in info["document_list"]:
            listing.add_row(
                escape(d["title"]),
                escape(d["organisation"]),
                d["period"],
                d["version"],
                str(d["pages"]),
                str(d["evidence_units"]),
                d["collection"],
            )
        console.print(listing)


def print_trace(console: Console, trace: list[dict[str, Any]]) -> None:
    """One line per step: a search stage with its time in ms, an answering step with the
    seconds since the question came (``t``) and, under a retrieval, its search stages."""
    console.print("[bold]trace[/]")
    _print_steps(console, trace, indent="  ")


def _print_steps(console: Console, trace: list[dict[str, Any]], indent: str) -> None:
    for step in trace:
        # Long lists (candidates, kept ids) are summarised by their length.
        details = {
            k: len(v) if isinstance(v, list) and len(v) > 3 else v
            for k, v in step.items()
            if k not in ("step", "ms", "t", "stages")
        }
        when = f"{step['ms']:>8.2f} ms" if "ms" in step else f"{step.get('t', 0.0):>8.2f} s "
        console.print(f"{indent}{step['step']:<15} {when}  {escape(str(details))}")
        if step.get("stages"):
            _print_steps(console, step["stages"], indent + "    ")


def print_context(console: Console, context: Context) -> None:
    """The context as the LLM would see it, each piece tagged with where it comes from."""
    console.print(f"[bold]context[/] ({context.tokens} tokens, {len(context.pieces)} pieces)")
    for piece in context.pieces:
        console.print(f"  [dim]group {piece.group} · {escape(piece.chunk.citation_label())}[/]")
        console.print(f"    {shown(' '.join(piece.text.split()))}")


def print_answer(console: Console, result: AskResult, trace: bool = False) -> None:
    """The answer, the evidence it rests on (quoted), then its numbered sources with title, heading, pages."""
    agent = result.agent
    console.print(shown_lines(agent.answer) + "\n")
    if agent.evidence:
        console.print("[bold]Evidence[/]")
        for quote in agent.evidence:
            console.print(f"  [cyan]{marker(quote.n)}[/] “{shown_lines(quote.readable())}”")
            if quote.caption():
                console.print(f"      [dim]{shown(quote.caption())}[/]")
        console.print()
    if agent.citations:
        console.print("[bold]Sources[/]")
        for citation in agent.citations:
            console.print(f"  [cyan]{marker(citation.n)}[/] {shown(citation.label())}")
            console.print(f"      [dim]{shown(citation.source)}[/]")
    console.print(
        f"[dim]conversation {result.conversation_id} · answer {result.answer_id} · {agent.outcome}[/]"
    )
    if trace:
        print_trace(console, agent.trace)
