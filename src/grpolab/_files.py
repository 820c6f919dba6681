"""One checked reader for every file grpolab reads, one atomic writer, and checked folders.

Why: a reader that trusts its input fails in ways a user cannot act on. ``/dev/zero`` is
read until the machine runs out of memory; a deeply nested document is a
``RecursionError``; a 401-digit integer an ``OverflowError``; a field of the wrong type a
``TypeError`` three calls later. Every reader here refuses such input *before* the caller
sees it, with one :class:`CorruptFileError` (a ``ValueError``, so the CLI prints one line
and exits 2) that names the file, the field and what was expected.

What every reader checks, in this order:

1. the path is a regular file (not a folder, a FIFO or a device such as ``/dev/zero``) of at
   most ``max_bytes`` (:data:`MAX_FILE_BYTES` by default), checked on the open file before a
   byte is read, and never read past ``max_bytes`` even if it grows meanwhile;
2. text is UTF-8 (a leading byte-order mark is dropped);
3. JSON nests at most ``max_depth`` (:data:`MAX_DEPTH`) levels, its integers lie within
   ±:data:`MAX_INT` and its numbers are finite (no ``NaN``, ``Infinity`` or ``1e400``);
4. optionally, a :class:`Field` schema: types and ranges per field, unknown keys refused
   with the nearest valid key.

A missing file is a ``FileNotFoundError`` (callers often treat it as "not made yet"); other
failures to open are ``OSError`` with the operating system's one-line reason.

Writes go through :func:`write_atomic`: a temporary file beside the target, fsync, then
``os.replace``, so a reader, a full disk or a kill sees the old file or the new one.

Folders named by environment variables (``GRPOLAB_CACHE`` and the others in
:data:`ENV_FOLDERS`) are checked by :func:`env_folder` / :func:`check_environment`, which
name the *variable* when it points at the wrong kind of thing.

numpy only (never torch): the core, the drill and the engine all read through here.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "ENV_CHOICES",
    "ENV_FOLDERS",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INT",
    "MAX_LINE_CHARS",
    "CorruptFileError",
    "NotRegularFileError",
    "EnvironmentSettingError",
    "Field",
    "JSONSyntaxError",
    "NonFiniteNumberError",
    "check",
    "check_environment",
    "check_writable_target",
    "env_folder",
    "folder_problem",
    "json_text",
    "parse_csv",
    "parse_json",
    "parse_jsonl",
    "read_bytes",
    "read_csv",
    "read_json",
    "read_jsonl",
    "read_lines",
    "read_npy",
    "read_text",
    "write_atomic",
]

#: Largest file a reader accepts unless the caller states another bound (256 MiB).
MAX_FILE_BYTES = 256 * 2**20
#: Deepest nesting of a JSON document: grpolab's own files nest at most 6 levels.
MAX_DEPTH = 64
#: Largest magnitude of a JSON integer: int64, so every integer converts to numpy exactly.
MAX_INT = 2**63 - 1
#: Longest line of an answers stream (drill, quiz): a typed answer is a few hundred characters.
MAX_LINE_CHARS = 2**16


class CorruptFileError(ValueError):
    """A file that cannot be used; the message names it, says what is wrong and what to do.

    ``CorruptFileError(path, problem, remedy)`` prints as ``"{path}: {problem}; {remedy}"``.
    ``remedy=None`` says "delete it and rerun the command that wrote it" (right for
    grpolab's own artefacts); ``remedy=""`` adds no remedy (the problem says it all).
    """

    def __init__(self, path, problem: str, remedy: str | None = None):
        self.path = os.fspath(path)
        self.problem = problem
        self.remedy = (f"delete {self.path} and rerun the command that wrote it"
                       if remedy is None else remedy)
        super().__init__(f"{self.path}: {problem}" + (f"; {self.remedy}" if self.remedy else ""))


class JSONSyntaxError(CorruptFileError):
    """Text that is not JSON at all (as opposed to JSON that breaks a bound or a schema):
    a caller that accepts several formats tries the next one on this error only."""


# ------------------------------------------------------------------------------------------
# Bytes and text
# ------------------------------------------------------------------------------------------
def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device (such as /dev/zero)"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def _read(path, what: str, max_bytes: int, remedy: str | None) -> bytearray:
    """The bytes of a regular file of at most ``max_bytes``, checked before reading."""
    path = os.fspath(path)
    # O_NONBLOCK: opening a FIFO must not wait for a writer before we can refuse it.
    flags = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
             | getattr(os, "O_BINARY", 0))
    fd = os.open(path, flags)  # FileNotFoundError, PermissionError: the caller's to report
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CorruptFileError(path, f"is {_kind(st.st_mode)}, not a regular file, so not "
                                   f"{what}", f"pass the path of {what}")
        if st.st_size > max_bytes:
            raise CorruptFileError(path, f"holds {_size(st.st_size)}, more than the "
                                   f"{_size(max_bytes)} allowed for {what}",
                                   "pass a smaller file, or split it")
        buf = bytearray(st.st_size + 1)  # one byte more: a file that grew is noticed
        got = 0
        with os.fdopen(fd, "rb", buffering=0, closefd=False) as fh:
            with memoryview(buf) as view:
                while got < len(buf):
                    n = fh.readinto(view[got:])
                    if not n:
                        break
                    got += n
            if got > st.st_size:  # it grew while we read: read on, but never past the bound
                rest = fh.read(max_bytes + 1 - got) if got <= max_bytes else b""
                if got + len(rest) > max_bytes:
                    raise CorruptFileError(path, f"grew past the {_size(max_bytes)} allowed "
                                           f"for {what} while it was read",
                                           "rerun once it is complete")
                buf += rest
                got += len(rest)
        del buf[got:]  # it shrank while we read
        return buf
    finally:
        os.close(fd)


def read_bytes(path, what: str = "a file", *, max_bytes: int = MAX_FILE_BYTES,
               remedy: str | None = None) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (see the module docstring)."""
    return bytes(_read(path, what, max_bytes, remedy))


def _decode(data, path, what: str, remedy: str | None) -> str:
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptFileError(path, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                               f"offset {exc.start}), so not {what}", remedy) from None
    return text[1:] if text.startswith("\ufeff") else text  # a spreadsheet's byte-order mark


def read_text(path, what: str = "a text file", *, max_bytes: int = MAX_FILE_BYTES,
              remedy: str | None = None) -> str:
    """A regular UTF-8 text file of at most ``max_bytes`` as a string (BOM dropped)."""
    return _decode(_read(path, what, max_bytes, remedy), os.fspath(path), what, remedy)


# ------------------------------------------------------------------------------------------
# JSON and JSON lines
# ------------------------------------------------------------------------------------------
def _location(trail) -> str:
    """``items['x'].box`` from a trail of (parent trail, key) pairs; '' for the top level."""
    keys = []
    while trail is not None:
        trail, key = trail
        keys.append(key)
    out = ""
    for key in reversed(keys):
        if isinstance(key, int):
            out += f"[{key}]"
        elif key.isidentifier():
            out += f".{key}" if out else key
        else:
            out += f"[{key!r}]"
    return out


def _where(trail) -> str:
    loc = _location(trail)
    return f"field {loc}" if loc else "the document"


def _show(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        text = str(value) if abs(value) < 10**30 else f"an integer of {len(str(abs(value)))} digits"
        return text
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "...'"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _check_tree(root, path: str, what: str, remedy: str | None, max_depth: int) -> None:
    """Depth, integer size and finiteness of a parsed JSON value, without recursion (so a
    deep document cannot exhaust the stack), naming the first bad field."""
    stack = [(root, 1, None)]
    while stack:
        value, depth, trail = stack.pop()
        if depth > max_depth:
            raise CorruptFileError(path, f"nests deeper than {max_depth} levels, so not {what}",
                                   remedy)
        items = value.items() if type(value) is dict else enumerate(value)
        for key, v in items:
            t = type(v)
            if t is dict or t is list:
                stack.append((v, depth + 1, (trail, key)))
            elif t is float:
                if not math.isfinite(v):
                    raise CorruptFileError(path, f"{_where((trail, key))} is {v!r}, not a finite "
                                           f"number, so this is not {what}", remedy)
            elif t is int and not -MAX_INT <= v <= MAX_INT:
                raise CorruptFileError(path, f"{_where((trail, key))} is {_show(v)}, beyond the "
                                       f"largest integer allowed (2**63 - 1), so this is not "
                                       f"{what}", remedy)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _needs_walk(text: str, max_depth: int) -> bool:
    """A conservative screen, in a few vectorised passes: False only if the parsed document
    cannot break a bound (depth, integer size, finite numbers), so the per-value walk of
    :func:`_check_tree` is skipped for the many large, ordinary files (a census of 10⁶
    records). True means "walk and see", not "bad".

    Why each screen suffices: a non-finite number needs a NaN/Infinity literal or an
    overflowing float, which needs an exponent of three digits or a run of ≥ 19 digits; an
    integer beyond 2**63 − 1 needs ≥ 19 digits; the depth is counted exactly from the
    brackets outside strings (a bracket is outside when an even number of unescaped
    quotes precede it).
    """
    if "NaN" in text or "Infinity" in text:
        return True
    if "\\" in text:  # escaped quotes: blank the strings out by their exact grammar first
        text = _JSON_STRING.sub('""', text)
    data = np.frombuffer(text.encode("utf-8") + b"\0\0\0\0", dtype=np.uint8)
    digit = (data >= 48) & (data <= 57)
    starts = np.flatnonzero(digit[1:] & ~digit[:-1]) + 1
    ends = np.flatnonzero(digit[:-1] & ~digit[1:]) + 1
    if digit[0]:
        starts = np.concatenate(([0], starts))
    if starts.size and (ends - starts).max() >= 19:
        return True
    e = np.flatnonzero((data == 101) | (data == 69))  # e, E: an exponent when digits follow
    if e.size:
        after = e + 1 + ((data[e + 1] == 43) | (data[e + 1] == 45))  # skip a sign
        if (digit[after] & digit[after + 1] & digit[after + 2]).any():
            return True
    if text.count("[") + text.count("{") <= max_depth:
        return False
    quotes = np.flatnonzero(data == 34)
    opens = np.flatnonzero((data == 91) | (data == 123))
    closes = np.flatnonzero((data == 93) | (data == 125))
    opens = opens[np.searchsorted(quotes, opens) % 2 == 0]
    closes = closes[np.searchsorted(quotes, closes) % 2 == 0]
    where = np.concatenate((opens, closes))
    step = np.concatenate((np.ones(opens.size, np.int64), -np.ones(closes.size, np.int64)))
    return int(np.cumsum(step[np.argsort(where, kind="stable")]).max(initial=0)) > max_depth


def _loads(text: str, path: str, what: str, remedy: str | None, max_depth: int, line=None):
    at = f"line {line} " if line is not None else ""
    try:
        value = json.loads(text)
    except RecursionError:
        raise CorruptFileError(path, f"{at}nests deeper than {max_depth} levels, so not {what}",
                               remedy) from None
    except json.JSONDecodeError as exc:
        if line is not None:
            raise JSONSyntaxError(path, f"line {line} is not JSON (a torn write?), so this is "
                                  f"not {what}", remedy) from None
        cut = exc.pos >= len(exc.doc.rstrip()) or exc.msg.startswith("Unterminated")
        how = "truncated" if cut else "is not valid JSON"
        raise JSONSyntaxError(path, f"{how} ({exc.msg}: line {exc.lineno}, column "
                              f"{exc.colno}), so not {what}", remedy) from None
    except ValueError:  # an integer of more digits than Python converts (sys.int_info)
        raise CorruptFileError(path, f"{at}holds an integer of thousands of digits, so not "
                               f"{what}", remedy) from None
    if isinstance(value, (dict, list)):
        if len(text) < 4096 or _needs_walk(text, max_depth):
            _check_tree(value, path, what, remedy, max_depth)
    elif isinstance(value, float) and not math.isfinite(value):
        raise CorruptFileError(path, f"{at}is {value!r}, not a finite number, so not {what}",
                               remedy)
    elif type(value) is int and not -MAX_INT <= value <= MAX_INT:
        raise CorruptFileError(path, f"{at}is {_show(value)}, beyond 2**63 - 1, so not {what}",
                               remedy)
    return value


def _expect(value, path: str, what: str, expect, keys, remedy):
    if expect is not None and not isinstance(value, expect):
        kind = {dict: "object", list: "list", str: "string", bool: "boolean",
                type(None): "null"}.get(type(value), "number")
        raise CorruptFileError(path, f"holds a JSON {kind}, not {what}", remedy)
    missing = [k for k in keys if k not in value]
    if missing:
        raise CorruptFileError(path, f"is not {what} (no {', '.join(repr(k) for k in missing)})",
                               remedy)
    return value


def parse_json(text: str, path, what: str = "a JSON file", *, expect: type | None = None,
               keys: tuple[str, ...] = (), schema: Field | None = None,
               remedy: str | None = None, max_depth: int = MAX_DEPTH):
    """The JSON value in ``text`` (read from ``path``), checked as :func:`read_json` does."""
    path = os.fspath(path)
    value = _expect(_loads(text, path, what, remedy, max_depth), path, what, expect, keys, remedy)
    if schema is not None:
        check(value, schema, path, remedy=remedy)
    return value


def read_json(path, what: str = "a JSON file", *, expect: type | None = dict,
              keys: tuple[str, ...] = (), schema: Field | None = None,
              remedy: str | None = None, max_bytes: int = MAX_FILE_BYTES,
              max_depth: int = MAX_DEPTH):
    """The JSON value in ``path``: a regular UTF-8 file of at most ``max_bytes``, nested at
    most ``max_depth`` levels, with bounded integers and finite numbers; then ``expect``
    (its Python type, dict by default), the top-level ``keys`` it must have and a
    :class:`Field` ``schema``. Same signature as ``grpolab.grpo.records.read_json`` (plus
    the bounds and the schema), so that one can be re-based on this one.
    """
    path = os.fspath(path)
    text = read_text(path, what, max_bytes=max_bytes, remedy=remedy)
    return parse_json(text, path, what, expect=expect, keys=keys, schema=schema, remedy=remedy,
                      max_depth=max_depth)


class NonFiniteNumberError(ValueError):
    """A document to be written holds NaN or ±Infinity: JSON has no such numbers (Python's
    ``json`` would write the non-standard ``NaN``/``Infinity``, which grpolab's own readers,
    browsers and ``jq`` refuse). The message names the file and the field."""


def _first_non_finite(root) -> str | None:
    """The location (``regimes.mixed.vertex_G[1]``) of the first NaN/±inf in a value of
    dicts, lists, tuples and numbers, or None; iterative, so as deep as the document."""
    stack = [(root, None)]
    while stack:
        value, trail = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, (trail, str(k))) for k, v in reversed(list(value.items())))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, (trail, i)) for i, v in reversed(list(enumerate(value))))
        elif isinstance(value, float) and not math.isfinite(value):
            return f"{_where(trail)} is {value!r}"
        elif isinstance(value, np.floating) and not np.isfinite(value):
            return f"{_where(trail)} is {float(value)!r}"
    return None


