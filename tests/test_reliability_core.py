"""The reliability suite, torch-free part (issue 26, phase 1): hostile files, two writers,
planted lock files, a full disk, an ASCII-only terminal, misaimed environment variables,
counts no machine can serve, and a library that never answers garbage.

Table-driven: one row per case (what is fed, what the one-line refusal must say). The
engine's readers, locks and bounds (``lab train``, sweeps, remedies) are the lead's and
live in tests/test_reliability.py. Nothing here imports torch, except the two
``smollm2 prepare`` rows, which stub the model loading.
"""

from __future__ import annotations

import errno
import heapq
import json
import math
import os
import resource
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grpolab
from grpolab import advise as adv
from grpolab import theory, toy
from grpolab.cli.main import build_parser, main
from grpolab.drill.progress import Progress

# (grpolab._files and grpolab._locks are imported inside the tests that use them, so that
# the behavioural tests also run, and fail, against code from before them.)
ROOT = Path(__file__).resolve().parents[1]
SRC = str(Path(grpolab.__file__).resolve().parents[1])  # children import the same grpolab
CENSUS = ROOT / "labs" / "results" / "smollm2-pass-rates" / "pass_rates.json"
PROGRESS_LOCK = ".grpolab.lock.{}"  # beside a progress file (grpolab.drill.progress)


@pytest.fixture(autouse=True)
def _no_real_home(tmp_path, monkeypatch):
    """No test may read or write the real ~/.local/share/grpolab."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def _env(tmp_path: Path, **extra) -> dict:
    return {**os.environ, "PYTHONPATH": SRC, "XDG_DATA_HOME": str(tmp_path / "xdg"),
            "HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1", **extra}



_LOCK_HOLDER = textwrap.dedent("""
    import sys, time
    from grpolab._locks import exclusive_lock
    with exclusive_lock(sys.argv[1]):
        print("held", flush=True)
        time.sleep(120)
""")


def _hold_lock(folder, tmp_path) -> subprocess.Popen:
    """A second process holding grpolab's lock on ``folder`` (it prints "held" once it has
    it and keeps it for two minutes; the caller kills it)."""
    return subprocess.Popen([sys.executable, "-c", _LOCK_HOLDER, str(folder)],
                            stdout=subprocess.PIPE, text=True, env=_env(tmp_path))

def _limit_memory():
    """A child that would read /dev/zero into memory dies at 3 GiB, not at the machine's."""
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def one_line(err: str, fragment: str) -> None:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert fragment in err, err


def answers_file(tmp_path: Path, lines: list[str]) -> Path:
    f = tmp_path / "answers.txt"
    f.write_text("\n".join(lines) + "\n")
    return f


# ======================================================================================
# 1. Readers that trust their input: advise's input and the drill's progress file
# ======================================================================================
def _progress(**fields) -> str:
    doc = {"format": "grpolab-drill-progress", "version": 1, "sessions": 1,
           "items": {"card2-open": {"box": 2, "asked": 1, "passed": 1, "last_passed": True,
                                    "last_score": 1.0, "last_session": 1}}}
    doc.update(fields)
    return json.dumps(doc)


def _sparse(size: int):
    def make(path: Path) -> Path:
        with open(path, "wb") as f:
            f.truncate(size)  # no disk used: the size alone must be refused
        return path
    return make


def _text(content: str):
    def make(path: Path) -> Path:
        path.write_text(content, encoding="utf-8")
        return path
    return make


def _bytes(content: bytes):
    def make(path: Path) -> Path:
        path.write_bytes(content)
        return path
    return make


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


DEEP = "[" * 100_000 + "]" * 100_000  # a RecursionError in json, unbounded
DEEP_65 = "[" * 65 + "0.5" + "]" * 65  # within json's reach, beyond grpolab's 64 levels
BIG_INT = "1" + "0" * 400  # 401 digits: an OverflowError as a float

# (reader, case id, how the file is made, fragment of the one-line refusal)
READERS = [
    ("advise", "dev-zero", None, "character device"),
    ("advise", "fifo", _fifo, "named pipe"),
    ("advise", "directory", _folder, "directory"),
    ("advise", "over-1GiB", _sparse(2**30 + 1), "more than the 1 GiB"),
    ("advise", "deep", _text(DEEP), "nests deeper than"),
    ("advise", "deep-65", _text(DEEP_65), "nests deeper than 64"),
    ("advise", "401-digit-int", _text(f"[0.5, {BIG_INT}]"), "beyond the largest integer"),
    ("advise", "401-digit-count", _text(f'[{{"successes": {BIG_INT}, "samples": 4}}]'),
     "beyond the largest integer"),
    ("advise", "overflowing-float", _text("[0.5, 1e400]"), "not a finite number"),
    ("advise", "bad-record", _text('{"records": [{"successes": 1, "samples": 4}, 7]}'),
     "record 1 is not an object"),
    ("advise", "log-num-generations-list",
     _text('[{"frac_reward_zero_std": 0.5, "num_generations": [4]}]'),
     "num_generations must be an integer"),
    ("advise", "not-utf8", _bytes(b"pass_rate\n0.5\n\xff\xfe\n"), "not UTF-8"),
    ("drill", "dev-zero", None, "character device"),
    ("drill", "fifo", _fifo, "named pipe"),
    ("drill", "over-16MiB", _sparse(16 * 2**20 + 1), "more than the 16 MiB"),
    ("drill", "deep", _text(DEEP), "nests deeper than"),
    ("drill", "deep-65", _text('{"format": "grpolab-drill-progress", "x": ' + DEEP_65 + "}"),
     "nests deeper than 64"),
    ("drill", "401-digit-sessions", _text(_progress().replace('"sessions": 1',
                                                              f'"sessions": {BIG_INT}')),
     "beyond the largest integer"),
    ("drill", "sessions-a-string", _text(_progress(sessions="3")), "field sessions must be"),
    ("drill", "last_session-a-string",
     _text(_progress(items={"card2-open": {"box": 1, "last_session": "abc"}})),
     "field items['card2-open'].last_session must be an integer"),
    ("drill", "last_score-nan",
     _text(_progress().replace('"last_score": 1.0', '"last_score": NaN')), "not a finite"),
    ("drill", "unknown-key", _text(_progress().replace('"items"', '"itmes"')),
     "did you mean 'items'?"),
    ("drill", "unknown-nested-key",
     _text(_progress(items={"card2-open": {"box": 1, "askd": 2}})), "did you mean 'asked'?"),
    ("drill", "items-a-list", _text(_progress(items=[1, 2])), "field items must be an object"),
]


