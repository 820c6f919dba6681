"""Reliability round 4 (issue 36), classes 1, 3, 6 and 7: one rule for output paths,
writers that never write through a link or over a non-regular file, `lab train` that
reruns, refusals at the door, and the smaller cases.

Each test plants the case the issue reports and checks the verdict; the torch-free tests
come first, then the ones that train (a few seconds from the session's tiny warm start).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import grpolab
from grpolab.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
SRC = str(Path(grpolab.__file__).resolve().parents[1])  # children import the same grpolab


@pytest.fixture(autouse=True)
def _no_real_home(tmp_path, monkeypatch):
    """No test may read or write the real ~/.local/share/grpolab."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()


def _env(tmp_path: Path, **extra) -> dict:
    return {**os.environ, "PYTHONPATH": SRC, "XDG_DATA_HOME": str(tmp_path / "xdg"),
            "HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1", **extra}


def one_line(err: str, fragment: str) -> None:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert fragment in err, err


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _finished_sweep(folder: Path) -> Path:
    """The files that make ``folder`` a finished sweep with one finished run (as written by
    grpolab.labs.sweep.sweep), enough for the path rule to know what it is."""
    run = folder / "runs" / "mixed" / "G2-seed0"
    run.mkdir(parents=True)
    (folder / "sweep.json").write_text('{"torch_threads": 1}')
    (folder / "summary.json").write_text('{"preset": "cpu-quick", "runs": []}')
    (run / "log.jsonl").write_text('{"step": 0}\n')
    (run / "summary.json").write_text('{"config": {}, "steps": 2}')
    return run


SWEEP = ["lab", "sweep", "--preset", "cpu-quick", "--quiet", "--no-plots"]
TRAIN = ["lab", "train", "--preset", "cpu-quick", "--quiet"]
REMEDIES = ["remedies", "--item", "prompts-x-g", "--no-plots"]
PASS_RATES = ["lab", "pass-rates"]


