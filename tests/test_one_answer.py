"""One G* everywhere (issue 32): no reader-facing text gives the paper's leading-order
√(c₃/c₁) as the exact model's fixed-budget optimum, which is 1 + √(c₃/c₁)
(book/theory/02-baseline-variance.md, "The minibatch form and G*")."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: √(c₃/c₁) in the spellings the book and the rubrics use (LaTeX, Unicode, ASCII).
BARE = re.compile(r"\\sqrt\{c_3\s*/\s*c_1\}|√\(c₃/c₁\)|sqrt\(c3/c1\)")
#: "1 + " right before the root: the exact model's optimum.
EXACT_PREFIX = re.compile(r"1\s*\+\s*(\\,)?$")
#: Words that name the bare form as the paper's leading order (allowed within a paragraph).
NAMED = ("leading", "paper", "one less", "u^\\ast", "form=\"paper\"")


def bare_gstar_lines(text: str, window: int = 3) -> list[tuple[int, str]]:
    """Lines (1-based, text) giving √(c₃/c₁) without "1 + " and without naming it the
    paper's leading-order form within ``window`` lines of the same paragraph."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        for m in BARE.finditer(line):
            if EXACT_PREFIX.search(line[:m.start()]):
                continue
            lo, hi = max(0, i - window), min(len(lines), i + window + 1)
            if any(word in near for near in lines[lo:hi] for word in NAMED):
                continue
            found.append((i + 1, line.strip()))
    return found


def test_the_check_catches_a_bare_optimum_and_allows_the_named_forms():
    planted = "At a fixed budget the best group size is $G^* = \\sqrt{c_3/c_1}$.\n"
    assert bare_gstar_lines(planted) == [(1, planted.strip())]
    assert bare_gstar_lines("the optimum G* = √(c₃/c₁) is finite") != []
    assert bare_gstar_lines("$G^* = 1 + \\sqrt{c_3/c_1}$ at any budget") == []
    assert bare_gstar_lines("G* = 1 + √(c₃/c₁) (the paper's √(c₃/c₁) is its leading order)") == []


def test_no_page_or_rubric_gives_the_bare_form_as_the_exact_optimum():
    files = sorted((ROOT / "book").rglob("*.md")) + [ROOT / "src/grpolab/drill/rubrics.json"]
    files = [f for f in files if "_build" not in f.parts]
    assert len(files) > 20
    offenders = {str(f.relative_to(ROOT)): bad for f in files
                 if (bad := bare_gstar_lines(f.read_text(encoding="utf-8")))}
    assert not offenders, offenders


def test_playground_readout_and_labels_say_the_exact_form():
    js = (ROOT / "src/grpolab/book/static/grpolab-toy.js").read_text(encoding="utf-8")
    labels = re.findall(r'"[^"\n]*G\* = [^"\n]*\\u221a\(c\\u2083/c\\u2081\)[^"\n]*"', js)
    assert labels and all("1 + \\u221a" in label for label in labels), labels
