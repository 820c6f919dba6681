"""The lab chapters type no measured numbers: every decimal figure in their prose is glued
from the committed results ({glue:text}), derived in math, or cited.

Prose is what remains of a page after removing the front matter, code cells and other
fenced blocks, math ($...$, $$...$$), inline code, MyST roles (glue, cite, doc, ...),
links, quotations of the cards ("..."), and arXiv identifiers. A *decimal number* is a
number with a decimal point (0.53), a percentage (85%) or a ratio (1.4×, 2–3×). What is
left over must be on the exempt list below, each entry with its reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = sorted([*BOOK.glob("labs/*.md"), *BOOK.glob("capstone/*.md")])

# (chapter, the exact number as written, a snippet of the prose around it, why it may stay)
EXEMPT: list[tuple[str, str, str, str]] = [
    ("labs/03-remedies.md", "20–40%", "which reports 20–40% more non-zero gradients",
     "cited: Knapsack RL, arXiv 2509.25849, abstract (the arXiv id is on the line above)"),
]

FENCE = re.compile(r"^(`{3,}|:{3,}).*?^\1[ \t]*$", re.S | re.M)
FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)
INLINE_MATH = re.compile(r"\$[^$\n]+\$")
ROLE = re.compile(r"\{[\w:.-]+\}`[^`]*`")
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\([^)\s]*\)")
QUOTE = re.compile(r"\"[^\"]*\"|“[^”]*”")
ARXIV = re.compile(r"arXiv[\s:]+\d{4}\.\d{4,5}")
SECTION = re.compile(r"§\s*\d+(?:\.\d+)*")
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:[–-]\d+(?:\.\d+)?)?[%×]"
                    r"|(?<![\w.])\d*\.\d+(?![\d.])")


def prose(text: str) -> str:
    """A chapter's text with everything that is not prose blanked (line numbers kept)."""
    def blank(m: re.Match) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    for pattern in (FRONT_MATTER, FENCE, DISPLAY_MATH, INLINE_MATH, ROLE, INLINE_CODE, LINK,
                    QUOTE, ARXIV, SECTION):
        text = pattern.sub(blank, text)
    return text


def typed_numbers(text: str, name: str = "") -> list[tuple[int, str, str]]:
    """(line, number, context) of every decimal number in ``text``'s prose that is not
    exempt."""
    found = []
    clean = prose(text)
    lines = text.splitlines()
    for m in NUMBER.finditer(clean):
        line = clean.count("\n", 0, m.start())
        number = m.group(0).strip()
        context = lines[line].strip()
        if any(name == c and number == n and snip in context for c, n, snip, _ in EXEMPT):
            continue
        found.append((line + 1, number, context))
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_lab_chapter_has_no_typed_numbers(path: Path) -> None:
    name = f"{path.parent.name}/{path.name}"
    found = typed_numbers(path.read_text(encoding="utf-8"), name)
    assert not found, f"{name}: typed numbers (glue them or cite them):\n" + "\n".join(
        f"  line {ln}: {num!r} in {ctx!r}" for ln, num, ctx in found)


def test_exempt_entries_are_used() -> None:
    """An exemption that no longer matches anything is stale and must go."""
    texts = {f"{p.parent.name}/{p.name}": p.read_text(encoding="utf-8") for p in CHAPTERS}
    for chapter, number, snippet, reason in EXEMPT:
        assert reason, f"exemption {number!r} in {chapter} has no reason"
        clean = prose(texts[chapter])
        hit = any(number == m.group(0).strip() and snippet in texts[chapter].splitlines()[
            clean.count("\n", 0, m.start())] for m in NUMBER.finditer(clean))
        assert hit, f"stale exemption {number!r} ({snippet!r}) in {chapter}"


@pytest.mark.parametrize("planted,caught", [
    ("The final accuracy was 0.53 here.", True),
    ("About 85% of completions.", True),
    ("It grew 1.4× over the run.", True),
    ("It grew 2–3× over the run.", True),
    ("A model of 134.5M parameters.", True),
    ("Version v1.2.3 and file results.json.", False),
    ("Glued: {glue:text}`x:.3f` here.", False),
    ("Math $p = 0.5$ and code `lr=3e-5`.", False),
    ('The card says "G = 16 beats G = 8 by 2–3%".', False),
    ("See arXiv 2503.14476, Eq. 11, and {cite}`arxiv:2402.03300`.", False),
    ("```{code-cell} ipython3\nx = 0.53\n```\n", False),
    ("Integers such as 64 = 8 × 8 and G = 32 are derived.", False),
])
def test_the_check_catches_a_planted_number(planted: str, caught: bool) -> None:
    assert bool(typed_numbers(planted)) is caught