# ======================================================================================
# Class 1: one rule for output paths, checked before any folder is made
# ======================================================================================
def _plant_kind(kind: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    name = {"sweep": "sweep.json", "run": "log.jsonl", "remedies": "item.json",
            "pass-rates": "pass_rates.json"}[kind]
    (folder / name).write_text("{}\n")
    return folder


# (command, where --out points, fragment): every command that owns an output folder
WRONG_OUT = [
    pytest.param(SWEEP, "sweep-run", "which is a sweep's folder", id="sweep-into-a-sweeps-run"),
    pytest.param(SWEEP, "sweep-runs", "which is a sweep's folder", id="sweep-into-a-sweeps-runs"),
    pytest.param(SWEEP, "run", "is a training run's folder", id="sweep-onto-a-train-run"),
    pytest.param(SWEEP, "remedies", "is a remedy lab's folder", id="sweep-onto-remedies"),
    pytest.param(SWEEP, "over-results", "holds other results", id="sweep-over-results"),
    pytest.param(TRAIN, "sweep", "is a sweep's folder", id="train-onto-a-sweep"),
    pytest.param(TRAIN, "sweep-run", "which is a sweep's folder", id="train-into-a-sweeps-run"),
    pytest.param(TRAIN, "over-results", "holds other results", id="train-over-results"),
    pytest.param(REMEDIES, "sweep", "is a sweep's folder", id="remedies-onto-a-sweep"),
    pytest.param(REMEDIES, "pass-rates", "pass-rate measurement", id="remedies-onto-pass-rates"),
    pytest.param(PASS_RATES, "run", "is a training run's folder", id="pass-rates-onto-a-run"),
    pytest.param(["lab", "plot"], "run", "is a training run's folder", id="plot-onto-a-run"),
    *[pytest.param(cmd, "root", "is the file-system root", id=f"{name}-root")
      for name, cmd in (("sweep", SWEEP), ("train", TRAIN), ("remedies", REMEDIES),
                        ("pass-rates", PASS_RATES))],
    *[pytest.param(cmd, "home", "is a home folder", id=f"{name}-home")
      for name, cmd in (("sweep", SWEEP), ("train", TRAIN), ("remedies", REMEDIES),
                        ("pass-rates", PASS_RATES))],
]


def _out_for(where: str, tmp_path: Path) -> tuple[str, Path]:
    """The --out argument for a case, and the folder whose files must not change."""
    results = tmp_path / "results"
    if where == "sweep-run":
        return str(_finished_sweep(results / "sweep")), results
    if where == "sweep-runs":
        return str(_finished_sweep(results / "sweep").parents[1]), results
    if where == "over-results":
        _finished_sweep(results / "sweep")
        return str(results), results
    if where == "root":
        return "/", results
    if where == "home":
        return str(tmp_path / "home"), tmp_path / "home"
    folder = _plant_kind(where, results / where)
    if where == "sweep":
        (folder / "summary.json").write_text('{"preset": "cpu-quick"}')
    return str(folder), results


@pytest.mark.parametrize("argv,where,fragment", WRONG_OUT)
def test_an_output_folder_the_command_may_not_own_is_refused(argv, where, fragment, tmp_path,
                                                             capsys):
    """`lab sweep --out` at another sweep's finished run replaced its summary.json; `--out /`
    wrote into the root and blocked every other writer. Each is refused in one line, before
    torch, and every file stays as it was (no lock file, no folder)."""
    out, watched = _out_for(where, tmp_path)
    watched.mkdir(parents=True, exist_ok=True)
    before = _tree(watched)
    root_before = set(os.listdir("/"))
    if argv == ["lab", "plot"] and where == "run":
        (Path(out) / "summary.json").write_text("{}")
        before = _tree(watched)
    assert main([*argv, "--out", out]) == 2
    one_line(capsys.readouterr().err, fragment)
    assert _tree(watched) == before
    assert not (Path(out) / ".grpolab.lock").exists()
    assert set(os.listdir("/")) == root_before


def test_refusals_of_the_path_rule_come_before_torch(tmp_path):
    run = _finished_sweep(tmp_path / "sweep")
    code = (f"import sys; from grpolab.cli.main import main; "
            f"c = main({[*SWEEP, '--out', str(run)]!r}); "
            "print(c, 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path), capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.split() == ["2", "False"], done.stderr
    one_line(done.stderr, "which is a sweep's folder")


@pytest.mark.parametrize("link", ["runs", "runs/mixed/G2-seed0/summary.json", "plots"])
def test_a_link_inside_an_output_folder_is_refused_before_any_write(link, tmp_path, capsys):
    """A symlinked folder or file inside --out would take a writer's files out of it."""
    sweep = tmp_path / "sweep"
    _finished_sweep(sweep)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "summary.json").write_text("precious")
    target = sweep / link
    if target.exists():
        if target.is_dir():
            target.rename(elsewhere / "moved")
            target.symlink_to(elsewhere / "moved")
        else:
            target.unlink()
            target.symlink_to(elsewhere / "summary.json")
    else:
        target.symlink_to(elsewhere)
    before = _tree(tmp_path)
    assert main([*SWEEP, "--out", str(sweep)]) == 2
    one_line(capsys.readouterr().err, f"{target} is a symbolic link; grpolab writes only")
    assert _tree(tmp_path) == before and not (sweep / ".grpolab.lock").exists()


def test_the_same_kind_of_folder_is_resumed_not_refused(tmp_path):
    from grpolab._paths import check_output_folder

    sweep = tmp_path / "sweep"
    _finished_sweep(sweep)
    check_output_folder(sweep, "sweep")  # a rerun of the sweep resumes it
    check_output_folder(_plant_kind("run", tmp_path / "run"), "run")
    check_output_folder(tmp_path / "new" / "folder", "remedies")
    check_output_folder(tmp_path / "sweep" / "cache", None)  # not a result: no kind rule


@pytest.mark.parametrize("argv", [SWEEP, TRAIN, REMEDIES, PASS_RATES])
def test_a_path_too_long_is_refused_before_any_folder_is_made(argv, tmp_path, capsys):
    """A 25-level path too long for the file system was refused only after makedirs had
    made 20 of its folders."""
    deep = tmp_path.joinpath(*[f"level{i:02d}-" + "x" * 200 for i in range(25)])
    assert main([*argv, "--out", str(deep)]) == 2
    one_line(capsys.readouterr().err, "this file system allows")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_a_name_too_long_for_the_file_system_is_refused(tmp_path, capsys):
    assert main([*TRAIN, "--out", str(tmp_path / ("n" * 300) / "run")]) == 2
    one_line(capsys.readouterr().err, "more than the 255 this file system allows")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


@pytest.mark.parametrize("kind", ["symlink", "hard-link"])
def test_a_planted_log_never_truncates_what_it_points_at(kind, tmp_path):
    """RunLog opened log.jsonl with open(path, "w"): a symlinked or hard-linked log.jsonl
    truncated and overwrote the file it points at, in lab train, lab sweep and remedies."""
    from grpolab.grpo.records import RunLog

    out = tmp_path / "run"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (os.symlink if kind == "symlink" else os.link)(victim, out / "log.jsonl")
    if kind == "symlink":
        with pytest.raises(ValueError, match="log.jsonl is a symbolic link"):
            RunLog(out)
    else:
        log = RunLog(out)
        log.write({"step": 0})
        log.close()
        assert (out / "log.jsonl").read_text() == '{"step": 0}\n'
    assert victim.read_text() == "precious\n"


def test_a_planted_log_is_refused_by_lab_train_in_one_line(tmp_path, tiny_cache, capsys):
    out = tmp_path / "run"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (out / "log.jsonl").symlink_to(victim)
    assert main(_train_argv(out, tiny_cache)) == 2
    one_line(capsys.readouterr().err, "is a symbolic link")
    assert victim.read_text() == "precious\n" and (out / "log.jsonl").is_symlink()


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "folder", "symlink"])
def test_the_atomic_writer_writes_only_onto_a_regular_file_or_a_new_path(kind, tmp_path):
    """`smollm2 prepare --json /dev/full` replaced the device node: a rename lands on
    whatever the path is. A FIFO, a folder and a link stand in for the device (root could
    really replace /dev/full)."""
    from grpolab._files import NotRegularFileError, write_atomic

    target = tmp_path / "target"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    if kind == "fifo":
        _fifo(target)
    elif kind == "folder":
        target.mkdir()
    else:
        target.symlink_to(victim)
    with pytest.raises(NotRegularFileError, match="regular file or a new path"):
        write_atomic(target, "new")
    mode = os.lstat(target).st_mode
    assert {"fifo": stat.S_ISFIFO, "folder": stat.S_ISDIR, "symlink": stat.S_ISLNK}[kind](mode)
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "target", "victim.txt"]


