"""No chapter opens a results file by hand: the book reads committed results through the one
reader (grpolab.labs.lab_results; its own tests are in test_lab_results.py).

A static scan of every code cell of book/**/*.md; quick, no build.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"

_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)

#: What reading a file by hand looks like in a cell, each with why it is refused.
HAND_READS = [
    (re.compile(r"\bjson\.loads?\("), "json.load: the checked readers type what they read"),
    (re.compile(r"\b(np|numpy)\.(load|loadtxt|genfromtxt|fromfile)\("), "np.load of a file"),
    (re.compile(r"(?<![\w.])open\("), "open(): a file opened by hand"),
    (re.compile(r"\bcsv\.(DictReader|reader)\("), "a CSV read by hand"),
    (re.compile(r"\b(pd|pandas)\.read_\w+\("), "a pandas read"),
    (re.compile(r"\bcommitted_results_dir\("), "a results folder found by hand"),
    (re.compile(r"[\"']labs[\"']\s*[/,]\s*[\"']results[\"']|Path\([\"']labs/results"),
     "a results path joined by hand"),
    (re.compile(r"census-d"), "a census file name built by hand"),
    (re.compile(r"\.(read_text|read_bytes)\("), None),  # only of a results-like file, below
]
_RESULTS_FILE = re.compile(r"\.(json|npy|csv)\b|results|RESULTS|LAB\b")


def code_cells(text: str) -> list[str]:
    """The source of every MyST ``{code-cell}`` of a page (its ``:tags:`` and front matter
    included; they match nothing below)."""
    return _CELL.findall(text)


def _code_lines(cell: str) -> list[str]:
    """The cell's lines without comments (a comment may name a file; only code reads one)."""
    out = []
    for line in cell.splitlines():
        code = re.sub(r"#.*$", "", line) if not re.search(r"[\"'][^\"']*#", line) else line
        if code.strip():
            out.append(code)
    return out


def hand_reads(text: str) -> list[str]:
    """Every line of a page's code cells that reads a results file by hand, with why."""
    found = []
    for cell in code_cells(text):
        for line in _code_lines(cell):
            for pattern, why in HAND_READS:
                if not pattern.search(line):
                    continue
                if why is None:  # read_text/read_bytes: refused on a results-like file only
                    if not _RESULTS_FILE.search(line):
                        continue
                    why = "read_text of a results file"
                found.append(f"{line.strip()}  <- {why}")
    return found


def book_pages() -> list[Path]:
    return sorted(p for p in BOOK.rglob("*.md") if "_build" not in p.parts)


def test_no_chapter_opens_a_results_file_by_hand():
    pages = book_pages()
    cells = sum(len(code_cells(p.read_text(encoding="utf-8"))) for p in pages)
    assert cells > 100, f"only {cells} code cells found: the scan measured nothing"
    found = {str(p.relative_to(ROOT)): hand_reads(p.read_text(encoding="utf-8")) for p in pages}
    assert {k: v for k, v in found.items() if v} == {}, (
        "read committed results through grpolab.labs.lab_results (load(name).summary(), "
        ".census(regime), .steps(), .json(name), remedy(item), benchmarks())")


def _page(*cells: str, prose: str = "") -> str:
    return prose + "".join(f"```{{code-cell}} ipython3\n:tags: [hide-input]\n{c}\n```\n\n"
                           for c in cells)


@pytest.mark.parametrize("code", [
    'sweep = json.load(open(os.path.join(RESULTS, "sweep.json")))',
    'cfg = json.loads((LAB / "sweep.json").read_text())["preset"]',
    "census = np.load(LAB / 'census-d1-2-3.npy')",
    'with open(folder / "steps.csv", encoding="utf-8") as f:\n    rows = list(f)',
    'steps = list(csv.DictReader(f))',
    'RESULTS = committed_results_dir("labs/results/cpu-full", "summary.json")',
    'LAB = checkout_root() / "labs" / "results" / "cpu-full"',
    'path = os.path.join(root, "labs", "results", "cpu-full", "summary.json")',
    'name = f"census-d{levels}.npy"',
    'doc = (LAB / "summary.json").read_text(encoding="utf-8")',
    'results = pd.read_csv(p)',
])
def test_the_scan_refuses_each_planted_hand_read(code):
    assert hand_reads(_page("import numpy as np", code)), code


def test_the_scan_passes_reader_calls_prose_comments_and_other_fences():
    page = _page(
        'lab = lab_results.load("cpu-full")\nsummary = lab.summary()\ncensus = lab.census("mixed")',
        "# the sweep's census-d1-2-3.npy, read by lab.census; np.load would skip the checks",
        'text = md.read_text(encoding="utf-8")  # a book page, not a result',
        'webbrowser.open(url)',
        prose="The sweep writes `labs/results/cpu-full/sweep.json`; `json.load(open(p))`.\n"
              "```bash\ncat labs/results/cpu-full/summary.json | python -c 'import json'\n```\n")
    assert hand_reads(page) == []
