"""The book: configuration, chapter structure, and the strict offline build."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grpolab._paths import PACKAGE_DIR
from grpolab.book import build as gbook
from grpolab.book.build import BookBuildError, build_book, build_book_once, default_book_dir

BOOK = default_book_dir()
SRC = PACKAGE_DIR
THEORY_STEMS = ["grpo-in-one-page", "baseline-variance", "zero-variance", "cost-of-g",
                "degenerate-groups", "normalization", "temperature", "reinforce-to-grpo",
                "loss-aggregation", "dapo"]
#: Theory chapters past the first ten, by their number in the file name.
NUMBERED_THEORY_STEMS = {11: "pass-at-k", 12: "kl", 13: "entropy"}


def _theory_files() -> list[Path]:
    return sorted((BOOK / "theory").glob("*.md"))


# ----------------------------------------------------------------------------------------
# Fast checks on the sources
# ----------------------------------------------------------------------------------------
def test_toc_picks_up_every_part_by_glob():
    toc = yaml.safe_load((BOOK / "_toc.yml").read_text())
    assert toc["format"] == "jb-book" and toc["root"] == "intro"
    parts = {p["caption"]: p["chapters"] for p in toc["parts"]}
    assert list(parts) == ["Theory", "Labs", "Capstone", "Interview prep", "Appendix"]
    for caption, folder in [("Theory", "theory"), ("Labs", "labs"), ("Capstone", "capstone"),
                            ("Interview prep", "interview"), ("Appendix", "appendix")]:
        assert parts[caption] == [{"glob": f"{folder}/*"}]


def test_config_is_strict_and_offline():
    cfg = yaml.safe_load((BOOK / "_config.yml").read_text())
    ex = cfg["execute"]
    assert ex["execute_notebooks"] in ("cache", "force")
    assert ex["allow_errors"] is False
    assert not ex.get("cache"), "the cache must live under the build folder (cold builds)"
    exts = cfg["sphinx"]["extra_extensions"]
    assert "sphinx-mathjax-offline" in exts and "grpolab.book.build" in exts
    assert cfg["launch_buttons"]["thebe"] is False


def test_every_required_theory_chapter_exists_in_order():
    names = [p.name for p in _theory_files()]
    for i, stem in enumerate(THEORY_STEMS, start=1):
        assert f"{i:02d}-{stem}.md" in names, (stem, names)
    for i, stem in NUMBERED_THEORY_STEMS.items():
        assert f"{i:02d}-{stem}.md" in names, (stem, names)


@pytest.mark.parametrize("path", _theory_files(), ids=lambda p: p.name)
def test_theory_chapter_has_every_part(path):
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\njupytext:"), "chapters are MyST notebooks with a jupytext header"
    assert "```{code-cell} ipython3\nsliders.show(" in text, "an interactive figure"
    assert re.search(r"simulate\.\w+_mc\(", text), "a Monte Carlo check through grpolab.simulate"
    assert ":::{admonition} What this means for choosing G" in text
    # pedagogy: a motivation before the first code cell, goals up front, a summary box
    head = text.split("```{code-cell}", 1)[0]
    assert ":::{admonition} What you will be able to do" in head, "state the goals up front"
    assert len(head.split(":::{admonition} What you will be able to do")[0].split("\n\n")) > 2, (
        "open with a concrete motivation before the goals")
    assert ":::{admonition} Summary" in text, "a summary box"
    exercises = text.split("## Exercises", 1)
    assert len(exercises) == 2, "an Exercises section"
    # sphinx-exercise: numbered exercises, each with a hidden (dropdown) solution, laddered
    labels = re.findall(r"^:::\{exercise\} (.+)\n:label: (\S+)$", exercises[1], re.M)
    solutions = re.findall(r"^:::\{solution\} (\S+)\n:class: dropdown$", exercises[1], re.M)
    assert 3 <= len(labels) <= 6, labels
    assert [lab for _, lab in labels] == solutions, "one hidden solution per exercise, in order"
    rungs = [title for title, _ in labels]
    assert rungs == sorted(rungs, key=["Numeric", "Derivation", "Design an experiment"].index)
    assert {"Numeric", "Derivation", "Design an experiment"} <= set(rungs), rungs
    assert text.rstrip().endswith("```{bibliography}\n:filter: docname in docnames\n```"), (
        "the chapter ends with its bibliography")


def _derived_in_references():
    refs = []
    modules = sorted((SRC / "theory").glob("*.py")) + [SRC / "advantages.py"]
    for path in modules:
        module = str(path.relative_to(SRC))
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r'(book/theory/[\w.-]+\.md)(?:,? ?\(?"([^"]+)")?', text):
            refs.append((module, m.group(1), m.group(2)))
    return refs


def test_derived_in_paths_point_at_existing_chapters_and_sections():
    refs = _derived_in_references()
    assert len(refs) > 20
    for module, rel, section in refs:
        path = BOOK / rel.removeprefix("book/")
        assert path.is_file(), f"{module}: {rel} does not exist"
        if section:
            headings = re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.M)
            assert any(h.startswith(section) for h in headings), (module, rel, section)


class _Script:
    def __init__(self, filename, body=""):
        self.filename, self.attributes = filename, {"body": body}


def test_drop_thebe_keeps_everything_else():
    context = {"script_files": [_Script("_static/doctools.js"),
                                _Script(None, 'const THEBE_JS_URL = "https://unpkg.com/x"'),
                                _Script("_static/sphinx-thebe.js"),
                                _Script("_static/grpolab-sliders.js")]}
    gbook._drop_thebe(None, "p", "page.html", context, None)
    assert [s.filename for s in context["script_files"]] == ["_static/doctools.js",
                                                             "_static/grpolab-sliders.js"]


def test_build_book_rejects_a_folder_without_config(tmp_path):
    with pytest.raises(FileNotFoundError, match="_config.yml"):
        build_book(tmp_path, tmp_path / "out")


def test_cli_reports_a_missing_book_in_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "grpolab", "book", "build", "--book",
                           str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("error: ")
    assert "Traceback" not in proc.stderr


# ----------------------------------------------------------------------------------------
# The build (once per session, into a fresh temporary folder: a cold build)
# ----------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def html_dir() -> Path:
    return build_book_once(BOOK).parent


@pytest.mark.slow
@pytest.mark.book
def test_book_builds_with_every_chapter(html_dir):
    assert (html_dir / "index.html").is_file()
    for part in ("theory", "labs", "capstone", "interview", "appendix"):
        for md in sorted((BOOK / part).glob("*.md")):
            assert (html_dir / part / f"{md.stem}.html").is_file(), f"{part}/{md.name} not built"
    nav = (html_dir / "intro.html").read_text(encoding="utf-8")
    for md in _theory_files():
        assert f'href="theory/{md.stem}.html"' in nav, f"{md.name} missing from the navigation"


@pytest.mark.slow
@pytest.mark.book
def test_built_pages_are_self_contained(html_dir):
    assert (html_dir / "_static" / "mathjax" / "tex-chtml.js").is_file()
    assert (html_dir / "_static" / "grpolab-sliders.js").is_file()
    for md in _theory_files():
        page = (html_dir / "theory" / f"{md.stem}.html").read_text(encoding="utf-8")
        assert 'class="grpolab-static-slider"' in page
        assert "Static slider" in page
        assert "application/vnd.jupyter.widget-view+json" not in page, "no kernel widgets"
        assert "_static/mathjax/tex-chtml.js" in page
        assert not re.search(r'<(script|link)[^>]+(src|href)="https?://', page), md.name
        assert "THEBE_JS_URL" not in page
        assert re.search(r'<img[^>]+src="\.\./_images/', page), f"{md.name}: no figure"


@pytest.mark.slow
@pytest.mark.book
def test_a_failing_cell_fails_the_build(tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    shutil.copy(BOOK / "_config.yml", book / "_config.yml")
    (book / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    (book / "intro.md").write_text(
        "---\njupytext:\n  text_representation:\n    format_name: myst\nkernelspec:\n"
        "  name: python3\n  display_name: Python 3\n---\n\n# Broken\n\n"
        "```{code-cell} ipython3\nraise RuntimeError('this cell fails')\n```\n")
    with pytest.raises(BookBuildError, match="warning"):
        build_book(book, tmp_path / "out", quiet=True)


def test_fingerprint_covers_the_exercise_data(tmp_path, monkeypatch):
    """The workbook's answer boxes come from drill/exercises.json: editing it must drop the
    execution cache, as editing a .py file does."""
    import grpolab._paths

    package = tmp_path / "grpolab"
    (package / "drill").mkdir(parents=True)
    (package / "drill" / "exercises.json").write_text("[]")
    monkeypatch.setattr(grpolab._paths, "PACKAGE_DIR", package)
    before = gbook.package_fingerprint()
    (package / "drill" / "exercises.json").write_text('[{"id": "x"}]')
    assert gbook.package_fingerprint() != before


def test_stale_execution_cache_is_dropped_when_grpolab_changes(tmp_path, monkeypatch):
    build = tmp_path / "_build"
    (build / ".jupyter_cache").mkdir(parents=True)
    gbook._drop_stale_cache(build)  # no stamp yet: cleared, stamp written
    assert not (build / ".jupyter_cache").exists()
    assert (build / ".grpolab-fingerprint").read_text() == gbook.package_fingerprint()
    (build / ".jupyter_cache").mkdir()
    gbook._drop_stale_cache(build)  # same code: kept
    assert (build / ".jupyter_cache").exists()
    monkeypatch.setattr(gbook, "package_fingerprint", lambda: "changed")
    gbook._drop_stale_cache(build)  # code changed: cleared
    assert not (build / ".jupyter_cache").exists()