def _committed_sweeps() -> list[tuple[Path, dict]]:
    import json

    results = BOOK.parent / "labs" / "results"
    return [(p.parent, json.loads(p.read_text())) for p in sorted(results.glob("*/sweep.json"))
            if (p.parent / "summary.json").is_file()]


def _warm_starts(sweep_dir: Path, regime: str | None = None) -> set[str]:
    import json

    runs = json.loads((sweep_dir / "summary.json").read_text())["runs"]
    return {r["warmstart_sha256"] for r in runs if regime is None or r["regime"] == regime}


def census_verdicts(sweep_dir: Path, preset) -> dict[str, dict]:
    """Per regime of a committed sweep: its census mean pass rate, the shares of prompts
    below 0.1 and at 0, the G values with finished runs, and whether its name calls it hard."""
    import json

    import numpy as np

    from grpolab.labs.sweep.sweep import census_path

    runs = json.loads((sweep_dir / "summary.json").read_text())["runs"]
    out = {}
    for regime in preset.regimes:
        p = np.load(census_path(str(sweep_dir), regime)).mean(1)
        out[regime.name] = {"mean": float(p.mean()), "below_0.1": float((p < 0.1).mean()),
                            "zero": float((p == 0).mean()),
                            "called_hard": "hard" in regime.name.split("-"),
                            "G": sorted({int(r["G"]) for r in runs if r["regime"] == regime.name})}
    return out


#: The issue's definitions: a regime called hard must have a census mean p of at most 0.2,
#: and the book needs one regime below 0.15 with runs at every G of its preset.
HARD_MEAN_MAX = 0.2
HARD_REGIME_MEAN = 0.15


def hard_regime_problems(verdicts: dict[str, dict]) -> list[str]:
    """What is wrong with a sweep's regime names against their censuses (empty: nothing)."""
    return [f"{name} is called hard but its census mean p is {v['mean']:.3f}"
            for name, v in verdicts.items() if v["called_hard"] and v["mean"] > HARD_MEAN_MAX]


def test_no_regime_is_called_hard_against_its_census_and_a_hard_one_ran_every_G():
    from grpolab.labs.sweep.presets import PRESETS

    found_hard = []
    for sweep_dir, sweep in _committed_sweeps():
        preset = PRESETS[sweep["preset_name"]]
        verdicts = census_verdicts(sweep_dir, preset)
        assert not hard_regime_problems(verdicts), sweep_dir.name
        found_hard += [(sweep_dir.name, name) for name, v in verdicts.items()
                       if v["mean"] < HARD_REGIME_MEAN and v["G"] == sorted(preset.group_sizes)
                       and len(v["G"]) >= 5]
    assert found_hard, "no committed regime with census mean p < 0.15 has runs at every G"


def test_the_hard_name_check_fails_on_a_planted_easy_regime():
    easy = {"hard": {"mean": 0.48, "called_hard": True}, "3-digit": {"mean": 0.48,
                                                                      "called_hard": False}}
    assert hard_regime_problems(easy) == [
        "hard is called hard but its census mean p is 0.480"]
    honest = {"hard": {"mean": 0.08, "called_hard": True}}
    assert hard_regime_problems(honest) == []


def test_committed_remedy_results_are_complete_and_share_the_reference_warm_starts():
    """Every remedy item's committed results.json has every arm for every seed, records the
    commit that made it, and came from the warm starts of the committed reference sweeps (the
    sha256 a fresh clone recomputes): the standard one of cpu-full, and for the hard arms the
    weaker one of cpu-compute's hard regime. So the lab chapters describe one model."""
    import json

    from grpolab.labs.remedies.items import ITEMS

    results = BOOK.parent / "labs" / "results"
    reference = _warm_starts(results / "cpu-full")
    weak = _warm_starts(results / "cpu-compute", "hard")
    assert len(reference) == 1 and len(weak) == 1 and reference != weak
    for name, item in ITEMS.items():
        folder = results / "allocation" if name == "allocation" else results / "remedies" / name
        res = json.loads((folder / "results.json").read_text())
        assert res["item"] == name and len(res["git_commit"]) == 40
        starts = res.get("warmstart_sha256")
        starts = {starts} if isinstance(starts, str) else set(starts or ())
        assert reference <= starts <= reference | weak, name
        assert sorted(res["results"]) == sorted(item.arms), name
        for arm, r in res["results"].items():
            assert r["final_accuracy"]["n"] == len(res["seeds"]), (name, arm)
