"""Citations: every arXiv id the book mentions is in references.bib, every {cite} key exists,
and each page that cites ends with a bibliography that renders, with links that stay on the
page (sphinxcontrib-bibtex resolves a citation locally first; see book/_config.yml)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grpolab.book.build import build_book_once, default_book_dir

BOOK = default_book_dir()
#: bibliographies the lead folds into references.bib at merge time count as the book's too
BIB_FILES = sorted(BOOK.glob("references*.bib"))
PAGES = sorted(p for p in BOOK.rglob("*.md") if "_build" not in p.parts
               and not p.name.startswith(("_", "README")))
ARXIV_ID = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(?:v\d+)?(?![\d])")
CITE_ROLE = re.compile(r"\{(?:cite|footcite)(?::[a-z]+)?\}`([^`]+)`")


def _bib_keys() -> set[str]:
    keys = set()
    for bib in BIB_FILES:
        keys |= set(re.findall(r"@\w+\{([^,\s]+),", bib.read_text(encoding="utf-8")))
    return keys


def _bib_eprints() -> set[str]:
    ids = set()
    for bib in BIB_FILES:
        text = bib.read_text(encoding="utf-8")
        ids |= set(re.findall(r"eprint\s*=\s*\{(\d{4}\.\d{4,5})\}", text))
    return ids


def _cited_keys(text: str) -> list[str]:
    keys = []
    for body in CITE_ROLE.findall(text):
        for part in body.split(","):
            # {pre}key{post}: strip the pre- and post-text
            keys.append(re.sub(r"\{[^}]*\}", "", part).strip())
    return keys


def _page_id(path: Path) -> str:
    return path.relative_to(BOOK).with_suffix("").as_posix()


def test_the_bibliography_exists_and_is_well_formed():
    assert (BOOK / "references.bib").is_file()
    text = (BOOK / "references.bib").read_text(encoding="utf-8")
    entries = re.split(r"\n@", text)[1:]
    assert len(entries) >= 20
    for entry in entries:
        key = entry.split("{", 1)[1].split(",", 1)[0]
        for field in ("title", "author", "year", "url"):
            assert re.search(rf"\n\s*{field}\s*=", entry), f"{key}: no {field}"
        if key.startswith("arxiv:"):
            assert re.search(rf"eprint\s*=\s*\{{{re.escape(key[6:])}\}}", entry), key
            assert "archivePrefix = {arXiv}" in entry, key
        else:
            assert re.fullmatch(r"[a-z_]+:[a-z0-9_]+", key), f"{key}: use project:thing"
    assert len(set(_bib_keys())) == len(re.findall(r"\n@\w+\{", text)), "duplicate keys"


def test_the_checks_below_can_fail():
    # a made-up id and key are caught by the same patterns the tests use
    assert ARXIV_ID.findall("see arXiv 9912.99999, §2") == ["9912.99999"]
    assert "9912.99999" not in _bib_eprints()
    assert _cited_keys("{cite:p}`{see}arxiv:1{§2},trl:x`") == ["arxiv:1", "trl:x"]


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_arxiv_id_in_the_text_is_in_the_bibliography(page):
    known = _bib_eprints()
    missing = sorted(set(ARXIV_ID.findall(page.read_text(encoding="utf-8"))) - known)
    assert missing == [], f"{_page_id(page)}: arXiv ids not in references.bib: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_every_cited_key_exists_and_citing_pages_end_with_a_bibliography(page):
    text = page.read_text(encoding="utf-8")
    keys = _cited_keys(text)
    unknown = sorted(set(keys) - _bib_keys())
    assert unknown == [], f"{_page_id(page)}: unknown citation keys {unknown}"
    if keys:
        assert "```{bibliography}" in text, f"{_page_id(page)} cites but has no bibliography"
        tail = text[text.rindex("```{bibliography}"):]
        assert ":filter: docname in docnames" in tail, "filter the bibliography to the page"
        assert "{cite" not in tail, "the bibliography ends the page"


# ----------------------------------------------------------------------------------------
# The built HTML (the book is built once per test session, shared with tests/test_book.py)
# ----------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def html_dir() -> Path:
    return build_book_once(BOOK).parent


def _citing_pages() -> list[Path]:
    return [p for p in PAGES if _cited_keys(p.read_text(encoding="utf-8"))]


@pytest.mark.slow
@pytest.mark.book
@pytest.mark.parametrize("page", _citing_pages(), ids=_page_id)
def test_each_chapter_bibliography_renders_with_local_links(html_dir, page):
    html = (html_dir / f"{_page_id(page)}.html").read_text(encoding="utf-8")
    keys = set(_cited_keys(page.read_text(encoding="utf-8")))
    entries = re.findall(r'<div class="citation" id="([^"]+)" role="doc-biblioentry">', html)
    assert len(entries) == len(keys), (_page_id(page), len(entries), sorted(keys))
    links = re.findall(r'<span class="bibtex-citation"[^>]*>.*?</span>', html, re.S)
    assert links, "no rendered citations"
    targets = re.findall(r'<a class="reference internal" href="([^"]*)"', "".join(links))
    assert targets and all(t.startswith("#") and t[1:] in entries for t in targets), (
        f"{_page_id(page)}: a citation links off the page: {targets}")
    for key in keys:
        if key.startswith("arxiv:"):
            assert f"https://arxiv.org/abs/{key[6:]}" in html, key
