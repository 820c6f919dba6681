"""What every lab shares: the tiny model's task and base config, the step budget, the G list,
where committed results live, and how a figure is saved.

The labs (:mod:`grpolab.labs.sweep`, :mod:`grpolab.labs.remedies`,
:mod:`grpolab.labs.pass_rates`) import these instead of each other.
"""

from __future__ import annotations

import os
from pathlib import Path

from grpolab.grpo.config import GRPOConfig
from grpolab.grpo.warmstart import WarmStartConfig

__all__ = ["TASK_KWARGS", "COMPLETIONS_PER_STEP", "GROUP_SIZES", "CENSUS_SEED", "TINY_BASE",
           "WEAK_WARMSTART_STEPS", "HARD_LEVELS", "HARD_OVERRIDES", "HARD_STEPS", "DR_GRPO",
           "FIGURE_WIDTH", "FIGURE_STYLE", "save_figure", "committed_results_dir"]

#: The task every tiny-model lab shares: sums of 1- to 4-digit numbers. The warm start sees
#: all four levels; each regime or remedy trains and evaluates on some of them.
TASK_KWARGS = {"digits": [1, 2, 3, 4], "operands": [2], "ops": "+", "n_train": 2000,
               "n_eval": 400, "seed": 0}

#: Completions per step of the tiny-model labs at a fixed budget: prompts per step = this / G.
COMPLETIONS_PER_STEP = 64

#: The group sizes the labs compare.
GROUP_SIZES = (2, 4, 8, 16, 32)

#: Seed of every lab's pass-rate census of the warm start (runs of any seed share it).
CENSUS_SEED = 12345

#: Supervised steps of the weaker warm start: from it, 2-digit sums are hard by their census
#: (most prompts pass less than 10% of the time, few never), which the standard warm start
#: (1500 steps, :data:`TINY_BASE`) does not give on any level (labs/README.md has the census
#: of every level at both).
WEAK_WARMSTART_STEPS = 1100

#: The prompts of the regime that is hard by measurement (2-digit sums) and the overrides
#: that start it from the weaker warm start (its census is checked by
#: tests/test_lab_numbers.py).
HARD_LEVELS = [2]
HARD_OVERRIDES = {"warmstart": {"steps": WEAK_WARMSTART_STEPS}}

#: GRPO steps the hard regime needs before its pass@1 moves (its runs start to learn after
#: about half of them; labs/05), and the length of the compute-axis runs.
HARD_STEPS = 512

#: The estimator the variance theory and its G* are exact for (book/theory/02): no std
#: division and a G-independent loss normaliser (Dr. GRPO). With it, G changes the
#: gradient's noise but not its mean, so runs at different G differ only in what G does.
DR_GRPO = {"scale_rewards": "none", "loss_type": "dr_grpo"}

#: The tiny model's base run: the warm start on :data:`TASK_KWARGS`, 100 steps of AdamW 5e-5,
#: GRPO on the first 500 training prompts, an evaluation every 20 steps of
#: :data:`COMPLETIONS_PER_STEP`. Presets and remedy items are overrides of it.
TINY_BASE = GRPOConfig(
    task="arithmetic", task_kwargs=dict(TASK_KWARGS), max_train_prompts=500,
    warmstart=WarmStartConfig(task="arithmetic", task_kwargs=dict(TASK_KWARGS)),
    steps=100, learning_rate=5e-5, eval_every=20 * COMPLETIONS_PER_STEP, eval_samples=4,
    device="cpu")


#: Every lab figure is 7.2 in wide, the book's text column at 100 dpi, so its PNG shows at
#: its own size on a desktop; text at 12 pt (ticks 11) stays legible there, and panels stack
#: rather than shrink (a phone shows the figure full size on a click).
FIGURE_WIDTH = 7.2
FIGURE_STYLE = {"font.size": 12, "axes.titlesize": 12, "legend.fontsize": 10,
                "xtick.labelsize": 11, "ytick.labelsize": 11, "figure.dpi": 100}


def save_figure(fig, out_dir: str | os.PathLike, name: str, dpi: int = 100) -> list[str]:
    """Write ``fig`` as ``name.png`` and ``name.svg`` in ``out_dir`` and close it.

    Each file is drawn in memory and written through :func:`grpolab._files.write_atomic`
    (a temporary file of an unpredictable name, then a rename, only onto a regular file or a
    new path), so an interrupted run never leaves half a plot and a planted link is never
    written through; the SVG carries no date, so reruns give identical files.
    """
    import io

    import matplotlib.pyplot as plt

    from grpolab._files import write_atomic

    out_dir = os.fspath(out_dir)
    paths = []
    try:
        for ext in ("png", "svg"):
            path = os.path.join(out_dir, f"{name}.{ext}")
            buf = io.BytesIO()
            try:
                fig.savefig(buf, format=ext, dpi=dpi,
                            metadata={"Date": None} if ext == "svg" else None)
                write_atomic(path, buf.getvalue())
            except OSError as exc:  # a full disk: one line, no half plot left behind
                raise OSError(exc.errno, f"could not write {path} ({exc.strerror or exc}); "
                              "free space and rerun") from None
            paths.append(path)
    finally:
        plt.close(fig)
    return paths


def committed_results_dir(relative: str, marker: str | None = None) -> str:
    """The committed results folder ``relative`` (e.g. ``labs/results/cpu-full``) of this
    checkout: found walking up from the working directory (a notebook or book chapter runs
    from its own folder), else next to the package's source checkout.

    ``marker``: a file the folder must hold (e.g. ``summary.json``). A missing folder is a
    FileNotFoundError that says how to make it.
    """
    from grpolab._paths import checkout_root

    starts = [Path.cwd().resolve(), checkout_root()]
    for start in starts:
        for base in (start, *start.parents):
            cand = base / relative
            if cand.is_dir() and (marker is None or (cand / marker).is_file()):
                return str(cand)
    what = f"{relative}/{marker}" if marker else relative
    raise FileNotFoundError(f"no {what} above {Path.cwd()} or in the grpolab checkout; the "
                            "lab's README (labs/README.md) says how to make it")
