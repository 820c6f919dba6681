"""The drill's rubrics as a book page: every question with its 30-second answer.

``book/interview/05-thirty-second-answers.md`` calls :func:`answers_html` in a hidden cell,
so the page is generated at build time from the very file ``grpolab drill`` reads
(``rubrics.json``): one source, no copy to drift. Each question shows its 30-second answer;
its rubric (each point linked to the section of the book that backs it) and its trap
answer fold behind a summary, so the page stays short on a phone.

Derived in: book/interview/05-thirty-second-answers.md (the page this renders).
"""

from __future__ import annotations

import html
import re
from functools import lru_cache
from pathlib import Path

from grpolab.drill.rubrics import Item, Rubrics, load

__all__ = ["answers_html", "section_title"]

#: The page, as a docname: links are written relative to its folder.
PAGE = "interview/05-thirty-second-answers"
#: Topic headings where the chapter's own title would not say what the questions are about.
TOPIC_TITLES = {"recipes": "What recipes used, and where it is written"}


def _make_id(title: str) -> str:
    """The id Sphinx gives a section titled ``title`` (docutils' make_id)."""
    from docutils.nodes import make_id

    return make_id(title)


@lru_cache(maxsize=64)
def _headings(book: str, doc: str) -> tuple[str, dict[str, str]]:
    """The page's title and its section ids -> heading texts, read from the source."""
    path = Path(book) / f"{doc}.md"
    # headings outside code cells (a "# comment" in a cell is no heading)
    text = re.sub(r"^(```|~~~).*?^\1[ \t]*$", "", path.read_text(encoding="utf-8"),
                  flags=re.M | re.S)
    title, sections = doc, {}
    for level, heading in re.findall(r"^(#{1,6}) (.+)$", text, re.M):
        heading = heading.strip()
        if level == "#" and title == doc:
            title = heading
        sections.setdefault(_make_id(heading), heading)
    return title, sections


def section_title(book: str | Path, ref: str) -> str:
    """``theory/06-normalization#dr-grpo-s-difficulty-bias`` -> ``Normalization…, "Dr.
    GRPO's difficulty bias"``; ValueError (naming the reference) if the page or the section
    does not exist, so a stale link fails the build instead of pointing nowhere."""
    doc, _, anchor = ref.partition("#")
    try:
        title, sections = _headings(str(book), doc)
    except OSError:
        raise ValueError(f"rubrics: no book page {doc!r} (from {ref!r})") from None
    if not anchor:
        return title
    if anchor not in sections:
        raise ValueError(f"rubrics: page {doc!r} has no section {anchor!r}")
    return f"{title}, “{sections[anchor]}”"


def _href(ref: str) -> str:
    doc, _, anchor = ref.partition("#")
    depth = PAGE.count("/")
    return "../" * depth + f"{doc}.html" + (f"#{anchor}" if anchor else "")


def _item_html(item: Item, rubrics: Rubrics, book: str) -> str:
    e = html.escape
    points = "".join(
        f'<li>{e(p.point)} <span class="grpolab-answers-ref">(<a href="{e(_href(p.chapter))}">'
        f"{e(section_title(book, p.chapter))}</a>)</span></li>"
        for p in item.rubric)
    main = rubrics.topics[item.topic]
    return (f'<div class="grpolab-answer" id="answer-{e(item.id)}">'
            f'<p class="grpolab-answer-q"><strong>{e(item.question)}</strong></p>'
            f'<p class="grpolab-answer-30s">{e(item.answer_30s)}</p>'
            f"<details><summary>Rubric and trap answer</summary>"
            f"<p>A strong answer makes these points:</p><ol>{points}</ol>"
            f'<p><strong>Trap answer:</strong> “{e(item.trap)}”</p>'
            f"<p><strong>Why it is wrong:</strong> {e(item.why_wrong)}</p></details>"
            f'<p class="grpolab-answer-src">Section: <a href="{e(_href(main))}">'
            f"{e(section_title(book, main))}</a> · from: {e(item.source)} · drill id "
            f"<code>{e(item.id)}</code></p></div>")


def answers_html(book: str | Path | None = None) -> str:
    """The page body: one block per topic, in the order of rubrics.json's topics, each
    question with its 30-second answer, its folded rubric and trap, and its section."""
    from grpolab._paths import checkout_root

    book = str(book or checkout_root() / "book")
    rubrics = load()
    e = html.escape
    parts = ['<div class="grpolab-answers">']
    toc = []
    for topic, chapter in rubrics.topics.items():
        items = [i for i in rubrics.items.values() if i.topic == topic]
        if not items:
            continue
        title = TOPIC_TITLES.get(topic) or section_title(book, chapter)
        toc.append(f'<li><a href="#topic-{e(topic)}">{e(title)}</a> ({len(items)})</li>')
        parts.append(f'<h2 class="grpolab-answers-topic" id="topic-{e(topic)}">{e(title)}</h2>')
        parts += [_item_html(i, rubrics, book) for i in items]
    parts.append("</div>")
    return (f'<nav class="grpolab-answers-toc"><p><strong>{len(rubrics.items)} questions, '
            f"by topic:</strong></p><ul>{''.join(toc)}</ul></nav>" + "".join(parts))
