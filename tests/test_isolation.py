"""The suite's own hygiene: tests write only under pytest's temp folder (see conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def test_cache_and_temp_folders_are_private(tmp_path_factory, private_cache_and_temp_dirs):
    base = tmp_path_factory.getbasetemp().resolve()
    assert Path(os.environ["GRPOLAB_CACHE"]).resolve().is_relative_to(base)
    # what build_book_once does for its output folder
    book_out = Path(tempfile.mkdtemp(prefix="grpolab-book-"))
    assert book_out.resolve().is_relative_to(base)
    book_out.rmdir()
    # subprocesses (the CLI, notebook kernels) inherit it too
    child = subprocess.run([sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"],
                           capture_output=True, text=True, timeout=60, check=True)
    assert Path(child.stdout.strip()).resolve().is_relative_to(base)


def test_smollm2_cache_is_not_in_home():
    from grpolab.models import smollm2  # imports no torch until a model is loaded

    assert Path(smollm2.cache_dir()).resolve().is_relative_to(
        Path(os.environ["GRPOLAB_CACHE"]).resolve())
    assert not Path(smollm2.cache_dir()).resolve().is_relative_to(Path.home() / ".cache")
