"""One typed schema for every results file a G sweep writes, read through one checked reader.

Why: ``lab plot``, the sweep's reports and the book's chapters read the same four files
(``summary.json``, the ``regimes`` and ``gradient_noise`` sections in it,
``gradient_noise.json`` and ``compute_axis.json``). Read raw, a crafted or damaged file
ends in a ``KeyError``/``TypeError`` deep in matplotlib, or worse in a plot of strings or of
G = 2⁶² drawn without a word. Here each file is checked once, at the door, against a
:class:`~grpolab._files.Field` schema: a row without ``trace_variance``, rows that are
numbers, a list where an object belongs, a string where a number belongs or a G beyond
what ``GRPOConfig`` accepts is one :class:`~grpolab._files.CorruptFileError` (a
``ValueError``: the CLI prints one line and exits 2) that names the file and the field.

The schemas type what the readers use and leave other keys free (``extra_keys``): a newer
sweep may add fields without breaking an older reader, but no field a reader touches is
ever of the wrong type.

- :func:`read_sweep_summary`: ``summary.json`` (runs, regimes, gradient noise);
- :func:`read_gradient_noise`: ``gradient_noise.json`` (rows per regime);
- :func:`read_compute_axis`: ``compute_axis.json``;
- :func:`read_allocation_results` and :func:`read_allocation_verdicts`: the adaptive-allocation
  lab's ``results.json`` (its ``allocation_runs``) and ``verdicts.json``
  (labs/results/allocation, book/theory/14-adaptive-allocation.md);
- :func:`read_by_level`: ``by_level.json`` (design B's per-level pass@k and coverage,
  :mod:`grpolab.labs.design_b`);
- :func:`read_step_table`: ``steps.csv`` (every 5th training step of every run).

Each takes the file or the folder holding it. The chapters reach them through the one
reader of committed results by folder name, :mod:`grpolab.labs.lab_results`
(``load("cpu-full").summary()``), and ``grpolab book build`` checks every committed
results file with them before a page runs.

numpy-free beyond :mod:`grpolab._files`; no torch.
"""

from __future__ import annotations

import math
import os
import re

from grpolab._files import Field, check, read_json

__all__ = ["ALLOCATION_RESULTS", "ALLOCATION_VERDICTS", "BY_LEVEL", "COMPUTE_AXIS",
           "GRADIENT_NOISE", "KINDS", "MAX_G", "STEP_TABLE_KEYS", "SWEEP_SUMMARY",
           "read_allocation_results", "read_allocation_verdicts", "read_by_level",
           "read_compute_axis", "read_gradient_noise", "read_results", "read_step_table",
           "read_sweep_summary"]

#: The largest G a results file may hold: the largest ``num_generations`` GRPOConfig
#: accepts (``grpolab.grpo.config.MAX_COMPLETIONS_PER_STEP``, a layer above this module;
#: a test keeps the two equal).
MAX_G = 16384
#: Most regimes, runs and rows a results file may hold (the committed ones hold tens).
MAX_ITEMS = 100_000

_G = Field("int", 1, MAX_G)
_SHARE = Field("real", 0, 1)
_SHARE_OR_NULL = Field("real", 0, 1, nullable=True)
_NONNEG = Field("real", 0)
_NONNEG_OR_NULL = Field("real", 0, nullable=True)
_BY_G_SHARE = Field("map", items=_SHARE, keys=(1, MAX_G), max_items=MAX_ITEMS)

#: One run of a sweep, as ``summary.json`` lists it.
SWEEP_RUN = Field("object", extra_keys=True, fields={
    "regime": Field("str", max_items=200), "G": _G, "seed": Field("int", 0),
    "zero_variance_observed": _SHARE_OR_NULL, "zero_variance_predicted": _SHARE_OR_NULL,
    "initial_accuracy": Field("real", 0, 1, required=False, nullable=True),
    "final_accuracy": Field("real", 0, 1, required=False, nullable=True),
    "initial_sampled_accuracy": Field("real", 0, 1, required=False, nullable=True),
    "final_sampled_accuracy": Field("real", 0, 1, required=False, nullable=True),
    "grad_norm_mean": Field("real", 0, required=False, nullable=True),
    "completions": Field("int", 0, required=False),
    "warmstart_sha256": Field("str", required=False, max_items=128),
})