def _reader_argv(reader: str, path: str, tmp_path: Path) -> list[str]:
    if reader == "advise":
        return ["advise", "--pass-rates", path]
    answers = answers_file(tmp_path, ["an answer", "1 2"])
    return ["drill", "--progress", path, "--chain", "card2", "--n", "1", "--answers",
            str(answers)]


@pytest.mark.parametrize("reader,case,make,fragment", READERS,
                         ids=[f"{r}-{c}" for r, c, _, _ in READERS])
def test_a_hostile_file_is_refused_in_one_line_naming_it(reader, case, make, fragment,
                                                         tmp_path, capsys):
    path = Path("/dev/zero") if make is None else make(tmp_path / "input.json")
    argv = _reader_argv(reader, str(path), tmp_path)
    before = path.read_bytes() if path.is_file() and path.stat().st_size < 2**20 else None
    if make is None or make is _fifo:
        # in a child with bounded memory and time: reading them whole would never end
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "grpolab", *argv], capture_output=True,
                              text=True, timeout=60, env=_env(tmp_path), cwd=tmp_path,
                              preexec_fn=_limit_memory, stdin=subprocess.DEVNULL)
        code, err = done.returncode, done.stderr
        assert time.monotonic() - start < 30
    else:
        code = main(argv)
        err = capsys.readouterr().err
    assert code == 2, err
    one_line(err, fragment)
    assert str(path) in err or path.name in err
    if before is not None:
        assert path.read_bytes() == before  # a progress file is never overwritten


def test_a_good_census_and_progress_still_read(tmp_path):
    """The checks are not so strict that good files fail."""
    d = adv.load_pass_rates(CENSUS)
    assert d.kind == "counts" and d.prompts == 40
    p = tmp_path / "progress.json"
    p.write_text(_progress())
    prog = Progress.load(p)
    assert prog.sessions == 1 and prog.box("card2-open") == 2


# ---- the reader itself: compatible with grpolab.grpo.records, schema, screens -----
def test_reader_messages_match_the_engines_readers(tmp_path):
    """Same wording as grpolab.grpo.records (so the engine can be re-based on it)."""
    from grpolab import _files

    f = tmp_path / "summary.json"
    f.write_text('{"a": 1')
    with pytest.raises(_files.CorruptFileError, match=r"summary.json: truncated .*so not a run"):
        _files.read_json(f, "a run summary")
    f.write_text("[1, 2]")
    with pytest.raises(ValueError, match="holds a JSON list, not a run summary"):
        _files.read_json(f, "a run summary")
    f.write_text('{"a": 1}')
    with pytest.raises(ValueError, match=r"is not a sweep summary \(no 'runs'\)"):
        _files.read_json(f, "a sweep summary", keys=("runs",))
    log = tmp_path / "log.jsonl"
    log.write_text('{"step": 1}\n{"step": 2, "lo')
    with pytest.raises(ValueError, match="line 2 is not JSON"):
        _files.read_jsonl(log)
    log.write_text("")
    with pytest.raises(ValueError, match="is empty"):
        _files.read_jsonl(log)
    arr = tmp_path / "a.npy"
    np.save(arr, np.arange(12, dtype=np.int16).reshape(3, 4))
    good = _files.read_npy(arr, ndim=2)
    assert good.tolist() == np.arange(12).reshape(3, 4).tolist() and good.flags.writeable
    np.save(arr, np.asfortranarray(np.arange(6.0).reshape(2, 3)))
    assert _files.read_npy(arr).tolist() == np.arange(6.0).reshape(2, 3).tolist()
    data = arr.read_bytes()
    arr.write_bytes(data[:-3])
    with pytest.raises(ValueError, match="truncated or damaged"):
        _files.read_npy(arr)
    arr.write_bytes(os.urandom(64))
    with pytest.raises(ValueError, match="no NumPy header"):
        _files.read_npy(arr)
    np.save(arr, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="pickled objects"):
        _files.read_npy(arr)
    with pytest.raises(ValueError, match="delete .* and rerun"):
        _files.read_npy(arr)
    with pytest.raises(FileNotFoundError):
        _files.read_json(tmp_path / "missing.json")


def test_schema_names_the_field_and_the_nearest_key(tmp_path):
    from grpolab import _files

    spec = _files.Field("object", fields={
        "lr": _files.Field("real", 0, 1), "steps": _files.Field("int", 1, 100),
        "opt": _files.Field("object", required=False, fields={
            "name": _files.Field("str", choices=("adam", "sgd"))})})
    ok = {"lr": 0.1, "steps": 3, "opt": {"name": "adam"}}
    _files.check(ok, spec, "c.json")
    for doc, fragment in [
        ({**ok, "stpes": 3}, "unknown field 'stpes' (did you mean 'steps'?)"),
        ({**ok, "opt": {"nmae": "adam"}}, "field opt has an unknown field 'nmae' (did you mean "
                                          "'name'?)"),
        ({**ok, "opt": {"name": "rmsprop"}}, "field opt.name must be one of 'adam', 'sgd'"),
        ({**ok, "steps": True}, "field steps must be an integer in [1, 100], got true"),
        ({**ok, "steps": 1000}, "got 1000"),
        ({**ok, "lr": "0.1"}, "field lr must be a finite number in [0, 1], got '0.1'"),
        ({"lr": 0.1}, "lacks the field 'steps'"),
    ]:
        with pytest.raises(_files.CorruptFileError) as exc:
            _files.check(doc, spec, "c.json", remedy="")
        assert str(exc.value).startswith("c.json: ") and fragment in str(exc.value), exc.value