def json_text(obj, path, *, indent: int | None = 1, sort_keys: bool = False) -> str:
    """``obj`` as standard JSON text for the file ``path``; a NaN or ±Infinity anywhere is
    refused with one :class:`NonFiniteNumberError` naming ``path`` and the field, before a
    byte is written (``allow_nan=False``: a statistic that is no number is written as
    ``null`` with the reason beside it, never as ``Infinity``)."""
    try:
        return json.dumps(obj, indent=indent, sort_keys=sort_keys, allow_nan=False)
    except ValueError as exc:
        where = _first_non_finite(obj)
        if where is None:
            raise
        raise NonFiniteNumberError(f"{os.fspath(path)} not written: {where}, not a finite "
                                   "number; JSON has no NaN or Infinity (a grpolab bug: "
                                   "please report it)") from exc


def parse_jsonl(text: str, path, what: str = "a log", *, remedy: str | None = None,
                max_depth: int = MAX_DEPTH, allow_empty: bool = False) -> list[dict]:
    """Every record of JSON-lines text: one object per line (blank lines skipped)."""
    path = os.fspath(path)
    records = []
    # split on "\n" only: str.splitlines would also split inside a string holding U+2028
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        rec = _loads(line, path, what, remedy, max_depth, line=n)
        if not isinstance(rec, dict):
            raise CorruptFileError(path, f"line {n} is not a JSON object, so this is not {what}",
                                   remedy)
        records.append(rec)
    if not records and not allow_empty:
        raise CorruptFileError(path, f"is empty, so not {what}", remedy)
    return records


