"""An empty enumeration element stays an (empty) item of its rendered list (issue 75)."""
import re

import pytest

from skfcrf.structure import render_html, render_markdown

OPTS = dict(dictated_punctuation=True, capitalize=True)


def _report(items):
    """``PLAN: <items> He is fine.``; each item is (marker tokens, sentence tokens)."""
    toks = ["plan", "colon"]
    labs = [("BeginHeading", "BeginNone", "BeginPlan"), ("Heading", "None", "Plan")]
    for marker, words in items:
        first = True
        for m in marker:
            toks.append(m)
            labs.append(("Enummarker", "BeginEnumelement" if first else "Enumelement", "Plan"))
            first = False
        for j, w in enumerate(words):
            toks.append(w)
            labs.append(("BeginSentence" if j == 0 else "Sentence",
                         "BeginEnumelement" if first else "Enumelement", "Plan"))
            first = False
    toks += ["he", "is", "fine"]
    labs += [("BeginSentence", "BeginParagraph", "Plan")] + [("Sentence", "Paragraph", "Plan")] * 2
    return toks, labs


EMPTY = {
    # the item's only word is dictated punctuation, dropped when rendered
    "only-punctuation": [(["number", "one"], ["cystoscopy"]), (["number", "two"], ["period"]),
                         (["number", "three"], ["follow", "up"])],
    # a spoken marker and nothing else
    "only-spoken-marker": [(["number", "one"], ["cystoscopy"]), (["number", "two"], []),
                           (["number", "three"], ["follow", "up"])],
    # a typed marker and nothing else ("2. 2." would open a nested list)
    "only-typed-marker": [(["1."], ["cystoscopy"]), (["2."], []), (["3."], ["follow", "up"])],
}


def _list_lines(md):
    return [line for line in md.splitlines() if re.match(r"\d+\.", line)]


@pytest.mark.parametrize("case", sorted(EMPTY))
def test_markdown_empty_item_keeps_the_list(case):
    md = render_markdown(*_report(EMPTY[case]), **OPTS)
    lines = _list_lines(md)
    assert [line.split(".")[0] for line in lines] == ["1", "2", "3"]
    # every item has content on its marker line, so trimming trailing spaces (or a
    # renderer that needs text after "2.") cannot merge it into the previous item
    for line in lines:
        assert re.match(r"\d+\. \S", line), line
    assert lines[0] == "1. Cystoscopy." and lines[2] == "3. Follow up."
    assert lines[1] == "2. <!-- -->"  # renders as an empty <li>
    assert "Number" not in md and "2. 2." not in md
    assert md.rstrip().endswith("He is fine.")


@pytest.mark.parametrize("case", sorted(EMPTY))
def test_html_empty_item_is_an_empty_li(case):
    page = render_html(*_report(EMPTY[case]), **OPTS)
    assert "<ol>\n<li>Cystoscopy.</li>\n<li></li>\n<li>Follow up.</li>\n</ol>" in page


def test_markdown_item_text_starting_with_a_marker_is_escaped():
    items = [(["number", "one"], ["cystoscopy"]), (["number", "two"], ["2.", "weeks"])]
    md = render_markdown(*_report(items), **OPTS)
    assert "2. 2\\. weeks" in md


@pytest.mark.parametrize("case", sorted(EMPTY))
def test_commonmark_renders_one_list_of_three_items(case):
    markdown_it = pytest.importorskip("markdown_it")
    page = markdown_it.MarkdownIt("commonmark").render(render_markdown(*_report(EMPTY[case]), **OPTS))
    assert page.count("<ol>") == 1 and page.count("<li>") == 3
