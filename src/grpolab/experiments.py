"""The remedy labs of book/labs/03-remedies.md, under one name (a facade).

The code lives in three modules, one job each:

- :mod:`grpolab.remedy_lab`: the training loop with a remedy plugged in (:class:`LabConfig`,
  the reward variants, :func:`run_lab`);
- :mod:`grpolab.remedy_items`: the 8 labs (:data:`ITEMS`), their probes and the resumable
  runner (:func:`run_item`);
- :mod:`grpolab.remedy_report`: aggregation, theory next to measurement, plots and the
  book's helpers (:func:`display_item`, :func:`compare`, ...).

``from grpolab import experiments`` gives all of them. To patch what the runner calls
(tests), patch the defining module, e.g. ``grpolab.remedy_items.run_lab``.

Derived in: book/labs/03-remedies.md.
"""

from __future__ import annotations

from grpolab.remedy_items import ITEMS, Item, config_key, run_item, run_probe, task_kwargs_of
from grpolab.remedy_lab import (
    REMEDIES,
    REWARDS,
    LabConfig,
    LengthBiasedReward,
    PartialCreditReward,
    make_task,
    merge_rollouts,
    run_lab,
)
from grpolab.remedy_report import (
    SIDE_METRIC,
    aggregate_item,
    arm_table,
    compare,
    display_item,
    dynamic_sampling_theory,
    load_results,
    plot_item,
    publish,
    reproduce_command,
    results_root,
    show_table,
    table_html,
)

__all__ = ["LabConfig", "REMEDIES", "REWARDS", "LengthBiasedReward", "PartialCreditReward",
           "make_task", "merge_rollouts", "run_lab", "Item", "ITEMS", "run_item",
           "aggregate_item", "plot_item", "dynamic_sampling_theory", "config_key",
           "results_root", "load_results", "arm_table", "compare", "publish",
           "reproduce_command", "display_item", "run_probe", "table_html", "show_table",
           "task_kwargs_of", "SIDE_METRIC"]