def read_jsonl(path, what: str = "a log", *, remedy: str | None = None,
               max_bytes: int = MAX_FILE_BYTES, max_depth: int = MAX_DEPTH,
               allow_empty: bool = False) -> list[dict]:
    """Every record of a JSON-lines file; a torn or foreign line is a CorruptFileError
    (same signature as ``grpolab.grpo.records.read_jsonl``, plus the bounds)."""
    path = os.fspath(path)
    text = read_text(path, what, max_bytes=max_bytes, remedy=remedy)
    return parse_jsonl(text, path, what, remedy=remedy, max_depth=max_depth,
                       allow_empty=allow_empty)


# ------------------------------------------------------------------------------------------
# CSV, NPY and line streams
# ------------------------------------------------------------------------------------------
#: A number written with a decimal comma (``0,5``, ``-1,25``): inside one cell only when
#: quoted, and as two cells, ``0`` then ``5``, when not (then the row is wider than the
#: header, and :func:`parse_csv` says which of the two it probably is).
_DECIMAL_COMMA = re.compile(r"\s*[-+]?\d+,\d+\s*")


def _decimal_comma_hint(row: list[str], width: int) -> str:
    """" (a decimal comma ...?)" when a row wider than the header has an integer cell
    followed by one that starts with a digit (how an unquoted 0,5 splits), else ""."""
    cells = [c.strip() for c in row]
    pairs = any(a.lstrip("+-").isdigit() and b[:1].isdigit()
                for a, b in zip(cells, cells[1:], strict=False))
    if len(row) <= width or not pairs:
        return ""
    semicolons = " and semicolons between cells" if any(";" in c for c in cells) else ""
    return (f" (a decimal comma, as in 0,5{semicolons}? write numbers with a decimal point, "
            "0.5, and commas between cells)")


