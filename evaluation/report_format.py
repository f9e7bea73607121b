"""What the evaluation files and reports share: JSONL reading, a small Markdown subset rendered to
HTML, and charts as PNG."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from evaluation.extra import require
from pipeline.errors import InvalidRequestError


def read_jsonl(path: Path, required: set[str]) -> list[tuple[int, dict[str, Any]]]:
    """The objects of a JSONL file with their line numbers, each checked for the ``required`` keys;
    a missing file, a line that is not JSON or lacks a key is an error naming the file and line."""
    if not path.is_file():
        raise InvalidRequestError(f"{path} does not exist")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidRequestError(f"{path}:{number}: not JSON ({exc.msg})") from exc
        missing = required - set(record)
        if missing:
            raise InvalidRequestError(f"{path}:{number}: missing {', '.join(sorted(missing))}")
        records.append((number, record))
    return records


def table_cell(text: str) -> str:
    """``text`` made safe for one cell of a Markdown pipe table."""
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_to_html(lines: list[str], title: str) -> str:
    """The reports' own small Markdown subset (headings, images, pipe tables, paragraphs) as HTML."""
    body: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if table:
            head, *rows = table
            body.append("<table><tr>" + "".join(f"<th>{c}</th>" for c in head) + "</tr>")
            body.extend("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
            body.append("</table>")
            table.clear()

    for line in lines:
        if line.startswith("|"):
            cells = [html.escape(c.strip().replace("\\|", "|")) for c in line.strip("|").split(" | ")]
            if not all(set(c) <= {"-"} for c in cells):
                table.append(cells)
            continue
        flush()
        if line.startswith("## "):
            body.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.startswith("!["):
            alt, src = line[2:-1].split("](")
            body.append(f'<img alt="{html.escape(alt)}" src="{html.escape(src)}">')
        elif line:
            body.append(f"<p>{html.escape(line)}</p>")
    flush()
    head = (
        f"<meta charset='utf-8'><title>{html.escape(title)}</title><style>body{{font-family:sans-serif;"
        "max-width:60em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}</style>"
    )
    return f"<!doctype html><html><head>{head}</head><body>{''.join(body)}</body></html>\n"


def pyplot() -> Any:
    """matplotlib's pyplot drawing to files only (no display here, and never one on a server)."""
    require("drawing report charts", "matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_chart(figure: Any, path: Path) -> Path:
    """Write ``figure`` as a PNG at ``path`` and free it."""
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot().close(figure)
    return path
