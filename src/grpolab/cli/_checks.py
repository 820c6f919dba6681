"""Checks that every command makes before it starts work: output folder, threads, lists.

They read the file system and the machine but write nothing, so a refused command leaves
no trace; each raises a ValueError naming the flag (one line, exit 2 in
:func:`grpolab.cli.main.main`). Range checks of config fields live in
:meth:`grpolab.grpo.config.GRPOConfig.validate`, the device in
:func:`grpolab.models.device.check_device`; these are about the command.
"""

from __future__ import annotations

import os

__all__ = ["CLIError", "answer_lines", "check_model_cache", "check_out_dir", "check_threads",
           "check_distinct", "open_answers"]


class CLIError(Exception):
    """Raised by subcommands for bad input; printed as one line, exit code 2
    (:func:`grpolab.cli.main.main`)."""


def check_out_dir(path: str | os.PathLike | None, flag: str = "--out",
                  kind: str | None = None) -> None:
    """Refuse an output folder that is a file, lies under a file, or cannot be written, and
    one the command may not own (:func:`grpolab._paths.check_output_folder`: the root, a
    home folder, a path too long, a folder inside or over another ``kind`` of result)."""
    if path is None:
        return
    text = os.fspath(path)
    if isinstance(text, bytes) or not text.strip():
        raise ValueError(f"{flag} must name a folder, got {text!r}")
    try:  # a name that is not UTF-8 (bytes kept as surrogates) breaks every log and summary
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{flag} {ascii(os.fsencode(text))[2:-1]}: the path is not valid "
                         "UTF-8; name a folder whose path is UTF-8 text") from None
    from grpolab._paths import check_output_folder

    full = os.path.abspath(text)
    if os.path.exists(full) and not os.path.isdir(full):
        raise ValueError(f"{flag} {text} is a file, not a folder; name a folder (it is created "
                         "if missing)")
    ancestor = full
    while not os.path.exists(ancestor):
        parent = os.path.dirname(ancestor)
        if parent == ancestor:
            break
        ancestor = parent
    if not os.path.isdir(ancestor):
        raise ValueError(f"{flag} {text}: {ancestor} is a file, so no folder can be made under it")
    check_output_folder(text, kind, flag)
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"{flag} {text}: {ancestor} is not writable; name a folder you can "
                         "write to")


def check_threads(threads: int | None, flag: str = "--threads") -> None:
    """Torch threads: an integer from 1 to the number of CPU cores of this machine."""
    if threads is None:
        return
    cores = os.cpu_count() or 1
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= cores:
        raise ValueError(f"{flag} must be an integer from 1 to {cores} (the CPU cores here), "
                         f"got {threads!r}")


def check_distinct(values, flag: str) -> None:
    """A list option that names the same value twice would count it twice."""
    if values is not None and len(set(values)) != len(values):
        twice = sorted({v for v in values if list(values).count(v) > 1})
        raise ValueError(f"{flag} lists {', '.join(map(str, twice))} more than once")


def answer_lines(stream, name: str):
    """The lines of an answers stream (``--answers FILE``, a pipe, stdin), bounded by
    :func:`grpolab._files.read_lines`, with a failure to *read* it (an I/O error half-way,
    ``--answers /proc/self/mem``) said as what it is, naming the file, instead of surfacing
    later as some other failure (it was reported as "cannot save the progress file None")."""
    from grpolab._files import read_lines

    lines = read_lines(stream, name, "an answers file")
    while True:
        try:
            line = next(lines)
        except StopIteration:
            return
        except OSError as exc:
            raise CLIError(f"--answers: cannot read {name} ({exc.strerror or exc}); nothing "
                           "more was answered") from None
        yield line


def open_answers(answers: str | None, prompt: str = ""):
    """Where a practice session (``grpolab quiz``, ``grpolab drill``) reads its answers:
    ``(lines, handle, interactive)``. The lines of the file ``--answers`` names (``handle``:
    the open file, for the caller to close) or of stdin (``-``, or stdin not a terminal),
    lines starting with ``#`` skipped as comments; else typed answers, ``input(prompt)``
    until end of input (Ctrl-D), and ``interactive`` True. A file that cannot be opened is
    one line naming it."""
    import sys

    if answers is not None and answers != "-":
        try:
            handle = open(answers, encoding="utf-8")  # noqa: SIM115 - the caller closes it
        except OSError as exc:
            raise CLIError(f"--answers: cannot read {answers!r}: {exc.strerror}") from None
        return _uncommented(answer_lines(handle, answers)), handle, False
    if answers == "-" or not sys.stdin.isatty():
        return _uncommented(answer_lines(sys.stdin, "stdin")), None, False
    return _typed(prompt), None, True


def _uncommented(lines):
    for line in lines:
        if not line.lstrip().startswith("#"):
            yield line


def _typed(prompt: str):
    """Interactive answers: ``input(prompt)``; end of input (Ctrl-D) ends the iterator."""
    while True:
        try:
            yield input(prompt)
        except EOFError:
            return


def check_model_cache(model: str) -> None:
    """For SmolLM2 (``model == "smollm2"``): its cache folder can be written, or is already
    complete (:func:`grpolab.models.smollm2.check_cache_writable`), said at the door,
    before torch is imported, not after the first load has dequantized for 15 s."""
    if model == "smollm2":
        from grpolab.models.smollm2 import check_cache_writable

        check_cache_writable()