def parse_csv(text: str, path, what: str = "a CSV file", *,
              remedy: str | None = None, rectangular: bool = True) -> list[list[str]]:
    """The rows of CSV text (``csv`` module, excel dialect), refused with one
    :class:`CorruptFileError` naming the line when

    - the file is malformed (a field over csv's size limit, a stray NUL);
    - ``rectangular`` and a row has another number of cells than the first (the header):
      a reader pairing cells with the header's columns would shift them across columns and
      read wrong numbers in silence. An unquoted decimal comma (``0,5``) makes such a row,
      and the message says so;
    - a cell is a number with a decimal comma (a quoted ``"0,5"``): ``float`` would refuse
      it with a message that hides why, a lenient reader would take 0 or 5.

    Blank rows (no cell, or only empty cells) are kept but not counted as ragged.
    """
    path = os.fspath(path)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise CorruptFileError(path, f"line {reader.line_num} is not valid CSV ({exc}), so this "
                               f"is not {what}", remedy) from None
    width = None
    for n, row in enumerate(rows, 1):
        if not any(c.strip() for c in row):
            continue
        for j, cell in enumerate(row, 1):
            if _DECIMAL_COMMA.fullmatch(cell):
                raise CorruptFileError(path, f"row {n}, column {j} is {cell.strip()!r}, a number "
                                       "with a comma (a decimal comma, or a thousands "
                                       "separator?); write numbers plainly, with a decimal "
                                       "point (0.5, 1000)", remedy)
        if width is None:
            width = len(row)
        elif rectangular and len(row) != width:
            cells = f"{len(row)} cell" + "s" * (len(row) != 1)
            raise CorruptFileError(path, f"row {n} has {cells} where the first row has "
                                   f"{width}{_decimal_comma_hint(row, width)}; every row must "
                                   f"have one cell per column, so this is not {what}", remedy)
    return rows