_VERDICT = Field("object", extra_keys=True, required=False, nullable=True, fields={
    "statement": Field("str", required=False),
    "trend": Field("object", extra_keys=True, required=False, nullable=True, fields={}),
})

#: One regime's section of ``summary.json`` (``regimes[name]``).
SWEEP_REGIME = Field("object", extra_keys=True, fields={
    "mode": Field("str", choices=("budget", "prompts"), required=False),
    "initial_accuracy": Field("real", 0, 1, required=False, nullable=True),
    "final_accuracy_mean_by_G": Field("map", items=_SHARE_OR_NULL, keys=(1, MAX_G),
                                      required=False),
    "final_accuracy_std_by_G": Field("map", items=_NONNEG_OR_NULL, keys=(1, MAX_G),
                                     required=False),
    "zero_variance_at_warm_start_theory": _BY_G_SHARE,
    "zero_variance_mean_abs_gap": Field("real", 0, 1, required=False, nullable=True),
    "verdict": _VERDICT, "verdict_greedy": _VERDICT,
})

#: One row of gradient-noise measurements at one G (``grpolab.grpo.measure.gradient_noise``).
NOISE_ROW = Field("object", extra_keys=True, fields={
    "G": _G, "trace_variance": _NONNEG, "noise_to_signal": _NONNEG_OR_NULL,
    "mean_gradient_norm_sq": Field("real", 0, required=False, nullable=True),
    "prompts_per_step": Field("int", 1, required=False),
    "batches": Field("int", 0, required=False),
    "zero_variance_fraction": Field("real", 0, 1, required=False, nullable=True),
    "gram": Field("list", required=False, items=Field("list", items=Field("real"))),
})

#: ``gradient_noise.json`` and ``summary.json``'s ``gradient_noise``: rows per regime.
GRADIENT_NOISE = Field("map", max_items=MAX_ITEMS,
                       items=Field("list", items=NOISE_ROW, max_items=MAX_ITEMS))

#: ``summary.json`` of a G sweep (``grpolab.labs.sweep.sweep.run_sweep``).
SWEEP_SUMMARY = Field("object", extra_keys=True, fields={
    "preset": Field("str", max_items=200),
    "runs": Field("list", items=SWEEP_RUN, max_items=MAX_ITEMS),
    "regimes": Field("map", items=SWEEP_REGIME, max_items=MAX_ITEMS),
    "gradient_noise": Field("map", required=False, max_items=MAX_ITEMS,
                            items=Field("list", items=NOISE_ROW, max_items=MAX_ITEMS)),
    "runs_finished": Field("int", 0, required=False),
    "runs_planned": Field("int", 0, required=False),
    "zero_variance_mean_abs_gap": Field("real", 0, 1, required=False, nullable=True),
})

_K = Field("int", 1, 2**31 - 1)
_PASS_AT_K = Field("map", items=_SHARE, keys=(1, 2**31 - 1), max_items=MAX_ITEMS)
_CHECKPOINT = Field("object", extra_keys=True, fields={
    "completions": Field("int", 0), "step": Field("int", 0), "pass_at_k": _PASS_AT_K,
    "greedy": Field("real", 0, 1, required=False, nullable=True),
    "pass_at_k_by_bin": Field("map", required=False, items=_PASS_AT_K),
})
_BEST_G = Field("object", extra_keys=True, fields={
    "best": _G, "tied": Field("list", items=_G),
    "means": Field("map", items=_SHARE, keys=(1, MAX_G), required=False),
})

#: One regime's section of ``compute_axis.json``.
AXIS_REGIME = Field("object", extra_keys=True, fields={
    "checkpoints": Field("list", items=Field("int", 0), max_items=MAX_ITEMS),
    "k": Field("list", items=_K, max_items=MAX_ITEMS),
    "prompts": Field("int", 0, required=False),
    "prompts_per_bin": Field("map", items=Field("int", 0), required=False),
    "curves": Field("map", keys=(1, MAX_G), items=Field(
        "map", items=Field("list", items=_CHECKPOINT, max_items=MAX_ITEMS))),
    "best_G": Field("map", items=_BEST_G, required=False),
    "final_trend_prompt_bootstrap": Field("object", extra_keys=True, required=False,
                                          fields={}),
    "final_trend": Field("object", extra_keys=True, required=False, fields={}),
    "crossing": Field("object", extra_keys=True, required=False, fields={}),
    "curvature_final": Field("object", extra_keys=True, required=False, fields={
        "vertex_G": Field("list", items=Field("real", 0, nullable=True))}),
    "g_star": Field("object", extra_keys=True, required=False, fields={
        "g_star": Field("real", 0, required=False),
        "notes": Field("list", items=Field("str"), required=False),
        "error": Field("str", required=False)}),
    "toy_g_star_by_checkpoint": Field("map", items=Field("real", 0, nullable=True),
                                      required=False),
})

