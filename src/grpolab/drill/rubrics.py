"""The conceptual drill items and mock-interview chains, read from ``rubrics.json``.

The texts are data (``src/grpolab/drill/rubrics.json``), not code. Each item has the
interviewer's question, a 30-second answer, 3–5 rubric points each linked to the book page
that backs it, and the trap answer with why it is wrong. A *chain* is one mock interview: an
opening question followed by follow-ups, as the cards chain them; a step is an item id, a
registry exercise (``exercise:ID``) or a randomized quiz question (``quiz:KIND``).

:func:`load` validates the file (shape, ids, step references) and raises ValueError with
one line naming what is wrong.

Derived in: book/interview/01-model-answers.md (the model answers these rubrics condense).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

__all__ = ["Chain", "Item", "RubricPoint", "Rubrics", "built_page", "load",
           "sheet_wrong_answers"]

#: Where ``grpolab book build`` writes the HTML pages, relative to the checkout.
BUILT_HTML = "book/_build/html"


def built_page(ref: str) -> str:
    """A book reference as the built page a reader opens: ``theory/06-normalization#x`` ->
    ``book/_build/html/theory/06-normalization.html#x`` (the anchor is kept when given)."""
    doc, _, anchor = ref.partition("#")
    return f"{BUILT_HTML}/{doc}.html" + (f"#{anchor}" if anchor else "")

FORMAT = "grpolab-drill-rubrics"
ITEM_KINDS = ("follow-up", "wrong-answer")


@dataclass(frozen=True)
class RubricPoint:
    """One point a strong answer must hit, and the book page that backs it: a docname, or
    ``docname#section-anchor`` to name the section."""

    point: str
    chapter: str


@dataclass(frozen=True)
class Item:
    """A conceptual question with its rubric."""

    id: str
    kind: str
    source: str
    topic: str
    question: str
    answer_30s: str
    rubric: tuple[RubricPoint, ...]
    trap: str
    why_wrong: str
    on_sheet: bool = False


@dataclass(frozen=True)
class Chain:
    """One mock interview: steps in order, the first being the opening question."""

    id: str
    title: str
    steps: tuple[str, ...]


@dataclass(frozen=True)
class Rubrics:
    """The whole file: topics (topic -> its main chapter), items by id, chains."""

    topics: dict[str, str]
    items: dict[str, Item]
    chains: tuple[Chain, ...]

    def chain(self, chain_id: str) -> Chain:
        """The chain with this id; ValueError naming the known ones otherwise."""
        for c in self.chains:
            if c.id == chain_id:
                return c
        raise ValueError(f"unknown chain {chain_id!r}; choose from "
                         f"{', '.join(c.id for c in self.chains)}")


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise ValueError(f"rubrics: {message}")


def parse(doc: dict) -> Rubrics:
    """Validate a decoded rubrics document and build :class:`Rubrics`."""
    from grpolab.drill import exercises, quiz

    _require(isinstance(doc, dict) and doc.get("format") == FORMAT,
             f"not a {FORMAT} file")
    _require(doc.get("version") == 1, f"unsupported version {doc.get('version')!r}")
    topics = doc.get("topics")
    _require(isinstance(topics, dict) and topics, "'topics' must map topic -> chapter")
    items: dict[str, Item] = {}
    for raw in doc.get("items", []):
        iid = raw.get("id", "?")
        for key in ("id", "kind", "source", "topic", "question", "answer_30s", "trap",
                    "why_wrong"):
            _require(isinstance(raw.get(key), str) and raw[key].strip(),
                     f"item {iid}: '{key}' must be a non-empty string")
        _require(iid not in items, f"duplicate item id {iid!r}")
        _require(raw["kind"] in ITEM_KINDS, f"item {iid}: kind must be one of {ITEM_KINDS}")
        _require(raw["topic"] in topics, f"item {iid}: unknown topic {raw['topic']!r}")
        points = raw.get("rubric", [])
        _require(isinstance(points, list) and 3 <= len(points) <= 5,
                 f"item {iid}: the rubric needs 3-5 points")
        rubric = []
        for p in points:
            _require(isinstance(p, dict) and isinstance(p.get("point"), str)
                     and isinstance(p.get("chapter"), str),
                     f"item {iid}: each rubric point needs 'point' and 'chapter'")
            rubric.append(RubricPoint(p["point"], p["chapter"]))
        items[iid] = Item(iid, raw["kind"], raw["source"], raw["topic"], raw["question"],
                          raw["answer_30s"], tuple(rubric), raw["trap"], raw["why_wrong"],
                          bool(raw.get("on_sheet", False)))
    _require(bool(items), "no items")
    known_exercises = {e.id for e in exercises.list_exercises("numeric")}
    chains = []
    for raw in doc.get("chains", []):
        cid = raw.get("id", "?")
        steps = raw.get("steps", [])
        _require(isinstance(steps, list) and steps, f"chain {cid}: no steps")
        _require(steps[0] in items, f"chain {cid}: the opening step must be a conceptual item")
        for s in steps:
            if s.startswith("exercise:"):
                _require(s[9:] in known_exercises, f"chain {cid}: no numeric exercise {s[9:]!r}")
            elif s.startswith("quiz:"):
                _require(s[5:] in quiz.KINDS, f"chain {cid}: no quiz kind {s[5:]!r}")
            else:
                _require(s in items, f"chain {cid}: unknown item {s!r}")
        chains.append(Chain(cid, str(raw.get("title", cid)), tuple(steps)))
    _require(bool(chains), "no chains")
    return Rubrics(dict(topics), items, tuple(chains))


@lru_cache(maxsize=1)
def load() -> Rubrics:
    """The package's rubrics (``grpolab/drill/rubrics.json``), validated."""
    text = resources.files("grpolab.drill").joinpath("rubrics.json").read_text(encoding="utf-8")
    return parse(json.loads(text))


def sheet_wrong_answers() -> list[dict[str, str]]:
    """The items marked ``on_sheet``: the five most common wrong answers, as trap and why."""
    return [{"id": i.id, "trap": i.trap, "why_wrong": i.why_wrong}
            for i in load().items.values() if i.on_sheet]