def read_csv(path, what: str = "a CSV file", *, remedy: str | None = None,
             max_bytes: int = MAX_FILE_BYTES, rectangular: bool = True) -> list[list[str]]:
    """The rows of a regular UTF-8 CSV file of at most ``max_bytes``, checked by
    :func:`parse_csv` (ragged rows and decimal commas refused)."""
    path = os.fspath(path)
    return parse_csv(read_text(path, what, max_bytes=max_bytes, remedy=remedy), path, what,
                     remedy=remedy, rectangular=rectangular)


def read_npy(path, what: str = "an array", *, ndim: int | None = None,
             remedy: str | None = None, max_bytes: int = MAX_FILE_BYTES) -> np.ndarray:
    """A ``.npy`` array (never pickled objects) whose header agrees with its size.

    The header is parsed by numpy's own reader with its bounded header size; the data must
    be exactly shape × itemsize bytes, so a truncated file is named as truncated instead of
    being read short. Same signature as ``grpolab.grpo.records.read_npy`` plus the bound.
    """
    path = os.fspath(path)
    buf = _read(path, what, max_bytes, remedy)
    if bytes(buf[:6]) != b"\x93NUMPY":
        raise CorruptFileError(path, f"has no NumPy header (random or foreign bytes), so it is "
                               f"not {what}", remedy)
    head = io.BytesIO(bytes(buf[:min(len(buf), 2**16)]))

    def damaged(why: str):
        return CorruptFileError(path, f"is not a readable array ({why}), so not {what}", remedy)

    try:
        version = np.lib.format.read_magic(head)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(head)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(head)
        else:
            raise damaged(f"format version {version[0]}.{version[1]} is not read here")
    except CorruptFileError:
        raise
    except (ValueError, OSError, EOFError, SyntaxError) as exc:
        raise damaged("truncated or damaged: " + str(exc).split(".")[0][:80]) from None
    if dtype.hasobject:
        raise damaged("it holds pickled objects")
    count = math.prod(shape)
    offset = head.tell()
    expected, found = count * dtype.itemsize, len(buf) - offset
    if expected != found or (dtype.itemsize == 0 and count):
        raise damaged(f"truncated or damaged: {found} data bytes where the header says "
                      f"{expected}")
    flat = np.frombuffer(buf, dtype=dtype, count=count, offset=offset)  # writable: a bytearray
    array = flat.reshape(shape[::-1]).T if fortran else flat.reshape(shape)
    if ndim is not None and array.ndim != ndim:
        raise CorruptFileError(path, f"holds a {array.ndim}-d array, not {what}", remedy)
    return array


