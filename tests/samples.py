"""Small documents written by tests: one per format, with known headings and facts."""

from __future__ import annotations

from pathlib import Path

MARKDOWN = """# Observing Handbook

## Proposal preparation

Proposals are submitted through the Observing Tool before the deadline on 15 April.
Each proposal names a principal investigator and at most twelve co-investigators.

### Time estimates

The sensitivity calculator estimates the integration time needed for a target noise level.

## Data delivery

Calibrated data are delivered through the archive within thirty days of observation.
"""

HTML = """<html><head><title>Instrument Guide</title></head><body>
<h1>Instrument Guide</h1>
<h2>Spectrometer configuration</h2>
<p>The spectrometer supports four basebands, each 2 GHz wide, with up to 7680 channels.</p>
<h2>Cryostat maintenance</h2>
<p>The cryostat is warmed up every six months for maintenance of the cold head.</p>
<table><tr><th>Band</th><th>Frequency (GHz)</th></tr>
<tr><td>Band 3</td><td>84-116</td></tr><tr><td>Band 6</td><td>211-275</td></tr></table>
</body></html>
"""

TEXT = """Helpdesk hours

The observatory helpdesk answers tickets from 08:00 to 18:00 Chilean time on weekdays.

Urgent observing issues are escalated to the astronomer on duty.
"""


def write_docx(path: Path) -> None:
    """A DOCX with a heading and a paragraph, written with python-docx."""
    import docx

    document = docx.Document()
    document.add_heading("Pipeline reduction", level=1)
    document.add_heading("Imaging", level=2)
    document.add_paragraph("The imaging pipeline uses the tclean task with Briggs weighting and robust 0.5.")
    document.save(path)


def write_sample_corpus(root: Path) -> Path:
    """Write the sample handbook (Markdown, HTML, DOCX, text) under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "observing.md").write_text(MARKDOWN)
    (root / "instruments.html").write_text(HTML)
    (root / "helpdesk.txt").write_text(TEXT)
    write_docx(root / "pipeline.docx")
    return root


def write_text_pdf(path: Path, heading: str, paragraphs: list[str], password: str | None = None) -> None:
    """A one-page PDF with a bold heading and body lines in the standard Helvetica fonts.

    With ``password`` the file is encrypted (AES-128) and cannot be opened without it.
    """
    import pikepdf

    pdf = pikepdf.new()
    fonts = pikepdf.Dictionary(
        F1=pikepdf.Dictionary(
            Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name("/Helvetica")
        ),
        F2=pikepdf.Dictionary(
            Type=pikepdf.Name.Font, Subtype=pikepdf.Name.Type1, BaseFont=pikepdf.Name("/Helvetica-Bold")
        ),
    )
    commands = [f"BT /F2 16 Tf 72 720 Td ({heading}) Tj ET"]
    y = 690
    for paragraph in paragraphs:
        commands.append(f"BT /F1 10 Tf 72 {y} Td ({paragraph}) Tj ET")
        y -= 14
    page = pikepdf.Dictionary(
        Type=pikepdf.Name.Page,
        MediaBox=[0, 0, 612, 792],
        Resources=pikepdf.Dictionary(Font=fonts),
        Contents=pdf.make_stream("\n".join(commands).encode("latin-1")),
    )
    pdf.pages.append(pikepdf.Page(page))
    encryption = pikepdf.Encryption(owner=password, user=password, aes=True, R=4) if password else False
    pdf.save(path, encryption=encryption)