def test_a_stream_without_newlines_is_bounded(tmp_path):
    from grpolab import _files

    with open("/dev/zero", encoding="utf-8") as zero:
        with pytest.raises(_files.CorruptFileError, match="longer than 65536 characters"):
            list(_files.read_lines(zero, "/dev/zero"))
    f = tmp_path / "a.txt"
    f.write_text("one\r\ntwo\n\nthree")
    with open(f, encoding="utf-8") as fh:
        assert list(_files.read_lines(fh, str(f))) == ["one", "two", "", "three"]


def test_csv_reader_names_a_malformed_line(tmp_path):
    from grpolab import _files

    f = tmp_path / "a.csv"
    f.write_text('pass_rate\n"' + "x" * 200_000 + '"\n')
    with pytest.raises(_files.CorruptFileError, match=r"line \d+ is not valid CSV"):
        _files.read_csv(f)


_leaf = (st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
         | st.text(alphabet='a"\\[]{}é', max_size=4) | st.booleans() | st.none())
_docs = st.recursive(_leaf, lambda kids: st.lists(kids, max_size=4)
                     | st.dictionaries(st.text(alphabet="ab[\"", max_size=3), kids, max_size=4),
                     max_leaves=40)
BAD_LEAVES = ["NaN", "Infinity", "-Infinity", "1e400", "-1e309", BIG_INT, "9223372036854775808",
              "[" * 70 + "1" + "]" * 70]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_docs, bad=st.sampled_from(BAD_LEAVES), pad=st.integers(0, 6000))
def test_the_fast_screen_never_lets_a_bad_value_through(doc, bad, pad):
    """Large files skip the per-value walk when a vectorised screen proves it needless;
    whatever the document, a planted bad value is still found, and a good document still
    reads back equal to json.loads."""
    from grpolab import _files

    good = json.dumps({"doc": doc, "pad": "x" * pad})
    assert _files.parse_json(good, "g.json") == json.loads(good)
    planted = json.dumps({"pad": "x" * pad, "doc": doc, "z": "@@"}).replace('"@@"', bad)
    with pytest.raises(_files.CorruptFileError):
        _files.parse_json(planted, "b.json")


# ======================================================================================
# 2. Writers: one drill per progress file, safe lock files, a full disk
# ======================================================================================
def _drill_child(tmp_path: Path, progress: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "grpolab", "drill", "--chain", "card1", "--seed", "3",
         "--progress", str(progress), "--answers", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=_env(tmp_path), cwd=tmp_path, preexec_fn=_limit_memory)


def _wait_for_header(child: subprocess.Popen) -> None:
    line = child.stdout.readline()
    assert line.startswith("grpolab drill:"), line + child.stderr.read()


def test_a_second_drill_on_one_progress_file_is_refused_at_once(tmp_path, capsys):
    progress = tmp_path / "progress.json"
    child = _drill_child(tmp_path, progress)
    try:
        _wait_for_header(child)  # it holds the file now
        child.stdin.write("the first drill's answer\n1 2\n")
        child.stdin.flush()
        deadline = time.monotonic() + 60
        while not (progress.exists() and Progress.load(progress).items):
            assert time.monotonic() < deadline and child.poll() is None, child.stderr.read()
            time.sleep(0.02)
        before = progress.read_bytes()
        answers = answers_file(tmp_path, ["the second drill's answer", "a"])
        start = time.monotonic()
        code = main(["drill", "--chain", "card2", "--n", "1", "--progress", str(progress),
                     "--answers", str(answers)])
        elapsed = time.monotonic() - start
        err = capsys.readouterr().err
        assert code == 2 and elapsed < 1.0, (code, elapsed, err)
        one_line(err, f"is in use by another grpolab drill (pid {child.pid})")
        assert str(progress) in err
        assert progress.read_bytes() == before  # the second wrote nothing
        child.stdin.close()
        assert child.wait(timeout=60) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        child.stderr.close()
    kept = Progress.load(progress)
    assert "card1-open" in kept.items and "card2-open" not in kept.items  # nothing lost
    assert main(["drill", "--chain", "card2", "--n", "1", "--progress", str(progress),
                 "--answers", str(answers)]) == 0  # and the file is free again
    assert {"card1-open", "card2-open"} <= set(Progress.load(progress).items)


def test_a_killed_drill_leaves_no_stale_lock(tmp_path, capsys):
    progress = tmp_path / "progress.json"
    child = _drill_child(tmp_path, progress)
    try:
        _wait_for_header(child)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        child.stderr.close()
    answers = answers_file(tmp_path, ["an answer", "a"])
    assert main(["drill", "--chain", "card2", "--n", "1", "--progress", str(progress),
                 "--answers", str(answers)]) == 0, capsys.readouterr().err


PLANTED = ["symlink-to-a-file-outside", "hard-link-to-a-file-outside", "fifo", "directory"]


def _plant(kind: str, lock: Path, victim: Path) -> None:
    if kind == "symlink-to-a-file-outside":
        lock.symlink_to(victim)
    elif kind == "hard-link-to-a-file-outside":
        os.link(victim, lock)
    elif kind == "fifo":
        os.mkfifo(lock)
    else:
        lock.mkdir()


