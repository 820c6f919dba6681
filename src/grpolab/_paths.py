"""Where grpolab's own files are: the package folder and, in a source checkout, the repository.

Modules find the book, the committed lab results and the exercise workbook through these two
names instead of counting ``parents[...]`` from their own ``__file__``, so that moving a module
between subpackages cannot silently point it at the wrong folder.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def checkout_root() -> Path:
    """The repository root (``src/grpolab/..``/..) when grpolab runs from a source checkout.

    An installed wheel has no repository; then the current directory stands in for it.
    """
    root = PACKAGE_DIR.parents[1]
    return root if (root / "pyproject.toml").is_file() else Path.cwd()