def read_lines(stream, name: str, what: str = "answers", *,
               max_chars: int = MAX_LINE_CHARS) -> Iterator[str]:
    """The lines of an open text stream (a file, a pipe, stdin), without their newline.

    Each line may hold at most ``max_chars`` characters: a stream with no newline at all
    (``/dev/zero``, a binary file) is refused after ``max_chars`` instead of filling memory.
    Text that is not valid in the stream's encoding is a CorruptFileError naming the line.
    """
    n = 0
    while True:
        n += 1
        try:
            line = stream.readline(max_chars + 1)
        except UnicodeDecodeError as exc:
            raise CorruptFileError(name, f"line {n} is not {exc.encoding} text, so not {what}",
                                   "") from None
        if not line:
            return
        if len(line) > max_chars and not line.endswith("\n"):
            raise CorruptFileError(name, f"line {n} is longer than {max_chars} characters (a "
                                   f"binary file or a device?), so not {what}", "")
        yield line.rstrip("\r\n")


# ------------------------------------------------------------------------------------------
# The schema
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Field:
    """What one value of a JSON document must be.

    ``kind`` is one of ``"int"``, ``"real"`` (an int or a finite float), ``"str"``,
    ``"bool"``, ``"list"`` (each item checked by ``items``), ``"object"`` (exactly the
    named ``fields``; a key not among them is refused with the nearest valid one) or
    ``"map"`` (any string keys, each value checked by ``items``). ``minimum``/``maximum``
    bound numbers, and the length of strings, lists and maps through ``max_items``;
    ``choices`` lists the values a field may take; ``required=False`` lets an object omit it;
    ``nullable=True`` also accepts ``null``; ``extra_keys=True`` lets an ``"object"`` hold
    keys besides its ``fields`` (a run summary carries many; only the named are checked);
    ``keys=(lo, hi)`` makes every key of a ``"map"`` a decimal integer in [lo, hi] (a map
    keyed by G, as JSON writes ``{2: ...}``: ``{"2": ...}``).
    """

    kind: str
    minimum: float | None = None
    maximum: float | None = None
    required: bool = True
    choices: tuple = ()
    items: Field | None = None
    fields: Mapping[str, Field] | None = None
    max_items: int | None = None
    nullable: bool = False
    extra_keys: bool = False
    keys: tuple[int, int] | None = None

    def __post_init__(self):
        if self.kind not in ("int", "real", "str", "bool", "list", "object", "map"):
            raise ValueError(f"Field kind must be int, real, str, bool, list, object or map, "
                             f"got {self.kind!r}")

    def expected(self) -> str:
        """What a valid value looks like, for error messages."""
        if self.choices:
            return "one of " + ", ".join(_show(c) for c in self.choices)
        lo, hi = self.minimum, self.maximum
        rng = (f" in [{lo:g}, {hi:g}]" if lo is not None and hi is not None else
               f" >= {lo:g}" if lo is not None else f" <= {hi:g}" if hi is not None else "")
        cap = f" of at most {self.max_items} items" if self.max_items is not None else ""
        text = {"int": f"an integer{rng}", "real": f"a finite number{rng}",
                "str": f"a string{cap}", "bool": "true or false", "list": f"a list{cap}",
                "object": "an object", "map": f"an object{cap}"}[self.kind]
        return f"{text} or null" if self.nullable else text


