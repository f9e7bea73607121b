"""Line, heading and table reconstruction from word cells, on hand-placed words."""

from index_build.pdf_layout import Word, drop_running_headers, lines_to_blocks, words_to_lines


def row(y: float, *cells: tuple[float, str], height: float = 8.0, bold: bool = False) -> list[Word]:
    """Words on one baseline; each cell is (x, text), words of a cell placed 4 pt apart."""
    words = []
    for x, text in cells:
        for token in text.split():
            width = 5.0 * len(token)
            words.append(Word(token, x, y, x + width, y + height, bold))
            x += width + 2.0
    return words


def test_words_on_one_baseline_form_one_line_split_into_columns():
    words = row(100, (50, "Total net sales"), (300, "81,797"), (380, "82,959"))
    words += row(100.4, (260, "$"))  # a lone dollar sign slightly off the baseline
    lines = words_to_lines(words, page=4)
    assert len(lines) == 1
    assert lines[0].segments == ["Total net sales", "$81,797", "82,959"]
    assert lines[0].numeric_segments == 2


def test_table_rows_stay_together_as_markdown_with_their_labels():
    words = (
        row(100, (50, "Revenue grew in the quarter because of strong demand in every region we serve."))
        + row(120, (300, "Three Months Ended"), (420, "Nine Months Ended"))
        + row(132, (50, "Net sales:"))
        + row(144, (50, "Products"), (300, "60,584"), (380, "63,355"))
        + row(156, (50, "Total net sales"), (300, "81,797"), (380, "82,959"))
    )
    blocks = lines_to_blocks(words_to_lines(words, page=4))
    assert [b.kind for b in blocks] == ["text", "table"]
    table = blocks[1].text.splitlines()
    assert table[0] == "| Three Months Ended | Nine Months Ended |"
    assert "| Net sales: |" in table
    assert "| Total net sales | 81,797 | 82,959 |" in table
    assert blocks[1].page == 4


def test_bold_and_tall_lines_become_headings_with_levels_by_height():
    body = "This paragraph is ordinary body text that runs across the page and ends here."
    words = (
        row(40, (50, "Annual Report"), height=16)
        + row(70, (50, "Results of Operations"), bold=True)
        + row(90, (50, body))
        + row(102, (50, body))
        + row(130, (50, "Liquidity"), bold=True)
        + row(150, (50, body))
    )
    blocks = lines_to_blocks(words_to_lines(words, page=1))
    headings = [(b.text, b.level) for b in blocks if b.kind == "heading"]
    assert headings == [("Annual Report", 1), ("Results of Operations", 2), ("Liquidity", 2)]
    paragraphs = [b.text for b in blocks if b.kind == "text"]
    assert paragraphs[0] == f"{body} {body}"


def test_numbers_and_long_sentences_are_not_headings():
    words = (
        row(40, (50, "2023"), bold=True)
        + row(
            60,
            (50, "This bold line is a full sentence that goes on for a long while, so it is text."),
            bold=True,
        )
        + row(80, (50, "Plain body text of the right size."))
    )
    blocks = lines_to_blocks(words_to_lines(words, page=1))
    assert all(b.kind != "heading" for b in blocks)


BODIES = {1: "revenue", 2: "costs", 3: "taxes", 4: "debt", 5: "cash"}  # a page's own text


def test_running_headers_repeated_at_the_page_edge_are_dropped():
    pages = []
    for number in range(1, 5):
        words = row(10, (50, f"Example Corp | Form 10-Q | {number}")) + row(
            400, (50, f"Body of page {number}: {BODIES[number]}.")
        )
        pages.append(words_to_lines(words, page=number))
    kept = drop_running_headers(pages, [792.0] * 4)
    assert [[ln.text for ln in page] for page in kept] == [
        [f"Body of page {n}: {BODIES[n]}."] for n in range(1, 5)
    ]


def test_a_footer_or_page_number_ending_pages_above_their_edge_is_dropped():
    """A 10-Q's footer, or a bare page number, sits just under each page's last text, 200 to 600
    points down: not near the edge, yet the page's last line; a line repeated inside every page
    stays."""
    ends = (300, 520, 610, 450, 380)
    for footer in ("Example Corp | Q3 2023 Form 10-Q | {}", "{}"):
        pages = []
        for number, end in zip(range(1, 6), ends):
            words = (
                row(60, (50, f"Body of page {number}: {BODIES[number]}."))
                + row(80, (50, "Net sales | 81,797 | 82,959"))
                + row(end, (300, footer.format(number)))
            )
            pages.append(words_to_lines(words, page=number))
        kept = drop_running_headers(pages, [792.0] * 5)
        assert [[ln.text for ln in page] for page in kept] == [
            [f"Body of page {n}: {BODIES[n]}.", "Net sales | 81,797 | 82,959"] for n in range(1, 6)
        ]


def test_a_numbered_heading_set_apart_by_a_tab_stop_is_a_heading():
    words = row(40, (50, "Item 2."), (120, "Management's Discussion and Analysis"), bold=True) + row(
        60, (50, "Body text of ordinary size follows the heading here.")
    )
    blocks = lines_to_blocks(words_to_lines(words, page=1))
    assert blocks[0].kind == "heading" and blocks[0].text == "Item 2. Management's Discussion and Analysis"


def test_double_spaced_lines_form_one_paragraph_and_a_wider_gap_still_breaks():
    """A protocol typed double-spaced puts a full line between the lines of one paragraph: read
    by a fixed gap, each line became a paragraph, and each line break a sentence break."""
    first = [
        "These scores are then aggregated to generate two summary scores: the",
        "Physical Component Summary (PCS) and the Mental Component Summary",
        "(MCS). Higher scores indicate better health-related quality of life.",
    ]
    second = [
        "In the experimental group, peer support was calculated from the time",
        "spent on relevant pages.",
    ]
    words = [w for i, text in enumerate(first) for w in row(100 + 16 * i, (50, text))]
    words += [w for i, text in enumerate(second) for w in row(100 + 16 * 3 + 14 + 16 * i, (50, text))]
    blocks = lines_to_blocks(words_to_lines(words, page=5))
    assert [b.text for b in blocks] == [" ".join(first), " ".join(second)]


def test_mac_roman_quotes_and_apostrophes_are_repaired_but_real_letters_kept():
    words = row(100, (50, "Notifications prompt users to click ÒhappyÓ if they donÕt feel well. MÓNICA"))
    (line,) = words_to_lines(words, page=1)
    assert (
        line.text
        == "Notifications prompt users to click \u201chappy\u201d if they don\u2019t feel well. MÓNICA"
    )
