"""Where grpolab's own files are: the package folder and, in a source checkout, the repository.

Modules find the book, the committed lab results and the exercise workbook through these two
names instead of counting ``parents[...]`` from their own ``__file__``, so that moving a module
between subpackages cannot silently point it at the wrong folder.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def checkout_root() -> Path:
    """The repository root (``src/grpolab/..``/..) when grpolab runs from a source checkout.

    An installed wheel has no repository; then the current directory stands in for it.
    """
    root = PACKAGE_DIR.parents[1]
    return root if (root / "pyproject.toml").is_file() else Path.cwd()


# ------------------------------------------------------------------------------------------
# The one rule for output paths (issue 36, class 1)
# ------------------------------------------------------------------------------------------
#: Files that mark a folder as one kind of grpolab result, written directly inside it by
#: the command that owns it, in the order the kinds are told apart (a sweep folder also
#: holds a summary.json, so its own sweep.json decides).
RESULT_MARKERS: dict[str, tuple[str, ...]] = {
    "sweep": ("sweep.json",),                  # grpolab lab sweep
    "remedies": ("item.json", "results.json"),  # grpolab remedies (and its --publish copy)
    "pass-rates": ("pass_rates.json",),         # grpolab lab pass-rates
    "run": ("log.jsonl",),                      # grpolab lab train, and each run of the above
}
#: What each kind of result folder is called in a refusal.
KIND_NAMES = {"sweep": "a sweep's folder (lab sweep)", "remedies": "a remedy lab's folder "
              "(remedies)", "pass-rates": "a pass-rate measurement's folder (lab pass-rates)",
              "run": "a training run's folder (lab train, or one run of a sweep or remedy)"}
#: At most this many entries of an existing output folder are looked at for nested results.
_SCAN_LIMIT = 10_000


class OutputPathError(ValueError):
    """An output path a command may not own; printed as one line, exit 2."""


def result_kind(folder: str | os.PathLike) -> str | None:
    """Which kind of grpolab result ``folder`` holds (a key of :data:`RESULT_MARKERS`), or
    None for a folder no grpolab command has written a result into."""
    for kind, names in RESULT_MARKERS.items():
        if any(os.path.isfile(os.path.join(folder, name)) for name in names):
            return kind
    return None


def _home_folders() -> set[str]:
    """Every account's home folder on this machine, and ``$HOME``: none is an output
    folder (a sweep there would mix its files with the user's, and its lock block them)."""
    homes = {os.path.expanduser("~")}
    try:
        import pwd

        homes.update(p.pw_dir for p in pwd.getpwall())
    except (ImportError, KeyError, OSError):  # no pwd (Windows), or an NSS failure
        pass
    return {os.path.realpath(h) for h in homes if h and os.path.isabs(h)}


def _nearest_existing(full: str) -> str:
    while not os.path.lexists(full):
        parent = os.path.dirname(full)
        if parent == full:
            break
        full = parent
    return full


def _pathconf(folder: str, name: str, default: int) -> int:
    try:
        value = os.pathconf(folder, name)
    except (OSError, ValueError, AttributeError):
        return default
    return value if value and value > 0 else default


def check_path_length(path: str | os.PathLike, flag: str) -> str:
    """The absolute form of ``path``, refused (:class:`OutputPathError`) when a component
    is longer than the file system allows (``PC_NAME_MAX``) or the whole path longer than
    ``PC_PATH_MAX``, both asked of the nearest folder that exists, so that a too-long path
    is refused before a single folder of it is made."""
    text = os.fspath(path)
    full = os.path.abspath(text)
    existing = _nearest_existing(full)
    existing = existing if os.path.isdir(existing) else os.path.dirname(existing)
    name_max = _pathconf(existing, "PC_NAME_MAX", 255)
    path_max = _pathconf(existing, "PC_PATH_MAX", 4096)
    for part in full.split(os.sep):
        if len(os.fsencode(part)) > name_max:
            shown = part if len(part) <= 40 else part[:37] + "..."
            raise OutputPathError(f"{flag} {text}: the name {shown!r} has "
                                  f"{len(os.fsencode(part))} bytes, more than the {name_max} "
                                  "this file system allows; name a shorter folder")
    if len(os.fsencode(full)) >= path_max:
        raise OutputPathError(f"{flag}: the path has {len(os.fsencode(full))} bytes, more than "
                              f"the {path_max - 1} this file system allows; name a shorter path")
    return full


def check_output_folder(path: str | os.PathLike, kind: str | None, flag: str = "--out") -> None:
    """Refuse (:class:`OutputPathError`, one line naming ``flag``) an output folder a
    command of ``kind`` (a key of :data:`RESULT_MARKERS`, or None for a folder that holds
    no result of its own: a cache, a pool, the book's HTML) may not own.

    The rule, checked on the path as given and as it resolves, before any folder is made:

    - not the file-system root and not a home folder;
    - every component and the whole path within the file system's length limits;
    - for a result (``kind`` not None): not inside a folder that holds a result (a
      sweep's ``runs/`` or one of its run folders is no command's ``--out``: only the sweep
      writes there), not a folder that holds another kind of result (a run folder is not
      a sweep's ``--out``), and not over other results (a folder whose sub-folders are
      results, such as ``labs/results``), unless the folder is itself a result of ``kind``
      (a rerun resumes it).

    Why one place: every entry point that takes an output folder calls it (through
    :func:`grpolab.cli._checks.check_out_dir`), so no command can write somewhere another
    would refuse.
    """
    text = os.fspath(path)
    full = check_path_length(text, flag)
    real = os.path.realpath(full)
    if real == os.path.realpath(os.sep) or os.path.dirname(real) == real:
        raise OutputPathError(f"{flag} {text} is the file-system root; name a folder of its "
                              "own, such as runs/NAME")
    if real in _home_folders():
        raise OutputPathError(f"{flag} {text} is a home folder; name a folder of its own "
                              "inside it, such as runs/NAME")
    if kind is None:
        return
    if kind not in RESULT_MARKERS:
        raise ValueError(f"unknown kind of result {kind!r}")
    for where in dict.fromkeys((full, real)):
        above = os.path.dirname(where)
        while True:
            other = result_kind(above) if os.path.isdir(above) else None
            if other is not None:  # even of the same kind: a sweep in a sweep's runs/ folder
                raise OutputPathError(f"{flag} {text} lies inside {above}, which is "
                                      f"{KIND_NAMES[other]}; name a folder outside it")
            parent = os.path.dirname(above)
            if parent == above:
                break
            above = parent
    if not os.path.isdir(real):
        return
    own = result_kind(real)
    if own is not None and own != kind:
        raise OutputPathError(f"{flag} {text} is {KIND_NAMES[own]}, not {KIND_NAMES[kind]}; "
                              "name a new folder (a rerun of the same command resumes its own)")
    # a link inside (runs/, plots/, a summary.json) would take the writes out of the folder
    check_no_links(real, flag, depth=4, verb="writes")
    if own == kind:
        return
    try:
        with os.scandir(real) as entries:
            for n, entry in enumerate(entries):
                if n >= _SCAN_LIMIT:
                    break
                if entry.is_dir(follow_symlinks=False) and result_kind(entry.path):
                    raise OutputPathError(
                        f"{flag} {text} holds other results ({entry.path} is "
                        f"{KIND_NAMES[result_kind(entry.path)]}); name a folder of its own, "
                        f"such as {os.path.join(text, 'NEW')}")
    except PermissionError:
        return  # the writability check that follows names it


def check_output_file(path: str | os.PathLike, flag: str) -> None:
    """Refuse an output *file* path that is not a regular file or a new path (a device such
    as ``/dev/full``, a FIFO, a folder, a symbolic link), or is too long: the writer would
    replace or write through it. Its folder must exist or be creatable (not under a file)."""
    text = os.fspath(path)
    full = check_path_length(text, flag)
    if os.path.lexists(full):
        st = os.lstat(full)
        if stat.S_ISLNK(st.st_mode):
            raise OutputPathError(f"{flag} {text} is a symbolic link; name a regular file or "
                                  "a new path (the link and its target are left alone)")
        if not stat.S_ISREG(st.st_mode):
            raise OutputPathError(f"{flag} {text} is not a regular file (a device, a FIFO or "
                                  "a folder); name a regular file or a new path")
    folder = _nearest_existing(os.path.dirname(full))
    if not os.path.isdir(folder):
        raise OutputPathError(f"{flag} {text}: {folder} is a file, so no file can be made "
                              "under it")


def check_no_links(folder: str | os.PathLike, flag: str, *, depth: int = 2,
                   limit: int = 100_000, verb: str = "copies") -> None:
    """Refuse (:class:`OutputPathError`) a source folder whose files a command copies when
    it, or anything in it up to ``depth`` levels down, is a symbolic link: a copy must never
    follow a link out of its source (a pooled ``log.jsonl`` linked to a private file would
    be copied into ``--out``). A missing folder passes (nothing to copy yet)."""
    root = os.fspath(folder)
    if not os.path.lexists(root):
        return
    if os.path.islink(root):
        raise OutputPathError(f"{flag} {root} is a symbolic link; name the folder itself "
                              "(copies never follow links)")
    seen = 0
    stack = [(root, 0)]
    while stack:
        where, level = stack.pop()
        try:
            entries = list(os.scandir(where))
        except (NotADirectoryError, PermissionError):
            continue
        for entry in entries:
            seen += 1
            if seen > limit:
                return
            if entry.is_symlink():
                raise OutputPathError(f"{flag}: {entry.path} is a symbolic link; grpolab {verb} "
                                      "only the files inside the folder, never through a link: "
                                      "remove it (or the folder) and rerun")
            if level < depth and entry.is_dir(follow_symlinks=False):
                stack.append((entry.path, level + 1))