def _type_ok(value, kind: str) -> bool:
    t = type(value)
    if kind == "int":
        return t is int
    if kind == "real":
        return (t is int and -MAX_INT <= value <= MAX_INT) or (t is float and math.isfinite(value))
    return t is {"str": str, "bool": bool, "list": list, "object": dict, "map": dict}[kind]


def check(value, spec: Field, path, *, remedy: str | None = None, _trail=None) -> None:
    """Check a parsed JSON ``value`` against ``spec``; raise a CorruptFileError that names
    ``path``, the field (``items['x'].box``) and what was expected.

    Recursion follows the schema, not the document, so it is as deep as the schema is.
    """
    path = os.fspath(path)

    def fail(problem: str):
        raise CorruptFileError(path, problem, remedy)

    if value is None and spec.nullable:
        return
    if not _type_ok(value, spec.kind):
        fail(f"{_where(_trail)} must be {spec.expected()}, got {_show(value)}")
    if spec.choices and value not in spec.choices:
        fail(f"{_where(_trail)} must be {spec.expected()}, got {_show(value)}")
    if spec.kind in ("int", "real"):
        if ((spec.minimum is not None and value < spec.minimum)
                or (spec.maximum is not None and value > spec.maximum)):
            fail(f"{_where(_trail)} must be {spec.expected()}, got {_show(value)}")
        return
    if spec.max_items is not None and len(value) > spec.max_items:
        fail(f"{_where(_trail)} must be {spec.expected()}, got {len(value)}")
    if spec.kind == "list" and spec.items is not None:
        for i, item in enumerate(value):
            check(item, spec.items, path, remedy=remedy, _trail=(_trail, i))
    elif spec.kind == "map":
        if spec.keys is not None:
            lo, hi = spec.keys
            for key in value:
                text = key.strip()
                digits = text[1:] if text[:1] in "+-" else text
                if not (digits.isascii() and digits.isdigit() and len(digits) <= 20
                        and lo <= int(text) <= hi):
                    fail(f"{_where(_trail)} has the key {_show(key)}; its keys must be "
                         f"integers in [{lo}, {hi}]")
        if spec.items is not None:
            for key, item in value.items():
                check(item, spec.items, path, remedy=remedy, _trail=(_trail, key))
    elif spec.kind == "object" and spec.fields is not None:
        known = spec.fields
        for key in () if spec.extra_keys else value:
            if key not in known:
                near = difflib.get_close_matches(str(key), list(known), n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                fail(f"{_where(_trail)} has an unknown field {key!r}{hint}; the fields are "
                     f"{', '.join(known)}")
        for key, sub in known.items():
            if key in value:
                check(value[key], sub, path, remedy=remedy, _trail=(_trail, key))
            elif sub.required:
                fail(f"{_where(_trail)} lacks the field {key!r} ({sub.expected()})")


# ------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------
class NotRegularFileError(ValueError):
    """A write aimed at something that is not a regular file (a device such as
    ``/dev/full``, a FIFO, a folder, a symbolic link): refused, and left as it was."""


def _umask() -> int:
    """The process's umask, read without changing it where the OS says it (Linux), else
    by setting and restoring it."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def check_writable_target(path) -> os.stat_result | None:
    """Refuse (:class:`NotRegularFileError`) a path that exists and is not a regular file:
    grpolab writes only onto a regular file or a new path, never over a device, a FIFO, a
    folder or a symbolic link (replacing ``/dev/full`` or a user's link is data loss too).
    Returns the existing file's ``lstat`` (None for a new path)."""
    path = os.fspath(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise NotRegularFileError(f"{path} is a symbolic link; grpolab writes only onto a "
                                  "regular file or a new path, so it and its target are left "
                                  "alone: remove the link, or name another path")
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFileError(f"{path} is {_kind(st.st_mode)}, not a regular file; grpolab "
                                  "writes only onto a regular file or a new path, so it is "
                                  "left alone: name another path")
    return st


def write_atomic(path, data: bytes | str) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it, fsync, then rename.

    A reader, a kill or a full disk sees the old file or the new one, never a torn one:
    on any error (``ENOSPC`` included) the temporary file is removed, the old file is left
    as it was, and the OSError is raised for the caller to report in one line. Only a
    regular file or a new path is written (:func:`check_writable_target`): a symbolic link,
    a device or a FIFO at ``path`` is refused and left alone. A new file gets the mode a
    plain ``open`` would give it (0666 less the umask), not ``mkstemp``'s private 0600; a
    file rewritten keeps its own mode (a user's ``chmod`` stays).
    """
    path = os.fspath(path)
    folder = os.path.dirname(path) or "."
    if isinstance(data, str):
        data = data.encode("utf-8")
    old = check_writable_target(path)
    mode = stat.S_IMODE(old.st_mode) if old is not None else 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


# ------------------------------------------------------------------------------------------
# Folders named by environment variables
# ------------------------------------------------------------------------------------------
#: grpolab's environment variables that name a folder (created if missing where needed).
ENV_FOLDERS = ("GRPOLAB_CACHE", "GRPOLAB_BOOK_DIR")
#: grpolab's environment variables that take one of a few values.
ENV_CHOICES = {"GRPOLAB_WIDGETS": ("static", "live")}


class EnvironmentSettingError(ValueError):
    """An environment variable that names the wrong kind of thing; the message names it."""


def folder_problem(path) -> str | None:
    """Why ``path`` cannot be (or become) a folder, or None: it is a file, or lies under one."""
    full = os.path.abspath(os.fspath(path))
    if os.path.exists(full):
        return None if os.path.isdir(full) else "names a file, not a folder"
    ancestor = full
    while not os.path.exists(ancestor):
        parent = os.path.dirname(ancestor)
        if parent == ancestor:
            return None
        ancestor = parent
    if not os.path.isdir(ancestor):
        return f"lies under {ancestor}, which is a file, so no folder can be made there"
    return None


def env_folder(var: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """The folder named by environment variable ``var``, or None when it is unset or empty.

    Raises :class:`EnvironmentSettingError` naming ``var`` when the value names a file or
    lies under one, so the mistake is reported at once as the variable's, not 30 seconds
    later as an unreadable path.
    """
    value = (os.environ if environ is None else environ).get(var)
    if not value:
        return None
    problem = folder_problem(value)
    if problem:
        raise EnvironmentSettingError(f"{var}={value}: {problem}; point {var} at a folder (it "
                                      f"is created if missing) or unset it")
    return Path(value)


def check_environment(environ: Mapping[str, str] | None = None) -> None:
    """Check every variable of :data:`ENV_FOLDERS` and :data:`ENV_CHOICES` that is set."""
    env = os.environ if environ is None else environ
    for var in ENV_FOLDERS:
        env_folder(var, env)
    for var, choices in ENV_CHOICES.items():
        value = env.get(var)
        if value is not None and value not in choices:
            raise EnvironmentSettingError(f"{var}={value}: must be one of {', '.join(choices)} "
                                          f"(or unset)")
