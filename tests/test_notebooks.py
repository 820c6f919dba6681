"""Every lab notebook runs top to bottom on the committed results, headless, offline.

The notebooks are thin drivers of the package, so an API they call that moves breaks them;
nothing else would notice. Cells tagged ``trains`` start a training run when a reader clicks
(minutes on a CPU): the test runs their import lines only, so a renamed function still fails
here, and leaves the training to the reader.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

LABS = Path(__file__).resolve().parents[1] / "labs"
NOTEBOOKS = sorted(LABS.glob("*.ipynb"))
IMPORT = re.compile(r"^(?:from \S+ import .+|import \S+.*)$", re.M)


def runnable(nb):
    """A copy of ``nb`` whose ``trains`` cells keep only their import lines."""
    import copy

    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code" and "trains" in cell.metadata.get("tags", []):
            cell.source = "\n".join(IMPORT.findall(cell.source))
    return nb


def test_a_trains_cell_keeps_its_imports_and_drops_the_run():
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from grpolab.grpo.backends import train\ns = train(cfg, 'out')",
        metadata={"tags": ["trains"]})])
    assert runnable(nb).cells[0].source == "from grpolab.grpo.backends import train"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_lab_notebook_runs(path: Path, tmp_path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = runnable(nbformat.read(path, as_version=4))
    # run from labs/ (where a reader opens it), so committed_results_dir finds the results
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(LABS)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, f"{path.name}: {errors[0]['ename']}: {errors[0]['evalue']}"