@pytest.mark.parametrize("kind", ["fifo", "symlink", "folder"])
def test_smollm2_prepare_json_onto_a_non_regular_file_is_refused_before_work(kind, tmp_path,
                                                                             monkeypatch,
                                                                             capsys):
    import grpolab.models.smollm2 as sm

    calls = []
    monkeypatch.setattr(sm, "time_loads", lambda: calls.append(1) or {
        "gguf_seconds": 1.0, "cached_seconds": 0.1, "parameters": 1e6})
    target = tmp_path / "times.json"
    if kind == "fifo":
        _fifo(target)
    elif kind == "folder":
        target.mkdir()
    else:
        (tmp_path / "victim.txt").write_text("precious\n")
        target.symlink_to(tmp_path / "victim.txt")
    assert main(["smollm2", "prepare", "--time-loads", "--json", str(target)]) == 2
    one_line(capsys.readouterr().err, f"--json {target}")
    assert calls == []  # refused before the minute of loading
    if kind == "symlink":
        assert (tmp_path / "victim.txt").read_text() == "precious\n" and target.is_symlink()
    # and a regular file or a new path is written, with the user's umask
    monkeypatch.setattr(os, "umask", os.umask)
    good = tmp_path / "good.json"
    old = os.umask(0o027)
    try:
        assert main(["smollm2", "prepare", "--time-loads", "--json", str(good)]) == 0
    finally:
        os.umask(old)
    assert json.loads(good.read_text())["gguf_seconds"] == 1.0
    assert stat.S_IMODE(good.stat().st_mode) == 0o640


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomically_written_results_keep_the_users_umask(mask, mode, tmp_path):
    """Every atomically written result was mode 0600 (mkstemp's), whatever the umask."""
    from grpolab._files import write_atomic
    from grpolab.grpo.records import RunLog, write_json_atomic

    old = os.umask(mask)
    try:
        write_atomic(tmp_path / "a.txt", "x")
        write_json_atomic(tmp_path / "b.json", {"x": 1})
        RunLog(tmp_path).close()
    finally:
        os.umask(old)
    for name in ("a.txt", "b.json", "log.jsonl"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode, name
    (tmp_path / "b.json").chmod(0o640)  # a file rewritten keeps the mode its owner gave it
    write_json_atomic(tmp_path / "b.json", {"x": 2})
    assert stat.S_IMODE((tmp_path / "b.json").stat().st_mode) == 0o640


def test_a_plot_is_never_written_through_a_planted_link(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from grpolab.labs.common import save_figure

    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (tmp_path / "plots").mkdir()
    (tmp_path / "plots" / "accuracy.png").symlink_to(victim)
    with pytest.raises(ValueError, match="symbolic link"):
        save_figure(plt.figure(), tmp_path / "plots", "accuracy")
    assert victim.read_text() == "precious\n"
    assert sorted(os.listdir(tmp_path / "plots")) == ["accuracy.png"]


def test_a_pool_that_links_out_of_itself_is_refused_before_any_copy(tmp_path, capsys):
    """A remedy's --pool copy followed symlinks: a linked file anywhere readable was copied
    into --out."""
    secret = tmp_path / "secret.txt"
    secret.write_text('{"step": 0, "secret": "precious"}\n')
    pool = tmp_path / "pool"
    run = pool / "0123456789abcdef"
    run.mkdir(parents=True)
    (run / "summary.json").write_text('{"config": {}}')
    (run / "log.jsonl").symlink_to(secret)
    out = tmp_path / "out"
    assert main([*REMEDIES, "--out", str(out), "--pool", str(pool)]) == 2
    one_line(capsys.readouterr().err, f"{run / 'log.jsonl'} is a symbolic link")
    assert not out.exists()
    # a pool that is itself a link out is refused the same way
    (tmp_path / "pool-link").symlink_to(pool)
    assert main([*REMEDIES, "--out", str(out), "--pool", str(tmp_path / "pool-link")]) == 2
    one_line(capsys.readouterr().err, "is a symbolic link")


def test_publish_never_copies_through_a_link(tmp_path):
    from grpolab.labs.remedies.report import publish

    secret = tmp_path / "secret.txt"
    secret.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").symlink_to(secret)
    dest = tmp_path / "dest"
    with pytest.raises(ValueError, match="symbolic link"):
        publish(out, dest)
    assert not dest.exists()
    (out / "results.json").unlink()
    (out / "results.json").write_text('{"ok": 1}')
    assert publish(out, dest) == [str(dest / "results.json")]
    assert (dest / "results.json").read_text() == '{"ok": 1}'


# ======================================================================================
# Class 3: lab train reruns and resumes with --threads
# ======================================================================================
def _train_argv(out: Path, cache: str, steps: int = 2) -> list[str]:
    from conftest import TINY_TASK, TINY_WARM_STEPS

    warm = json.dumps({"task_kwargs": TINY_TASK, "steps": TINY_WARM_STEPS})
    return ["lab", "train", "--out", str(out), "--cache", cache, "--task-kwargs",
            json.dumps(TINY_TASK), "--warmstart", warm, "--G", "2", "--prompts-per-step", "4",
            "--steps", str(steps), "--max-train-prompts", "40", "--max-eval-prompts", "10",
            "--eval-samples", "1", "--threads", "1", "--quiet", "--device", "cpu"]


def _comparable(summary: dict) -> dict:
    """A run summary without what differs between two identical runs (clock, provenance)."""
    drop = {"seconds", "time", "started", "finished", "provenance", "git_commit", "hostname",
            "device", "seconds_per_step"}
    return {k: v for k, v in summary.items() if k not in drop and "second" not in k}


def test_lab_train_with_threads_reruns_as_a_no_op(tmp_path, tiny_cache, capsys):
    """The finished-run check computed the warm-start key (which holds the thread count)
    before --threads was applied, so the second identical command exited 2 with "trained
    from warm start X, this command's is Y". torch's thread count is set to 2 first, as on
    any machine with two cores, so the case is planted whatever this machine has."""
    import torch

    threads = torch.get_num_threads()
    out = tmp_path / "run"
    try:
        torch.set_num_threads(2)
        assert main(_train_argv(out, tiny_cache)) == 0, capsys.readouterr().err
        first = (out / "summary.json").read_bytes()
        log = (out / "log.jsonl").read_bytes()
        capsys.readouterr()
        torch.set_num_threads(2)
        assert main(_train_argv(out, tiny_cache)) == 0, capsys.readouterr().err
    finally:
        torch.set_num_threads(threads)
    assert "holds a finished run of this config; not training again" in capsys.readouterr().out
    assert (out / "summary.json").read_bytes() == first
    assert (out / "log.jsonl").read_bytes() == log


def test_lab_train_killed_at_a_random_moment_resumes_to_the_uninterrupted_result(tmp_path,
                                                                                 tiny_cache):
    """kill -9 while the run trains, then the same command: it finishes, with the summary
    (and log) of a run never interrupted. The moment is drawn from a seeded generator over
    the steps the log shows, so a failure reproduces."""
    import random

    steps = 12
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    env = _env(tmp_path)
    argv = [sys.executable, "-m", "grpolab"]
    done = subprocess.run([*argv, *_train_argv(whole, tiny_cache, steps)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    at_step = random.Random(36).randrange(1, steps - 1)
    child = subprocess.Popen([*argv, *_train_argv(killed, tiny_cache, steps)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        log = killed / "log.jsonl"
        while True:
            assert child.poll() is None, child.stderr.read()
            rows = log.read_text().splitlines() if log.exists() else []
            if any(json.loads(r).get("step", 0) >= at_step for r in rows if r.endswith("}")):
                break
            assert time.monotonic() < deadline, "the run never reached the step to kill at"
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stderr.close()
    assert not (killed / "summary.json").exists()
    again = subprocess.run([*argv, *_train_argv(killed, tiny_cache, steps)], env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    a = json.loads((whole / "summary.json").read_text())
    b = json.loads((killed / "summary.json").read_text())
    assert _comparable(a) == _comparable(b)

    def rows(folder):
        return [{k: v for k, v in json.loads(line).items() if "time" not in k
                 and "second" not in k} for line in (folder / "log.jsonl").read_text().splitlines()]

    assert rows(whole) == rows(killed)


# ======================================================================================
# Class 6: checks at the door
# ======================================================================================
def _unwritable(tmp_path: Path) -> Path:
    """A folder this process cannot write into (root ignores modes: use /proc)."""
    if os.geteuid() == 0:
        return Path("/proc/1/x")
    d = tmp_path / "locked"
    d.mkdir()
    d.chmod(0o555)
    return d / "x"


def test_an_unwritable_cache_is_refused_before_dequantizing(tmp_path, monkeypatch, capsys):
    """An unwritable GRPOLAB_CACHE was found after 16 s of dequantizing, in 10 lines."""
    import grpolab.models.smollm2 as sm

    def never(*_a, **_k):
        raise AssertionError("the GGUF file was read before the cache was checked")

    monkeypatch.setattr(sm, "_from_pretrained", never)
    cache = _unwritable(tmp_path)
    monkeypatch.setenv("GRPOLAB_CACHE", str(cache))
    start = time.monotonic()
    assert main(["smollm2", "prepare"]) == 2
    assert time.monotonic() - start < 2.0
    one_line(capsys.readouterr().err, f"GRPOLAB_CACHE {cache}: cannot write the "
             "SmolLM2 cache there")
    # every command that loads SmolLM2 refuses it the same way, before torch
    for argv in (["lab", "pass-rates", "--out", str(tmp_path / "pr")],
                 ["lab", "train", "--preset", "gpu-smollm2", "--device", "cpu",
                  "--out", str(tmp_path / "train")],
                 ["lab", "sweep", "--preset", "gpu-smollm2", "--device", "cpu",
                  "--out", str(tmp_path / "sweep")]):
        code = (f"import sys; from grpolab.cli.main import main; c = main({argv!r}); "
                "print(c, 'torch' in sys.modules)")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env=_env(tmp_path, GRPOLAB_CACHE=str(cache)), timeout=120)
        assert done.stdout.split() == ["2", "False"], (argv, done.stdout, done.stderr)
        one_line(done.stderr, f"GRPOLAB_CACHE {cache}: cannot write the SmolLM2 cache there")
        assert not (tmp_path / argv[-1]).exists()
    # and the loader itself, for a notebook or a script
    with pytest.raises(OSError, match="cannot write the SmolLM2 cache"):
        sm.load_smollm2(device="cpu")
    with pytest.raises(OSError, match="the cache .*cannot write the SmolLM2 cache"):
        sm.load_smollm2(cache=cache / "elsewhere", device="cpu")


def test_a_proxy_variable_does_not_disable_the_offline_short_cut(monkeypatch):
    """Any proxy variable made the hub count as reachable: an unknown hub id then took 49 s
    and 23 lines. The proxy is now what is tried (here a closed port), and NO_PROXY for the
    hub's host means the hub itself is tried."""
    import socket

    from grpolab.models import tiny_llama
    from grpolab.models.tiny_llama import load_causal_lm

    for var in ("HF_HUB_OFFLINE", "NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")  # the discard port: nothing listens
    tried = []
    real = socket.create_connection

    def record(address, *args, **kwargs):
        tried.append(address)
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", record)
    assert tiny_llama._hub_reachable() is False
    assert tried == [("127.0.0.1", 9)]
    start = time.monotonic()
    with pytest.raises(FileNotFoundError) as exc:
        load_causal_lm("grpolab-tests/no-such-model", device="cpu")
    assert time.monotonic() - start < 20
    assert "hub cannot be reached" in str(exc.value) and "\n" not in str(exc.value)
    tried.clear()

    def unreachable(address, *args, **kwargs):
        tried.append(address)
        raise OSError("Network is unreachable")

    monkeypatch.setattr(socket, "create_connection", unreachable)
    monkeypatch.setenv("NO_PROXY", "huggingface.co")
    assert tiny_llama._hub_reachable() is False
    assert tried and tried[0][0] == "huggingface.co"


def test_pass_rates_shares_the_sweeps_temperature_bound_and_refuses_before_torch(tmp_path):
    """`lab pass-rates --temperature 1e-300` was accepted (its bound differed from the
    sweep's), sampled, then blamed diverged weights and a --learning-rate flag it does not
    have. Both commands now refuse it with the same line, before torch is imported."""
    errs = {}
    for name, argv in (("pass-rates", ["lab", "pass-rates"]), ("sweep", SWEEP)):
        code = (f"import sys; from grpolab.cli.main import main; "
                f"c = main({[*argv, '--out', str(tmp_path / name), '--temperature', '1e-300']!r}); "
                "print(c, 'torch' in sys.modules)")
        done = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path),
                              capture_output=True, text=True, timeout=120)
        assert done.stdout.split() == ["2", "False"], (name, done.stdout, done.stderr)
        errs[name] = done.stderr
        assert not (tmp_path / name).exists()
    one_line(errs["pass-rates"], "--temperature must be in [0.001, 100]")
    assert errs["pass-rates"] == errs["sweep"]


def test_a_pass_rate_sampling_failure_names_no_flag_the_command_lacks(monkeypatch):
    import types

    import torch

    import grpolab.grpo.rollout as rollout
    from grpolab.cli.main import build_parser
    from grpolab.labs.pass_rates import PassRateConfig, measure

    def diverged(*_a, **_k):
        raise FloatingPointError("the model's next-token distribution is not finite (NaN or "
                                 "inf logits): the weights have diverged; lower "
                                 "--learning-rate")

    monkeypatch.setattr(rollout, "sample", diverged)
    prompt = types.SimpleNamespace(text="1+1=", answer="2", difficulty=1)
    with pytest.raises(FloatingPointError) as exc:
        measure(torch.nn.Linear(1, 1), None, object(), [prompt], PassRateConfig(),
                progress=False)
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["lab"]
    pr = next(a for a in sub._actions if a.dest == "lab_command").choices["pass-rates"]
    flags = {o for a in pr._actions for o in a.option_strings}
    import re

    named = set(re.findall(r"--[a-z][a-z-]*", str(exc.value)))
    assert named and named <= flags, (named - flags, str(exc.value))


# ======================================================================================
# Class 7: the smaller cases
# ======================================================================================
def test_one_noise_batch_is_refused_not_treated_as_zero(tmp_path, capsys):
    assert main([*SWEEP, "--out", str(tmp_path / "s"), "--noise-batches", "1"]) == 2
    one_line(capsys.readouterr().err, "--noise-batches must be 0 (skip the gradient-noise "
             "measurement) or at least 2")
    assert not (tmp_path / "s").exists()
    from grpolab.labs.sweep.presets import get_preset

    assert get_preset("cpu-quick", noise_batches=2).noise_batches == 2
    assert get_preset("cpu-quick", noise_batches=0).noise_batches == 0


def test_two_values_for_the_warm_start_steps_are_refused(tmp_path, capsys):
    argv = [*SWEEP, "--out", str(tmp_path / "s"), "--warmstart", '{"steps": 0}',
            "--warmstart-steps", "5"]
    assert main(argv) == 2
    one_line(capsys.readouterr().err, "--warmstart-steps 5 and --warmstart's \"steps\": 0 "
             "both set the warm-start steps; give one of them")
    assert not (tmp_path / "s").exists()


def _progress_doc(**item) -> dict:
    rec = {"box": 2, "asked": 1, "passed": 1, "last_passed": True, "last_score": 1.0,
           "last_session": 1, **item}
    return {"format": "grpolab-drill-progress", "version": 1, "sessions": 1,
            "items": {"card2-open": rec}}


@pytest.mark.parametrize("item,fragment", [
    ({"passed": 5, "asked": 2}, "was passed 5 times but asked only 2"),
    ({"last_session": 7}, "last asked in session 7, but the file counts only 1 session(s)"),
    ({"asked": 0, "passed": 0}, "was never asked but has a last answer"),
], ids=["passed-more-than-asked", "session-from-the-future", "never-asked-but-answered"])
def test_an_impossible_progress_file_is_refused_and_not_rewritten(item, fragment, tmp_path,
                                                                   capsys):
    path = tmp_path / "progress.json"
    path.write_text(json.dumps(_progress_doc(**item)))
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    answers = tmp_path / "answers.txt"
    answers.write_text("an answer\na\n")
    assert main(["drill", "--chain", "card2", "--n", "1", "--progress", str(path),
                 "--answers", str(answers)]) == 2
    one_line(capsys.readouterr().err, fragment)
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_a_consistent_progress_file_is_still_read(tmp_path):
    from grpolab.drill.progress import Progress

    path = tmp_path / "progress.json"
    path.write_text(json.dumps(_progress_doc()))
    assert Progress.load(path).items["card2-open"]["passed"] == 1


@pytest.mark.parametrize("progress", [["--no-progress"], ["--progress", "PATH"]],
                         ids=["no-progress", "progress-file"])
def test_an_answers_read_error_is_named_as_such(progress, tmp_path, capsys):
    """A read error of --answers was reported as "cannot save the progress file None"."""
    if not os.path.exists("/proc/self/mem"):
        pytest.skip("needs /proc/self/mem (a file whose read fails with EIO)")
    path = tmp_path / "progress.json"
    progress = [str(path) if a == "PATH" else a for a in progress]
    assert main(["drill", "--chain", "card2", "--n", "1", *progress,
                 "--answers", "/proc/self/mem"]) == 2
    err = capsys.readouterr().err
    one_line(err, "--answers: cannot read /proc/self/mem (Input/output error)")
    assert "None" not in err and "save" not in err
    assert main(["quiz", "--n", "1", "--answers", "/proc/self/mem"]) == 2
    one_line(capsys.readouterr().err, "--answers: cannot read /proc/self/mem")


def test_a_relative_xdg_data_home_is_ignored(tmp_path, monkeypatch):
    """The XDG spec: a relative path in XDG_DATA_HOME is invalid and ignored."""
    from grpolab.drill.progress import default_path

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")
    assert default_path() == tmp_path / "home" / ".local" / "share" / "grpolab" / \
        "drill-progress.json"
    answers = tmp_path / "answers.txt"
    answers.write_text("an answer\na\n")
    main(["drill", "--chain", "card2", "--n", "1", "--answers", str(answers)])
    assert not (tmp_path / "relative").exists()
    assert (tmp_path / "home" / ".local" / "share" / "grpolab" / "drill-progress.json").is_file()
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # an absolute one is used
    assert default_path() == tmp_path / "xdg" / "grpolab" / "drill-progress.json"


def test_sweep_help_lists_every_preset(capsys):
    from grpolab.labs.sweep.presets import PRESETS

    with pytest.raises(SystemExit):
        main(["lab", "sweep", "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")
    missing = [name for name in PRESETS if name not in text]
    assert "cpu-compute" in PRESETS and not missing, missing