#: ``compute_axis.json`` (``grpolab.labs.sweep.compute_axis``).
COMPUTE_AXIS = Field("object", extra_keys=True, fields={
    "preset": Field("str", max_items=200),
    "k": Field("list", items=_K, required=False),
    "bins": Field("list", items=Field("str"), required=False),
    "regimes": Field("map", items=AXIS_REGIME, max_items=MAX_ITEMS),
})

#: A difficulty level as a map key (the arithmetic task's levels are 1 to 25).
_LEVEL_KEYS = (1, 10_000)
_LEVEL_CHECKPOINT = Field("object", extra_keys=True, fields={
    "step": Field("int", 0), "completions": Field("int", 0),
    "by_level": Field("map", keys=_LEVEL_KEYS, items=Field("object", extra_keys=True, fields={
        "prompts": Field("int", 1), "pass_at_k": _PASS_AT_K})),
})
_SOLVED_POINT = Field("object", extra_keys=True, fields={
    "step": Field("int", 0), "completions": Field("int", 0),
    "by_level": Field("map", keys=_LEVEL_KEYS, items=Field("int", 0)),
})
#: One run of ``by_level.json``.
LEVEL_RUN = Field("object", extra_keys=True, fields={
    "G": _G, "seed": Field("int", 0), "samples": Field("int", 1),
    "checkpoints": Field("list", items=_LEVEL_CHECKPOINT, max_items=MAX_ITEMS),
    "solved": Field("list", items=_SOLVED_POINT, nullable=True, max_items=MAX_ITEMS),
    "training_prompts_by_level": Field("map", keys=_LEVEL_KEYS, items=Field("int", 0),
                                       required=False),
})
#: ``by_level.json`` (``grpolab.labs.design_b.level_results``): per run, held-out pass@k per
#: difficulty level at every checkpoint, and the distinct training prompts solved so far.
BY_LEVEL = Field("object", extra_keys=True, fields={
    "preset": Field("str", max_items=200),
    "levels": Field("list", items=Field("int", *_LEVEL_KEYS), max_items=MAX_ITEMS),
    "runs": Field("list", items=LEVEL_RUN, max_items=MAX_ITEMS),
    "runs_finished": Field("int", 0, required=False),
    "runs_planned": Field("int", 0, required=False),
})

#: What each file is (for messages), the top-level keys that say it is one, its schema.
_FILES = {
    "summary.json": ("a sweep summary written by 'grpolab lab sweep'",
                     ("preset", "runs", "regimes"), SWEEP_SUMMARY),
    "gradient_noise.json": ("gradient-noise measurements written by 'grpolab lab sweep'", (),
                            GRADIENT_NOISE),
    "compute_axis.json": ("a compute-axis record written by 'grpolab lab sweep'",
                          ("preset", "regimes"), COMPUTE_AXIS),
    "by_level.json": ("per-level pass@k written by 'python -m grpolab.labs.design_b'",
                      ("preset", "levels", "runs"), BY_LEVEL),
}
#: The file names that have a schema here.
KINDS = tuple(_FILES)


def read_results(path: str | os.PathLike, name: str | None = None):
    """The results file ``path`` (or ``path/name`` when ``path`` is a folder), checked
    against the schema of its kind; ``name`` (``summary.json``, ``gradient_noise.json``,
    ``compute_axis.json``, ``by_level.json``) defaults to the file's own name.

    Raises:
        FileNotFoundError: no such file.
        CorruptFileError: not that kind of file; the message names the file and the field.
    """
    path = os.fspath(path)
    if name is not None and os.path.isdir(path):
        path = os.path.join(path, name)
    kind = name or os.path.basename(path)
    if kind not in _FILES:
        raise ValueError(f"no results schema for {kind!r}; one of {', '.join(_FILES)}")
    what, keys, schema = _FILES[kind]
    doc = read_json(path, what, expect=dict, keys=keys)
    check(doc, schema, path)
    if kind == "summary.json":
        _check_regime_names(doc, path)
    return doc