@pytest.mark.parametrize("kind", PLANTED)
def test_a_planted_drill_lock_file_is_refused_and_its_target_untouched(kind, tmp_path, capsys):
    folder = tmp_path / "data"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    progress = folder / "progress.json"
    _plant(kind, folder / PROGRESS_LOCK.format(progress.name), victim)
    answers = answers_file(tmp_path, ["an answer", "a"])
    code = main(["drill", "--chain", "card2", "--n", "1", "--progress", str(progress),
                 "--answers", str(answers)])
    err = capsys.readouterr().err
    assert code == 2, err
    one_line(err, "remove it and rerun")
    assert victim.read_text() == "keep me\n" and not progress.exists()


@pytest.mark.parametrize("kind", PLANTED)
def test_a_planted_output_lock_file_is_refused(kind, tmp_path):
    """The helper that grpolab.grpo.records.output_lock is to be re-based on."""
    from grpolab import _locks

    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    _plant(kind, out / _locks.LOCK_NAME, victim)
    with pytest.raises(_locks.LockError, match="remove it and rerun"):
        with _locks.exclusive_lock(out):
            pass
    assert victim.read_text() == "keep me\n"


def test_the_lock_is_reentrant_refuses_another_process_and_stays_inside(tmp_path):
    from grpolab import _locks

    out = tmp_path / "out"
    out.mkdir()
    child = _hold_lock(out, tmp_path)
    try:
        assert child.stdout.readline().strip() == "held"
        start = time.monotonic()
        with pytest.raises(_locks.LockError, match=rf"in use by another grpolab run \(pid "
                                                   rf"{child.pid}\)") as exc:
            with _locks.exclusive_lock(out):
                pass
        assert exc.value.pid == child.pid and time.monotonic() - start < 1.0
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    with _locks.exclusive_lock(out), _locks.exclusive_lock(out):  # free, and re-entrant
        assert _locks.is_held(out)
        got = []
        thread = threading.Thread(target=lambda: got.append(_locks.is_held(out)))
        thread.start()
        thread.join()
        assert got == [True]  # per process, not per thread
    assert not _locks.is_held(out)
    assert os.listdir(out) == [_locks.LOCK_NAME]
    assert (out / _locks.LOCK_NAME).read_text().strip() == str(os.getpid())
    for name in ("../escape", "a/b", "", ".."):
        with pytest.raises(ValueError, match="bare file name"):
            with _locks.exclusive_lock(out, name):
                pass


def test_a_full_disk_while_saving_progress_is_one_line_and_loses_nothing(tmp_path, capsys,
                                                                          monkeypatch):
    """ENOSPC injected at the second save's fsync (where a full disk surfaces): one line,
    exit 2, and the file still holds the first answer; no temporary file is left."""
    real_fsync, saves = os.fsync, []

    def full_disk(fd):
        if stat.S_ISREG(os.fstat(fd).st_mode):
            saves.append(fd)
            if len(saves) >= 2:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", full_disk)
    progress = tmp_path / "progress.json"
    answers = answers_file(tmp_path, ["first answer", "a", "second answer", "a", "0.5",
                                      "third", "a"])
    code = main(["drill", "--chain", "card1", "--all", "--seed", "3", "--progress",
                 str(progress), "--answers", str(answers)])
    err = capsys.readouterr().err
    assert code == 2
    one_line(err, "No space left on device")
    assert str(progress) in err
    monkeypatch.undo()
    kept = Progress.load(progress)
    assert list(kept.items) == ["card1-open"] and kept.sessions == 1
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name] == []


