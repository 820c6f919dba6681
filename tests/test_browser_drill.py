"""The drill in the built book, in headless chromium with the network blocked.

- The exercises page's answer boxes check answers in the page (no kernel, no network): a
  right and a wrong answer each get the verdict and the message of the Python checker, and
  the page's checker data equals the registry's.
- The one-page sheet prints (Playwright's ``page.pdf``, print media) to one page on A4 and on
  Letter, with room for about 35 formulas, and ``pdftotext`` finds its formulas, recipes and
  wrong answers.

Uses Debian's chromium (``which chromium``) through Playwright's Python client, and
poppler-utils' ``pdftotext``/``pdfinfo``. Skipped only when a tool is missing and CI is not
"true"; under CI it fails instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from grpolab.drill import exercises
from grpolab.drill.formulas import FORMULAS, RECIPES
from grpolab.drill.rubrics import sheet_wrong_answers

pytestmark = [pytest.mark.slow, pytest.mark.book, pytest.mark.browser]

def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{tool} is not installed, and CI=true: the browser drill test must run")
        pytest.skip(f"{tool} not found on PATH; not under CI")
    return path


def _answer(page, ex_id: str, typed: str) -> tuple[str, str | None]:
    form = page.locator(f'form.grpolab-answer[data-exercise="{ex_id}"]')
    form.locator("input[name=answer]").fill(typed)
    form.locator("button[type=submit]").click()
    verdict = form.locator(".grpolab-verdict")
    return verdict.inner_text().strip(), verdict.get_attribute("data-correct")


def test_page_checker_data_equals_the_registry(offline_page, book_site):
    page = offline_page("interview/02-exercises").page
    embedded = page.evaluate(
        "() => JSON.parse(document.getElementById('grpolab-exercise-data').textContent)")
    assert embedded == exercises.checker_data()
    assert page.evaluate("() => window.grpolabExerciseData") == exercises.checker_data()
    _, html_dir = book_site
    built = (html_dir / "interview" / "02-exercises.html").read_text(encoding="utf-8")
    assert exercises.checker_data_html() in built
    boxes = page.locator("form.grpolab-answer")
    assert boxes.count() == len(exercises.checker_data())
    assert page.locator("form.grpolab-answer[data-error]").count() == 0


def test_answer_boxes_say_right_and_wrong_like_the_python_checker(offline_page):
    tab = offline_page("interview/02-exercises")
    page = tab.page
    numeric = exercises.list_exercises("numeric")
    assert numeric
    for ex in numeric:
        for typed in (str(ex.answer), str(ex.wrong_answer), "banana"):
            res = exercises.check(ex.id, typed)
            shown, flag = _answer(page, ex.id, typed)
            mark = "✓ Right." if res.correct else "✗ Not yet."
            assert shown == f"{mark} {res.message}", (ex.id, typed, shown)
            assert flag == ("true" if res.correct else "false")
        assert _answer(page, ex.id, str(ex.answer))[1] == "true"
        assert _answer(page, ex.id, str(ex.wrong_answer))[1] == "false"
    ex = exercises.list_exercises("conceptual")[0]
    assert _answer(page, ex.id, ex.answer.upper())[0].startswith("✓ Right.")
    shown, flag = _answer(page, ex.id, ex.wrong_answer)
    expected = exercises.check(ex.id, ex.wrong_answer).message
    assert flag == "false" and shown == f"✗ Not yet. {expected}"
    tab.assert_clean()


def _normalized(text: str) -> str:
    """Without whitespace (wrapped words and table cells rejoin) and with straight quotes
    (Sphinx prints 'smart' ones)."""
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return re.sub(r"\s+", "", text)


def _latex_letters(latex: str) -> list[str]:
    """The ASCII letters and digits a typeset formula shows, in MathJax's drawing order.

    Command names are dropped (they draw symbols, or nothing), ``\\text{..}`` and
    ``\\mathrm{..}`` keep their words, and a superscript is drawn before the subscript of
    the same base.
    """
    s = re.sub(r"\\(text|mathrm|operatorname)\{([^{}]*)\}", r" \2 ", latex)
    s = re.sub(r"\\mathbb\s*(\w)", r" \1 ", s)
    s = re.sub(r"_(\{[^{}]*\}|\w)\^(\{[^{}]*\}|\w)", r"^\2_\1", s)
    s = re.sub(r"\\[A-Za-z]+", " ", s)
    return [c for c in s if c.isascii() and c.isalnum()]


def _shown(atoms: list[str], text: str) -> bool:
    """``atoms`` appear in order within a short stretch of ``text`` (glyphs of one formula)."""
    window = int(1.5 * len(atoms) + 3)
    for i, c in enumerate(text):
        if c != atoms[0]:
            continue
        j, k = i, 0
        while j < len(text) and j - i < window and k < len(atoms):
            k += text[j] == atoms[k]
            j += 1
        if k == len(atoms):
            return True
    return False


def _pdf_pages(page, path, paper: str) -> int:
    page.pdf(path=str(path), format=paper)
    info = subprocess.run([_need("pdfinfo"), str(path)], capture_output=True, text=True,
                          check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))


@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_one_page_sheet_prints_on_one_page_with_room_to_grow(offline_page, tmp_path, paper):
    """One page on A4 and on Letter, and still one page with about 35 formulas (the rows
    cloned in the page: the registry is growing); a sheet twice as long again spills over,
    so the page count can tell."""
    tab = offline_page("interview/04-one-page-sheet")
    page = tab.page
    assert _pdf_pages(page, tmp_path / "sheet.pdf", paper) == 1
    rows = page.locator("section#formulas tbody tr").count()
    grow = "n => { const b = document.querySelector('section#formulas tbody'); " \
           "const rows = [...b.children]; for (let i = 0; i < n; i++) " \
           "b.appendChild(rows[i % rows.length].cloneNode(true)); }"
    page.evaluate(grow, max(0, 35 - rows))
    assert page.locator("section#formulas tbody tr").count() >= 35
    assert _pdf_pages(page, tmp_path / "sheet35.pdf", paper) == 1, "no room for 35 formulas"
    page.evaluate(grow, 40)
    assert _pdf_pages(page, tmp_path / "sheet75.pdf", paper) > 1, "the page count cannot fail"
    tab.assert_clean()


def test_one_page_sheet_prints_with_its_formulas(offline_page, tmp_path):
    import random

    pdftotext = _need("pdftotext")
    tab = offline_page("interview/04-one-page-sheet")
    tab.assert_clean()
    page = tab.page
    pdf = tmp_path / "sheet.pdf"
    assert _pdf_pages(page, pdf, "A4") == 1
    raw = subprocess.run([pdftotext, "-raw", str(pdf), "-"], capture_output=True, text=True,
                         check=True).stdout
    flat = _normalized(raw)
    glyphs = "".join(c for c in raw if c.isascii() and c.isalnum())
    sheet = [f for f in FORMULAS if f.on_sheet]
    missed, shuffled_found, shuffled = [], 0, 0
    for f in sheet:
        if f.function:
            assert f.function in flat, f"{f.function} missing from the printed sheet"
        assert _normalized(f.meaning[:40]) in flat, f.meaning[:40]
        atoms = _latex_letters(f.latex)
        if not _shown(atoms, glyphs):
            missed.append(f.title)
        for trial in range(10):  # the check can fail: shuffled formulas are mostly not there
            other = atoms[:]
            random.Random(trial).shuffle(other)
            if other != atoms:
                shuffled += 1
                shuffled_found += _shown(other, glyphs)
    assert missed == [], f"formulas not found in the printed sheet: {missed}"
    assert shuffled_found <= 0.1 * shuffled, (shuffled_found, shuffled)
    for r in RECIPES:
        assert _normalized(r.name) in flat and _normalized(r.source) in flat, r.name
    for w in sheet_wrong_answers():
        assert _normalized(w["trap"][:30]) in flat, w["trap"][:30]
    # Printed, the navigation, the search box and the print TOC are gone.
    assert "Searchthebook" not in flat and "Contents" not in raw