def _check_regime_names(summary: dict, path: str) -> None:
    """Every run names a regime of the summary: a run filed under an unknown regime would
    be dropped from every plot and table in silence."""
    from grpolab._files import CorruptFileError

    known = summary["regimes"]
    names = ", ".join(list(known)[:5]) + (", ..." if len(known) > 5 else "")
    for i, run in enumerate(summary["runs"]):
        if run["regime"] not in known:
            raise CorruptFileError(path, f"field runs[{i}].regime is {run['regime']!r}, not one "
                                   f"of the file's regimes ({names or 'none'})")


def read_sweep_summary(path: str | os.PathLike) -> dict:
    """A sweep's ``summary.json`` (``path`` is the file or the sweep's folder), typed by
    :data:`SWEEP_SUMMARY`; see :func:`read_results`."""
    return read_results(path, "summary.json")


def read_gradient_noise(path: str | os.PathLike) -> dict:
    """A sweep's ``gradient_noise.json`` (the file or its folder), typed by
    :data:`GRADIENT_NOISE`; see :func:`read_results`."""
    return read_results(path, "gradient_noise.json")


def read_compute_axis(path: str | os.PathLike) -> dict:
    """A sweep's ``compute_axis.json`` (the file or its folder), typed by
    :data:`COMPUTE_AXIS`; see :func:`read_results`."""
    return read_results(path, "compute_axis.json")


# ----------------------------------------------------------------------------- allocation lab
_COUNT = Field("int", 0)
_BY_LEVEL_K = Field("map", max_items=100, items=Field("map", items=_SHARE, keys=(1, 2**31 - 1),
                                                       max_items=100))
#: One run of the adaptive-allocation lab, as ``results.json["allocation_runs"]`` lists it
#: (``grpolab.labs.remedies.report.allocation_runs``).
ALLOCATION_RUN = Field("object", extra_keys=True, fields={
    "arm": Field("str", max_items=200), "seed": Field("int", 0), "steps": _COUNT,
    "completions": _COUNT, "eval_samples": Field("int", 1),
    "initial_pass_at_k": _BY_LEVEL_K, "final_pass_at_k": _BY_LEVEL_K,
    "informative_groups_per_step": _NONNEG,
    "completions_by_level": Field("map", items=_COUNT, max_items=100),
    "census_pass_rate_by_level": Field("map", items=_SHARE, max_items=100),
    "zero_variance": Field("object", extra_keys=True, fields={
        "visits": _COUNT, "pairs": _COUNT, "zero_before": _COUNT, "zero_both": _COUNT,
        "zero_now": _COUNT, "persistence": _SHARE_OR_NULL, "base_rate": _SHARE_OR_NULL,
        "predicted": Field("real", 0, 1, nullable=True, required=False)}),
    "pool_persistence_at_G": Field("map", items=_SHARE, keys=(1, MAX_G), max_items=100),
})
#: The allocation lab's ``results.json``: a remedy item's results plus its runs.
ALLOCATION_RESULTS = Field("object", extra_keys=True, fields={
    "item": Field("str", choices=("allocation",)),
    "seeds": Field("list", items=Field("int", 0), max_items=MAX_ITEMS),
    "allocation_runs": Field("list", items=ALLOCATION_RUN, max_items=MAX_ITEMS),
})
_INTERVAL = Field("object", extra_keys=True, fields={
    "difference": Field("real", required=False), "mean": Field("real", required=False),
    "low": Field("real", nullable=True), "high": Field("real", nullable=True)})
#: The allocation lab's ``verdicts.json`` (``grpolab.labs.allocation_lab``): the fields the
#: book reads are typed; the rest is free.
ALLOCATION_VERDICTS = Field("object", extra_keys=True, fields={
    "experiment": Field("str", choices=("allocation",)),
    "steps": Field("int", 1), "completions": Field("int", 1),
    "compute_held_fixed": Field("str"),
    "levels": Field("map", max_items=100, items=Field("map", max_items=100, items=Field(
        "object", extra_keys=True, fields={"mean": Field("real")}))),
    "precondition": Field("object", extra_keys=True, fields={"met": Field("bool")}),
    "primary": Field("list", max_items=100, items=Field("object", extra_keys=True, fields={
        "rule": Field("str", max_items=200), "verdict": Field("str"),
        "interval": _INTERVAL})),
    "refuting_outcomes": Field("list", max_items=100, items=Field(
        "object", extra_keys=True, fields={"outcome": Field("str"), "observed": Field("bool"),
                                           "interval": _INTERVAL})),
    "predictions": Field("map", max_items=100, items=Field("object", extra_keys=True, fields={
        "verdict": Field("str")})),
})