def test_atomic_write_keeps_the_old_file_on_any_error(tmp_path, monkeypatch):
    from grpolab import _files

    target = tmp_path / "f.json"
    target.write_text("old")

    def boom(*_):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="No space left"):
        _files.write_atomic(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["f.json"]
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(_files.NotRegularFileError):  # neither written through nor replaced
        _files.write_atomic(tmp_path / "link", "new")
    assert target.read_text() == "old" and (tmp_path / "link").is_symlink()


# ======================================================================================
# 3. Environment: an ASCII-only terminal, variables aimed at the wrong kind of thing
# ======================================================================================
def _commands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return set(sub.choices)


# Each command's --help and a cheap invocation (argv, exit code), under an ASCII stdout.
ASCII_ROWS = {
    "advise": [(["advise", "--pass-rates", str(CENSUS), "--budget", "64", "--max-G", "8"], 0)],
    "book": [(["book", "build", "--book", "/nonexistent-grpolab-book"], 2)],
    "drill": [(["drill", "--list"], 0),
              (["drill", "--no-progress", "--chain", "card2", "--n", "1", "--answers", "ANS"],
               0)],
    "lab": [(["lab", "presets"], 0)],
    "quiz": [(["quiz", "--list-kinds"], 0),
             (["quiz", "--n", "3", "--seed", "0", "--answers", "ANS"], 0)],
    "remedies": [],
    "smollm2": [(["smollm2", "prepare", "--threads", "0"], 2)],
    "theory": [(["theory", "--p", "0.1", "--G", "4", "8"], 0),
               (["theory", "--p", *["0.5"] * 400, "--G", *["2"] * 400], 2)],  # "×" in stderr
}


def test_every_command_works_on_an_ascii_only_terminal(tmp_path):
    assert set(ASCII_ROWS) == _commands(), "add the new command to ASCII_ROWS"
    answers = answers_file(tmp_path, ["my answer", "1 2", "0.5", "0.5", "0.5"])
    rows = [([], 2), (["--help"], 0), (["--version"], 0)]
    for cmd, cases in ASCII_ROWS.items():
        rows.append(([cmd, "--help"], 0))
        rows += [([str(answers) if a == "ANS" else a for a in argv], code)
                 for argv, code in cases]
    script = textwrap.dedent(f"""
        import sys
        from grpolab.cli.main import main
        for argv, _ in {rows!r}:
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code
            sys.stdout.flush()
            sys.stderr.flush()
            print(f"@@rc {{code}}", flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=300,
                          env=_env(tmp_path, PYTHONIOENCODING="ascii", LC_ALL="C", LANG="C"),
                          cwd=tmp_path, stdin=subprocess.DEVNULL)
    out, err = done.stdout.decode("ascii"), done.stderr.decode("ascii")  # pure ASCII, both
    assert done.returncode == 0, err[-3000:]
    assert "Traceback" not in err and "UnicodeEncodeError" not in err and "codec" not in err
    codes = [int(line.split()[1]) for line in out.splitlines() if line.startswith("@@rc ")]
    assert codes == [code for _, code in rows], (codes, err[-2000:])
    assert "frac_reward_zero_std ~ 0." in out  # "≈" spelt in ASCII, not dropped
    assert "--p x --G: 400 x 400 = 160000 rows" in err


ENV_ROWS = [
    # (variable, what it names, argv, fragment)
    ("GRPOLAB_CACHE", "FILE", ["theory"], "GRPOLAB_CACHE="),
    ("GRPOLAB_CACHE", "UNDER_FILE", ["quiz", "--list-kinds"], "GRPOLAB_CACHE="),
    ("GRPOLAB_BOOK_DIR", "FILE", ["theory"], "GRPOLAB_BOOK_DIR="),
    ("GRPOLAB_BOOK_DIR", "EMPTY_DIR", ["book", "build"], "GRPOLAB_BOOK_DIR="),
    ("GRPOLAB_WIDGETS", "bogus", ["theory"], "GRPOLAB_WIDGETS=bogus: must be one of static"),
    ("XDG_DATA_HOME", "FILE", ["drill", "--chain", "card2", "--n", "1", "--answers", "ANS"],
     "XDG_DATA_HOME="),
]


@pytest.mark.parametrize("var,value,argv,fragment", ENV_ROWS,
                         ids=[f"{v}-{w}-{a[0]}" for v, w, a, _ in ENV_ROWS])
def test_a_misaimed_environment_variable_is_named_at_once(var, value, argv, fragment,
                                                          tmp_path, monkeypatch, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    value = {"FILE": str(a_file), "UNDER_FILE": str(a_file / "cache"),
             "EMPTY_DIR": str(empty)}.get(value, value)
    monkeypatch.setenv(var, value)
    answers = answers_file(tmp_path, ["an answer", "a"])
    argv = [str(answers) if a == "ANS" else a for a in argv]
    start = time.monotonic()
    assert main(argv) == 2
    assert time.monotonic() - start < 1.0
    one_line(capsys.readouterr().err, fragment)
    assert a_file.read_text() == "not a folder\n"


def test_grpolab_cache_on_a_file_stops_smollm2_prepare_before_any_work(tmp_path, monkeypatch,
                                                                        capsys):
    import grpolab.models.smollm2 as smollm2

    def never(*_a, **_k):
        raise AssertionError("the model was loaded before GRPOLAB_CACHE was checked")

    monkeypatch.setattr(smollm2, "load_smollm2", never)
    a_file = tmp_path / "cache-file"
    a_file.write_text("x")
    monkeypatch.setenv("GRPOLAB_CACHE", str(a_file))
    assert main(["smollm2", "prepare"]) == 2
    one_line(capsys.readouterr().err, f"GRPOLAB_CACHE={a_file}: names a file, not a folder")


def test_smollm2_threads_are_capped_at_the_cores_with_a_note(monkeypatch, capsys):
    pytest.importorskip("torch")
    import torch

    import grpolab.models.smollm2 as smollm2
    from grpolab.cli.smollm2 import usable_cores

    asked = []
    monkeypatch.setattr(torch, "set_num_threads", asked.append)
    monkeypatch.setattr(smollm2, "load_smollm2", lambda **_: None)
    assert main(["smollm2", "prepare", "--threads", str(2**31 - 1)]) == 0
    captured = capsys.readouterr()
    assert asked == [usable_cores()]
    assert f"note: --threads {2**31 - 1} is more than the {usable_cores()} CPU cores" in \
        captured.err


# ======================================================================================
# 4. Bounds before work: counts no machine can serve, refused with what fits
# ======================================================================================
def _trl_log(tmp_path: Path) -> str:
    f = tmp_path / "log.jsonl"
    f.write_text("\n".join(json.dumps({"frac_reward_zero_std": 0.5, "reward": 0.3})
                           for _ in range(3)))
    return str(f)


BOUNDS = [
    (["theory", "--p", *["0.5"] * 400, "--G", *["2"] * 400], "at most 100000 fit"),
    (["theory", "--G", str(2**31 - 1)], "--G must be an integer in [1, 1000000]"),
    (["quiz", "--n", str(2**31 - 1)], "--n must be at most 1000"),
    (["drill", "--n", str(2**31 - 1), "--no-progress"], "--n must be between 1 and 1000"),
    (["advise", "--pass-rates", str(CENSUS), "--max-G", str(2**31 - 1)],
     "(--max-G) must be <= 1000000"),
    (["advise", "--pass-rates", str(CENSUS), "--budget", str(2**41)], "--budget) <= 10**12"),
    (["advise", "--pass-rates", "LOG", "--num-generations", str(2**31 - 1)],
     "num_generations must be an integer in [2, 1000000]"),
]


@pytest.mark.parametrize("argv,fragment", BOUNDS, ids=lambda v: v if isinstance(v, str) else
                         " ".join(a for a in v if len(a) < 12)[:40])
def test_a_count_no_machine_can_serve_is_refused_up_front(argv, fragment, tmp_path, capsys):
    argv = [_trl_log(tmp_path) if a == "LOG" else a for a in argv]
    start = time.monotonic()
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2 and time.monotonic() - start < 2.0
    one_line(capsys.readouterr().err, fragment)


def test_advise_refuses_more_prompts_than_fit_before_computing(tmp_path, monkeypatch):
    monkeypatch.setattr(adv, "MAX_PROMPTS", 10)
    f = tmp_path / "rates.csv"
    f.write_text("pass_rate\n" + "0.5\n" * 11)
    with pytest.raises(adv.AdviseError, match="11 prompts; at most 10 fit"):
        adv.load_pass_rates(f)


def test_a_budget_of_2_31_is_answered_not_refused(capsys):
    """A budget is arithmetic only (prompts = budget / G): a large one is fine."""
    assert main(["advise", "--pass-rates", str(CENSUS), "--budget", str(2**31 - 1), "--max-G",
                 "16", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"][0]["prompts_per_step"] == (2**31 - 1) // 2


# ======================================================================================
# 5. The library never answers garbage
# ======================================================================================
def _exact_beta_moment(G: int, a: float, b: float) -> float:
    """E[p^G] for p ~ Beta(a, b) as the product of (a + i)/(a + b + i), in log space."""
    terms = []
    for i in range(G):
        q = b / (a + b + i)
        terms.append(math.log1p(-q) if q < 0.5 else math.log(a + i) - math.log(a + b + i))
    return math.exp(math.fsum(terms))


def test_beta_forms_stay_right_for_large_a_and_b():
    """As a, b grow with a/(a + b) = m, E[p^G] tends to m^G: 1/8 at a = b, G = 3, where
    differences of betaln values returned 1.0 from a = b = 1e17 on."""
    for a in (1e17, 1e50, 1e300):  # (at a = 1e3 the exact value is 0.12519)
        assert theory.beta_all_pass_probability(3, a, a) == pytest.approx(0.125, rel=1e-12)
        assert theory.beta_all_fail_probability(3, a, a) == pytest.approx(0.125, rel=1e-12)
        assert theory.beta_zero_variance_probability(3, a, a) == pytest.approx(0.25, rel=1e-12)
        assert theory.beta_all_pass_probability(2, a / 3, a) == pytest.approx(1 / 16, rel=1e-12)
    worst = 0.0
    grid = (1e-3, 0.5, 1.0, 7.0, 99.0, 101.0, 1e4, 1e8, 1e17, 1e100, 1e300)
    for a in grid:
        for b in grid:
            for G in (1, 2, 3, 8, 64, 500):
                want = _exact_beta_moment(G, a, b)
                if want > 1e-280:
                    got = theory.beta_all_pass_probability(G, a, b)
                    worst = max(worst, abs(got / want - 1))
    assert worst < 1e-10, worst


LIBRARY = [
    # (call, fragment of the ValueError): each was a silent answer before issue 26
    (lambda: toy.beta_quantile(1.5, 1.0, 1.0), "q must be a probability"),
    (lambda: toy.beta_quantile(float("nan"), 1.0, 1.0), "q must be a probability"),
    (lambda: toy.beta_quantile(0.5, 0.0, 1.0), "a must be"),
    (lambda: toy.uniforms([1.5], [0]), "seeds must be integers"),
    (lambda: toy.uniforms([-1], [0]), "seeds must be integers in [0, 2**32 - 1]"),
    (lambda: toy.uniforms([2**32], [0]), "seeds must be integers in [0, 2**32 - 1]"),
    (lambda: toy.uniforms([0], [0.5]), "counters must be integers"),
    (lambda: toy.summarize([float("nan"), 1.0, 2.0]), "values must be finite"),
    (lambda: toy.empirical_dataset([2.5], 4), "successes must be an integer"),
    (lambda: toy.ToyConfig(num_generations=8.5), "num_generations must be an integer"),
    (lambda: adv.fit_beta_binomial([], []), "successes must hold at least one count"),
    (lambda: adv.fit_beta_binomial([float("nan")], [4]), "successes must be an integer"),
    (lambda: adv.fit_beta_binomial([5], [4]), "successes must lie in [0, trials]"),
    (lambda: adv.candidate_group_sizes(64, 0), "budget must be an integer >= 2"),
    (lambda: adv.candidate_group_sizes(64, -5), "budget must be an integer >= 2"),
    (lambda: adv.back_out_pass_rate(0.5, 4.5), "G must be an integer"),
    (lambda: adv.back_out_beta(0.5, 0.3, 8.5), "G must be an integer"),
    (lambda: adv.adaptive_allocation([0.5, 0.2], 100, max_G=64), "mean_G must be an integer"),
    (lambda: adv.Difficulty("rates", "x", rates=[0.2, 0.5]).zero_variance_fraction(2.5),
     "G must be an integer"),
    (lambda: adv.Difficulty("counts", "x", successes=[5], trials=[4]),
     "successes must lie in [0, trials]"),
]


@pytest.mark.parametrize("call,fragment", LIBRARY, ids=[f for _, f in LIBRARY])
def test_the_library_refuses_instead_of_answering_garbage(call, fragment):
    with pytest.raises(ValueError) as exc:
        call()
    assert fragment in str(exc.value), exc.value


def test_counts_are_kept_as_integers_not_truncated_later():
    cfg = toy.ToyConfig(num_generations=8.0, steps=3.0)
    assert type(cfg.num_generations) is int and type(cfg.steps) is int
    assert adv.back_out_pass_rate(0.6, 8.0) == adv.back_out_pass_rate(0.6, 8)


def _greedy(p: np.ndarray, mean_G: int, min_G: int, max_G: int) -> np.ndarray:
    """The reference: one sample at a time to the largest gain (a heap)."""
    G = np.full(p.size, min_G)

    def gain(j):
        return p[j] ** G[j] * (1 - p[j]) + (1 - p[j]) ** G[j] * p[j]

    heap = [(-gain(j), j) for j in range(p.size)]
    heapq.heapify(heap)
    left = p.size * (mean_G - min_G)
    while left > 0:
        _, j = heapq.heappop(heap)
        G[j] += 1
        left -= 1
        if G[j] < max_G:
            heapq.heappush(heap, (-gain(j), j))
    return G


@settings(max_examples=200, deadline=None)
@given(rates=st.lists(st.floats(0, 1) | st.sampled_from([0.0, 1.0, 0.5, 1e-300]), min_size=1,
                      max_size=40),
       sizes=st.tuples(st.integers(1, 70), st.integers(1, 70), st.integers(1, 70)))
def test_adaptive_allocation_keeps_its_contract_and_is_optimal(rates, sizes):
    min_G, mean_G, max_G = sorted(sizes)
    p = np.array(rates)
    G = adv.adaptive_allocation(p, mean_G, min_G=min_G, max_G=max_G)
    assert G.dtype == np.int64 and G.shape == p.shape
    assert int(G.sum()) == p.size * mean_G  # Σ G_j = M · mean G, exactly
    assert G.min() >= min_G and G.max() <= max_G

    def value(Gs):
        return float(np.sum(theory.informative_probability(p, Gs)))

    best = value(_greedy(p, mean_G, min_G, max_G))
    assert value(G) >= best - 1e-12 * max(1.0, best)


def test_advise_evaluates_prompts_in_arrays_not_one_call_each(monkeypatch):
    """The cost of advise must not be one validated theory call per prompt (or per sample):
    counted, not timed (the timing is benchmarks/bench_advise.py)."""
    calls = {"n": 0}
    real = theory.informative_probability

    def counted(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(theory, "informative_probability", counted)
    rng = np.random.default_rng(0)
    p = rng.beta(0.5, 2.0, size=5000)
    d = adv.Difficulty("counts", "x", successes=rng.binomial(16, p), trials=np.full(5000, 16))
    a = adv.advise(d)
    assert calls["n"] <= 10, calls
    assert any(r["remedy"] == "adaptive G" for r in a.remedies)


# ======================================================================================
# 8. Issue 26, phase 2, the torch-free parts: task settings, task names, memory bounds,
#    schemas, locks held by a folder above, notebook entry points of the env variables
# ======================================================================================
# (task keyword arguments, fragment); each checked in a child with a deadline, because a
# count that slipped through used to draw billions of prompts or build a 2-billion-digit
# number (a hang, not an error)
TASK_SETTINGS = [
    ({"n_train": 2**31 - 1}, "n_train must be an integer >= 1 and <= 1000000"),
    ({"n_eval": 2**31 - 1}, "n_eval must be an integer >= 1 and <= 1000000"),
    ({"digits": [2**31 - 1]}, "digits must be an integer >= 1 and <= 18"),
    ({"digits": [1] * 100}, "digits must list 1 to 18 distinct integers"),
    ({"operands": [2**31 - 1]}, "operands must be an integer >= 2 and <= 8"),
    ({"seed": 2**40}, "seed must be an integer >= 0 and <= 4294967295"),
    ({"ops": ["+"]}, "ops must be a string of 1 to 16 of the characters"),
    ({"ops": "+/"}, "ops must be a string of 1 to 16 of the characters"),
    ({"ops": "+" * 17}, "ops must be a string of 1 to 16 of the characters"),
    ({"ops": ""}, "ops must be a string of 1 to 16 of the characters"),
    ({"digits": [2, 3], "n_train": 900_000, "n_eval": 100_000},
     "more distinct prompts than digits=(2, 3), operands=(2,), ops='+' allow (at most 409050)"),
    ({"digits": [1], "n_train": 60}, "(at most 50)"),
]


@pytest.mark.parametrize("kwargs,fragment", TASK_SETTINGS,
                         ids=[json.dumps(k)[:40] for k, _ in TASK_SETTINGS])
def test_a_task_setting_is_refused_before_a_prompt_is_drawn(kwargs, fragment, tmp_path):
    script = textwrap.dedent("""
        import json, sys, time
        from grpolab.tasks.arithmetic import ArithmeticTask
        start = time.monotonic()
        try:
            ArithmeticTask(**json.loads(sys.argv[1]))
            print("accepted")
        except ValueError as exc:
            print(f"{time.monotonic() - start:.3f} {exc}")
    """)
    done = subprocess.run([sys.executable, "-c", script, json.dumps(kwargs)],
                          capture_output=True, text=True, timeout=60, env=_env(tmp_path),
                          preexec_fn=_limit_memory)
    assert done.returncode == 0, done.stderr[-2000:]
    seconds, _, message = done.stdout.strip().partition(" ")
    assert fragment in message, done.stdout
    assert float(seconds) < 1.0, done.stdout  # refused up front, not after drawing


def test_the_arithmetic_task_still_draws_the_same_prompts():
    """The checks are not a new task: the labs' prompt sets are unchanged (hashes of the
    prompts drawn by the code before the checks)."""
    import hashlib

    from grpolab.tasks.arithmetic import ArithmeticTask

    def digest(task):
        rows = [(p.text, p.answer, p.difficulty) for p in task.train_prompts + task.eval_prompts]
        return hashlib.sha256(repr(rows).encode()).hexdigest()[:16]

    assert digest(ArithmeticTask(digits=[1, 2, 3, 4], operands=[2], ops="+", n_train=2000,
                                 n_eval=400, seed=0)) == "5e3d00f29907ddfb"
    assert digest(ArithmeticTask(digits=3, operands=(2, 3), ops="+-*", n_train=500, n_eval=50,
                                 seed=7)) == "f75023a7d2e6db8e"


def test_task_names_and_arguments_get_the_nearest_valid_one():
    from grpolab.tasks.registry import check_task, split_sizes

    for name, kwargs, fragment in (
            ("arithmetik", {}, "(did you mean 'arithmetic'?)"),
            ("arithmetic", {"digitz": [1]}, "takes no argument 'digitz' (did you mean 'digits'?)"),
            ("arithmetic_noisy", {"noise_sead": 1}, "(did you mean 'noise_seed'?)"),
            ("word_problems", {"n_trian": 5}, "(did you mean 'n_train'?)"),
            ("arithmetic", [1], "--task-kwargs must be a JSON object")):
        with pytest.raises(ValueError) as exc:
            check_task(name, kwargs)
        assert fragment in str(exc.value), str(exc.value)
    check_task("arithmetic_noisy", {"q": 0.1, "digits": [1]})  # the wrapper's and the task's
    assert split_sizes("arithmetic", {}) == (2000, 300)
    assert split_sizes("word_problems", {"n_eval": 7}) == (400, 7)


def test_a_memory_refusal_says_what_fits_and_that_is_true(monkeypatch):
    """The one-line refusal names the largest count that fits; that count passes and one
    more does not (the estimate and the message agree)."""
    import re

    import grpolab.models.memory as memory
    from grpolab.grpo.config import GRPOConfig, apply_overrides

    monkeypatch.setattr(memory, "machine_memory", lambda: 64 * 2**30)
    with pytest.raises(ValueError) as exc:
        apply_overrides(GRPOConfig(), num_generations=2, prompts_per_step=8192,
                        max_completion_length=4096)
    message = str(exc.value)
    assert "\n" not in message and "more than the 64 GiB this machine has" in message
    fits = int(re.search(r"at most (\d+) completions of 4096 tokens fit", message).group(1))
    assert 2 <= fits < 16384
    apply_overrides(GRPOConfig(), num_generations=2, prompts_per_step=fits // 2,
                    max_completion_length=4096)
    with pytest.raises(ValueError, match="completions of 4096 tokens fit"):
        apply_overrides(GRPOConfig(), num_generations=2, prompts_per_step=fits // 2 + 1,
                        max_completion_length=4096)


def test_every_count_of_a_run_config_has_a_stated_maximum():
    """At 2**31 - 1 every count-like field of GRPOConfig is refused up front in one line
    naming its flag (eval_every and the seeds are not counts of work)."""
    from grpolab.grpo.config import RULES, GRPOConfig, apply_overrides

    counts = [n for n, r in RULES.items() if r.kind == "int"
              and n not in ("eval_every", "seed", "census_seed", "advantage_ddof")]
    assert len(counts) == 10
    for name in counts:
        with pytest.raises(ValueError) as exc:
            apply_overrides(GRPOConfig(), {name: 2**31 - 1})
        assert str(exc.value).startswith(f"--{name.replace('_', '-')} "), str(exc.value)


def test_schema_nullable_and_extra_keys(tmp_path):
    from grpolab import _files

    spec = _files.Field("object", extra_keys=True, fields={
        "G": _files.Field("int", 1), "gap": _files.Field("real", 0, 1, nullable=True)})
    _files.check({"G": 2, "gap": None, "other": [1, 2]}, spec, "x.json")
    with pytest.raises(_files.CorruptFileError, match="field gap must be a finite number in "
                                                      r"\[0, 1\] or null, got 'wide'"):
        _files.check({"G": 2, "gap": "wide"}, spec, "x.json")
    strict = _files.Field("object", fields={"G": _files.Field("int", 1)})
    with pytest.raises(_files.CorruptFileError, match="unknown field 'g'"):
        _files.check({"G": 2, "g": 1}, strict, "x.json")


def test_a_lock_held_by_a_folder_above_is_found_and_our_own_is_not(tmp_path):
    from grpolab import _locks

    outer = tmp_path / "sweep"
    inner = outer / "runs" / "mixed"
    inner.mkdir(parents=True)
    child = _hold_lock(outer, tmp_path)
    try:
        assert child.stdout.readline().strip() == "held"
        assert _locks.held_above(inner) == (str(outer), child.pid)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    assert _locks.held_above(inner) is None  # free once the holder is gone
    with _locks.exclusive_lock(outer):  # held by this process: not a conflict
        assert _locks.held_above(inner) is None
    assert sorted(os.listdir(inner)) == []  # probing wrote nothing


def test_a_lock_file_removed_by_its_holder_is_not_held_as_an_orphan(tmp_path):
    """A holder may remove its lock file (a refused command undoing the folder it made)
    just before releasing it; a process that opened the old file meanwhile must notice
    the name no longer points at it and take the new one."""
    from grpolab import _locks

    fd = _locks._open_lock_file(str(tmp_path), _locks.LOCK_NAME)
    try:
        assert _locks._still_named(fd, str(tmp_path), _locks.LOCK_NAME)
        os.unlink(tmp_path / _locks.LOCK_NAME)
        assert not _locks._still_named(fd, str(tmp_path), _locks.LOCK_NAME)
        (tmp_path / _locks.LOCK_NAME).write_text("")
        assert not _locks._still_named(fd, str(tmp_path), _locks.LOCK_NAME)
    finally:
        os.close(fd)
    with _locks.exclusive_lock(tmp_path):
        assert (tmp_path / _locks.LOCK_NAME).read_text().strip() == str(os.getpid())


@pytest.mark.parametrize("var", ["GRPOLAB_CACHE", "GRPOLAB_BOOK_DIR"])
def test_env_variables_are_checked_where_notebooks_read_them(var, tmp_path, monkeypatch):
    """A notebook calls smollm2.cache_dir() or build.default_book_dir() without the CLI's
    check at start-up: the variable is named there too, at once."""
    from grpolab._files import EnvironmentSettingError
    from grpolab.book.build import default_book_dir
    from grpolab.models.smollm2 import cache_dir

    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    monkeypatch.setenv(var, str(a_file))
    with pytest.raises(EnvironmentSettingError, match=f"{var}=.*names a file, not a folder"):
        (cache_dir if var == "GRPOLAB_CACHE" else default_book_dir)()
    monkeypatch.setenv(var, str(tmp_path / "fine"))
    got = cache_dir() if var == "GRPOLAB_CACHE" else default_book_dir()
    assert str(got).startswith(str(tmp_path / "fine"))
