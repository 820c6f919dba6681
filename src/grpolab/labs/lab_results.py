"""The one reader of committed lab results, by name: what a chapter calls instead of opening files.

Why: a chapter that opens ``labs/results/...`` by hand (``json.load(open(...))``,
``np.load``, a census file name built from a regime) bypasses the checked readers, so a
damaged or foreign file ends in a traceback or, worse, in a wrong number on a page; and
each chapter rebuilt the same paths its own way. Here every committed results file is
reached by the name of its folder under ``labs/results/`` and read through the checked
readers of :mod:`grpolab.results` and :mod:`grpolab._files` (bounded, finite, typed; a
damaged file is one :class:`~grpolab._files.CorruptFileError` that names it).

Use (a chapter, a notebook, a test)::

    from grpolab.labs.lab_results import load, remedy, benchmarks

    lab = load("cpu-full")            # labs/results/cpu-full of this checkout
    lab.summary()                     # summary.json (read_sweep_summary)
    lab.sweep()["preset"]             # sweep.json: provenance and the preset as run
    lab.config("mixed")               # the preset's config with that regime's overrides
    lab.compute_axis()                # compute_axis.json (read_compute_axis)
    lab.gradient_noise()              # gradient_noise.json (read_gradient_noise)
    lab.steps()                       # steps.csv as rows of {column: text}
    lab.census("mixed")               # the regime's warm-start census (prompts × samples, 0/1)
    lab.census_inputs("mixed")        # what that census was made from (its sidecar's inputs)
    load("allocation").allocation_verdicts()  # a lab's own files, by its checked reader
    lab.json("verdicts.json")         # any other JSON object the folder holds, checked
    remedy("dynamic-sampling")        # labs/results/remedies/<item>/results.json, or None
    benchmarks()                      # benchmarks/results.json, or None
    summaries(), remedy_results()     # every committed summary / remedy result (the audit)

A new lab adds its files here (one method, its checked reader), not in its chapter.
``tests/test_book_reads_results.py`` fails if a chapter opens a results file by hand.

Used by: book/labs/01-g-sweep.md, 03-remedies.md, 05-compute-axis.md, 06-mechanism.md,
book/labs/08-coverage-pool.md, book/theory/09-loss-aggregation.md, 10-dapo.md, 13-entropy.md,
14-adaptive-allocation.md,
book/capstone/01-choosing-g.md, 02-choose-g-for-your-run.md,
book/interview/03-claim-audit.md, book/appendix/01-how-fast.md. No torch.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from grpolab import results as _checked
from grpolab._files import CorruptFileError, Field, read_csv, read_json, read_npy
from grpolab.labs.common import committed_results_dir

__all__ = ["LabResults", "benchmarks", "benchmarks_dir", "census_stem", "load", "remedy",
           "remedy_results", "results_root", "summaries"]

#: Where the committed results live, relative to the checkout.
RESULTS = "labs/results"


def census_stem(train_difficulties, overrides: Mapping | None = None) -> str:
    """The file stem of a sweep regime's census, ``census-d<levels>`` (``-warm<steps>`` when
    the regime has its own warm start). Regimes on the same prompts from the same starting
    policy share one census. The one naming rule: the sweep writes under it
    (:func:`grpolab.labs.sweep.sweep.census_path`) and the chapters read under it."""
    levels = "-".join(map(str, train_difficulties))
    warm = (overrides or {}).get("warmstart")
    tag = f"-warm{warm['steps']}" if isinstance(warm, Mapping) and "steps" in warm else ""
    return f"census-d{levels}{tag}"


def results_root() -> Path:
    """``labs/results`` of this checkout (found from the working directory, else beside the
    package's source checkout)."""
    return Path(committed_results_dir(RESULTS))


class LabResults:
    """One committed results folder (``labs/results/<name>``), every file through a checked
    reader. Methods read on each call (the files are small; nothing is cached that could
    go stale)."""

    def __init__(self, path: str | os.PathLike, name: str | None = None):
        self.path = Path(path)
        self.name = name or self.path.name

    def __repr__(self) -> str:
        return f"LabResults({self.name!r}, {str(self.path)!r})"

    def file(self, name: str) -> Path:
        """The path of ``name`` in this folder (for a caption or a command; not for opening)."""
        return self.path / name

    def has(self, name: str) -> bool:
        """Whether the folder holds the file ``name``."""
        return (self.path / name).is_file()

    # -------------------------------------------------------------- the sweep's files
    def summary(self) -> dict:
        """``summary.json`` of a sweep (:func:`grpolab.results.read_sweep_summary`)."""
        return _checked.read_sweep_summary(self.path)

    def compute_axis(self) -> dict:
        """``compute_axis.json`` (:func:`grpolab.results.read_compute_axis`)."""
        return _checked.read_compute_axis(self.path)

    def gradient_noise(self) -> dict:
        """``gradient_noise.json``: rows per regime
        (:func:`grpolab.results.read_gradient_noise`)."""
        return _checked.read_gradient_noise(self.path)

    def sweep(self) -> dict:
        """``sweep.json``: the preset as run (``preset``: ``config``, ``regimes``, ``seeds``,
        ``group_sizes``) and its provenance (version, commit, device, threads)."""
        return read_json(self.path / "sweep.json", "a sweep record written by 'grpolab lab "
                         "sweep'", keys=("preset",))

    def preset(self) -> dict:
        """The preset as run (``sweep.json``'s ``preset``)."""
        preset = self.sweep()["preset"]
        if not isinstance(preset, dict) or not isinstance(preset.get("config"), dict):
            raise CorruptFileError(str(self.path / "sweep.json"),
                                   "field preset is not a preset with a config")
        return preset

    def regime(self, name: str) -> dict:
        """The preset's regime ``name`` (its ``train_difficulties``, ``overrides``, ...)."""
        regimes = self.preset().get("regimes") or []
        for r in regimes:
            if isinstance(r, dict) and r.get("name") == name:
                return r
        known = ", ".join(str(r.get("name")) for r in regimes if isinstance(r, dict))
        raise KeyError(f"{self.name} has no regime {name!r} (it has: {known or 'none'})")

    def config(self, regime: str | None = None) -> dict:
        """The preset's config overrides, with regime ``regime``'s own on top when given."""
        preset = self.preset()
        if regime is None:
            return dict(preset["config"])
        return {**preset["config"], **(self.regime(regime).get("overrides") or {})}

    def steps(self) -> list[dict[str, str]]:
        """``steps.csv`` (every 5th step of every run) as rows of ``{column: text}``, as
        :class:`csv.DictReader` gives them."""
        rows = read_csv(self.path / "steps.csv", "a step log written by 'grpolab lab sweep'")
        if not rows:
            return []
        header, *body = rows
        return [dict(zip(header, row, strict=True)) for row in body]

    def census_file(self, regime: str | Mapping) -> Path:
        """Where the census of ``regime`` (a name or a preset regime) is kept."""
        spec = self.regime(regime) if isinstance(regime, str) else regime
        return self.path / (census_stem(spec["train_difficulties"], spec.get("overrides"))
                            + ".npy")

    def census(self, regime: str | Mapping) -> np.ndarray:
        """The warm-start census of ``regime`` (a name, or a regime as ``sweep.json`` lists
        it): a prompts × samples array of 0/1 rewards."""
        return read_npy(self.census_file(regime), "a census (prompts × samples)", ndim=2)

    def census_inputs(self, regime: str | Mapping) -> dict:
        """What the census of ``regime`` was made from (its sidecar ``.json``'s ``inputs``:
        ``train_difficulties``, ``max_train_prompts``, ...); ``{}`` when not recorded."""
        side = self.census_file(regime).with_suffix(".json")
        if not side.is_file():
            return {}
        inputs = read_json(side, "a census record").get("inputs", {})
        return inputs if isinstance(inputs, dict) else {}

    def allocation_results(self) -> dict:
        """The allocation lab's ``results.json`` (read_allocation_results)."""
        return _checked.read_allocation_results(self.path)

    def allocation_verdicts(self) -> dict:
        """The allocation lab's ``verdicts.json`` (read_allocation_verdicts)."""
        return _checked.read_allocation_verdicts(self.path)

    def by_level(self) -> dict:
        """Design B's ``by_level.json`` (read_by_level)."""
        return _checked.read_by_level(self.path)

    def json(self, name: str, what: str | None = None, *, keys: tuple[str, ...] = ()) -> dict:
        """Any other JSON object in the folder (``verdicts.json``, ``pass_rates.json``,
        ``census_by_level.json``), through the checked JSON reader; ``keys``: the top-level
        keys it must have."""
        return read_json(self.path / name, what or f"{self.name}/{name}", keys=keys)


def load(name: str, marker: str | None = None) -> LabResults:
    """The committed results folder ``labs/results/<name>`` of this checkout; ``marker``: a
    file it must hold. FileNotFoundError (that says how to make it) when absent."""
    return LabResults(committed_results_dir(f"{RESULTS}/{name}", marker), name)


def remedy(item: str) -> dict | None:
    """A remedy item's committed ``results.json`` (checked by
    :data:`grpolab.labs.remedies.report.RESULTS_RECORD`), or None when not measured yet."""
    from grpolab.labs.remedies.report import load_results

    return load_results(item)


#: What the audit needs of a committed summary: its runs (a sweep's ``summary.json`` has
#: more, :data:`grpolab.results.SWEEP_SUMMARY`; an older or partial one may have only these).
RUNS_SUMMARY = Field("object", extra_keys=True, fields={
    "runs": Field("list", items=_checked.SWEEP_RUN, max_items=_checked.MAX_ITEMS)})


def _committed(name: str, checkout: str | os.PathLike | None) -> tuple[Path, list[Path]]:
    """labs/results (of ``checkout``, else of this checkout) and the files called ``name``
    anywhere under it, except per-run folders (``runs/``, not committed)."""
    root = results_root() if checkout is None else Path(checkout) / RESULTS
    if not root.is_dir():
        return root, []
    return root, sorted(p for p in root.rglob(name) if "runs" not in p.relative_to(root).parts)


def summaries(checkout: str | os.PathLike | None = None) -> dict[str, dict]:
    """Every committed summary with runs, checked (each run typed by
    :data:`grpolab.results.SWEEP_RUN`), by its folder under labs/results (``"cpu-full"``,
    ``"design-c"``); a file that is not one is left out. ``checkout``: the checkout whose
    labs/results to read (default: this one). Used by: book/interview/03-claim-audit.md."""
    root, paths = _committed("summary.json", checkout)
    out = {}
    for path in paths:
        try:
            out[path.parent.relative_to(root).as_posix()] = read_json(
                path, "a sweep summary", keys=("runs",), schema=RUNS_SUMMARY)
        except (OSError, ValueError):
            continue
    return out


def remedy_results(checkout: str | os.PathLike | None = None) -> dict[str, dict]:
    """Every committed ``results.json`` with results, checked, by its folder under
    labs/results (``"remedies/beta"``); ``checkout`` as in :func:`summaries`.
    Used by: book/interview/03-claim-audit.md."""
    from grpolab.labs.remedies.report import RESULTS_RECORD

    root, paths = _committed("results.json", checkout)
    out = {}
    for path in paths:
        try:
            doc = read_json(path, "remedy results (grpolab remedies)", keys=("item", "results"),
                            schema=RESULTS_RECORD)
        except (OSError, ValueError):
            continue
        if doc["results"]:
            out[path.parent.relative_to(root).as_posix()] = doc
    return out


def benchmarks_dir() -> Path | None:
    """``benchmarks/`` above the working directory, else beside the package's source
    checkout (the folder with ``run.py``, whose table the appendix draws), or None."""
    from grpolab._paths import checkout_root

    here = Path.cwd().resolve()
    for base in (here, *here.parents, checkout_root()):
        if (base / "benchmarks" / "run.py").is_file():
            return base / "benchmarks"
    return None


def benchmarks() -> dict | None:
    """``benchmarks/results.json`` (:func:`benchmarks_dir`), checked, or None when there is
    none. Used by: book/appendix/01-how-fast.md."""
    folder = benchmarks_dir()
    if folder is None or not (folder / "results.json").is_file():
        return None
    return read_json(folder / "results.json", "benchmark results (python benchmarks/run.py)",
                     keys=("benchmarks", "machine"))