def read_allocation_results(path: str | os.PathLike) -> dict:
    """The allocation lab's ``results.json`` (the file or its folder), typed by
    :data:`ALLOCATION_RESULTS`."""
    return _read_typed(path, "results.json", "the allocation lab's results (grpolab remedies "
                       "--item allocation)", ("item", "allocation_runs"), ALLOCATION_RESULTS)


def read_allocation_verdicts(path: str | os.PathLike) -> dict:
    """The allocation lab's ``verdicts.json`` (the file or its folder), typed by
    :data:`ALLOCATION_VERDICTS`."""
    return _read_typed(path, "verdicts.json", "the allocation lab's verdicts (python -m "
                       "grpolab.labs.allocation_lab)", ("experiment", "primary"),
                       ALLOCATION_VERDICTS)


def _read_typed(path: str | os.PathLike, name: str, what: str, keys: tuple[str, ...],
                schema: Field) -> dict:
    """The JSON object ``path`` (or ``path/name`` when ``path`` is a folder), with ``keys``,
    checked against ``schema``."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, name)
    doc = read_json(path, what, expect=dict, keys=keys)
    check(doc, schema, path)
    return doc


def read_by_level(path: str | os.PathLike) -> dict:
    """Design B's ``by_level.json`` (the file or its folder), typed by :data:`BY_LEVEL`; see
    :func:`read_results`."""
    return read_results(path, "by_level.json")


#: The columns that name a row of ``steps.csv``: which run (regime, G, seed) and which step.
STEP_TABLE_KEYS = ("regime", "G", "seed", "step")


def read_step_table(path: str | os.PathLike, columns=()) -> list[dict]:
    """A sweep's ``steps.csv`` (the file or its folder): one dict per row with ``regime``
    (str), ``G``, ``seed`` and ``step`` (ints, G within [1, MAX_G]) and each of ``columns``
    (a finite float, or None where the cell is empty: a quantity that step did not log).

    Raises:
        FileNotFoundError: no such file.
        CorruptFileError: a ragged row, a missing column (naming it and what the header has),
            or a cell that is not what its column needs (naming the row and the column).
    """
    from grpolab._files import CorruptFileError, read_csv

    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, "steps.csv")
    rows = read_csv(path, "a step table written by 'grpolab lab sweep' (steps.csv)")
    if not rows:
        raise CorruptFileError(path, "the file is empty: no header row")
    header = [c.strip() for c in rows[0]]
    missing = [c for c in (*STEP_TABLE_KEYS, *columns) if c not in header]
    if missing:
        raise CorruptFileError(path, f"no column {', '.join(missing)} (the header has "
                               f"{', '.join(header[:12]) or 'nothing'})")
    at = {c: header.index(c) for c in (*STEP_TABLE_KEYS, *columns)}
    out = []
    for n, row in enumerate(rows[1:], 2):
        if not any(c.strip() for c in row):
            continue
        rec: dict = {"regime": row[at["regime"]].strip()}
        for key, lo, hi in (("G", 1, MAX_G), ("seed", 0, None), ("step", 0, None)):
            cell = row[at[key]].strip()
            ok = re.fullmatch("[0-9]{1,12}", cell) is not None
            if not (ok and lo <= int(cell) and (hi is None or int(cell) <= hi)):
                raise CorruptFileError(path, f"row {n}, column {key} is {cell!r}, not an "
                                       f"integer >= {lo}" + (f" and <= {hi}" if hi else ""))
            rec[key] = int(cell)
        for c in columns:
            cell = row[at[c]].strip()
            if cell == "":
                rec[c] = None
                continue
            try:
                value = float(cell)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise CorruptFileError(path, f"row {n}, column {c} is {cell!r}, not a finite "
                                       "number")
            rec[c] = value
        out.append(rec)
    return out
