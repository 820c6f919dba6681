"""The one experiment runner: a lab is a *plan* of named runs; this module executes any plan.

A lab (the G sweep, a remedy item) only says *what* to train, as data: a list of
:class:`PlannedRun` (a validated GRPOConfig, its folder, how its starting census is made, the
batch-source and reward-task factories, extra summary fields). Everything else is done here,
once per command::

    with Runner(out) as runner:        # the command's one lock on its output folder
        finished = runner.check(plan)  # configs validated once, finished runs read once
        ...                            # the lab writes its record (sweep.json, item.json)
        summaries = runner.run(plan, finished, workers=N)  # censuses, then missing runs

Censuses have one key: :func:`census_stem` of the hashed :func:`census_inputs`, under the
plan's cache folder, plus an optional readable alias (the sweep's ``census-d1-2-3.npy``,
which its reports and chapters read). Independent runs go to ``workers`` processes (spawn
context, each with the parent's torch thread count, or its own GPU); every run seeds its own
generators, so a run trained in a worker is bit for bit the run trained serially. A run
writes ``summary.json`` last, so a killed command resumes where it stopped. A failed run
fails the command with that run's own error.

The runner receives plans as data and imports no lab (an import-linter contract in
pyproject.toml says so).

Derived in: book/labs/01-g-sweep.md (the sweep's runs) and book/labs/03-remedies.md (the
remedy items' runs).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["CensusSpec", "PlannedRun", "Runner", "census_inputs", "default_workers",
           "planned_completions", "EXECUTORS"]

#: How independent runs are executed: ``local`` (this machine's processes, the default) or
#: ``ray`` (a Ray cluster, ``pip install grpolab[cluster]``).
EXECUTORS = ("local", "ray")


def census_inputs(config, *, seed: int, samples: int | None = None) -> dict:
    """What a pass-rate census of ``config``'s starting policy depends on: the census's one
    key (hashed by :func:`grpolab.grpo.records.census_stem`). ``samples`` is part of the key
    when the census is measured exactly that wide (the remedies); without it, any census at
    least as wide is reused (the sweep, which measures one wide census for every G)."""
    inputs = {"warmstart_key": config.warmstart_key, "model": config.model,
              "task": config.task, "task_kwargs": config.task_kwargs,
              "train_difficulties": config.train_difficulties,
              "max_train_prompts": config.max_train_prompts,
              "temperature": config.temperature, "top_p": config.top_p,
              "max_completion_length": config.max_completion_length, "seed": seed}
    if samples is not None:
        inputs["samples"] = samples
    return inputs


@dataclass(frozen=True)
class CensusSpec:
    """How a run's starting census is measured: ``samples`` sampled completions per training
    prompt from the starting policy, exact-match graded, generator seeded with ``seed``.
    ``alias`` is a readable stem (``out/census-d1-2-3``) where a copy is kept for readers."""

    samples: int
    seed: int
    keyed_by_width: bool = False  # samples in the key: measured exactly this wide
    alias: str | None = None


@dataclass
class PlannedRun:
    """One run of a plan. ``batches``/``task`` are factories (picklable: module functions or
    ``functools.partial``) so that a worker process builds its own; None means the loop's
    uniform batches and the config's task. ``pool_key`` names the run in a shared pool of
    finished runs by config (copied, not retrained); ``check_log`` also checks a finished
    run's log ends with its final evaluation."""

    name: str
    config: object  # a GRPOConfig, validated by the lab that built it
    folder: str
    census: CensusSpec
    batches: Callable | None = None
    task: Callable | None = None
    extra: dict = field(default_factory=dict)
    pool_key: str | None = None
    check_log: bool = False


def default_workers(device: str = "cpu", threads: int | None = 1) -> int:
    """What this machine holds: one worker per GPU on CUDA, else one per ``threads`` CPU
    cores."""
    import torch

    from grpolab.models.device import resolve_device

    if resolve_device(device).type == "cuda":
        return max(1, torch.cuda.device_count())
    return max(1, (os.cpu_count() or 1) // max(1, threads or os.cpu_count() or 1))


class Runner:
    """Executes plans into ``out``. Entering it takes ``out``'s lock
    (:func:`grpolab.grpo.records.output_lock`): the one lock site of a lab command. A command
    line enters it first, before torch is imported, so a second writer is refused at once;
    the lab function it calls (:func:`grpolab.labs.sweep.sweep.run_sweep`, say) enters the
    same Runner again, which takes nothing. Called from Python with a folder, the lab
    function makes and enters its own.

    ``cache_dir``: the warm-start and census cache (default ``out/cache``); ``pool_dir``:
    finished runs by ``pool_key`` (None: no pool)."""

    def __init__(self, out: str | os.PathLike, *, cache_dir: str | None = None,
                 pool_dir: str | None = None, progress: bool = True, log=print):
        self.out = os.fspath(out)
        self.cache_dir = cache_dir or os.path.join(self.out, "cache")
        self.pool_dir = pool_dir
        self.progress, self.log = progress, log
        self._lock, self._depth = None, 0

    @classmethod
    def of(cls, out, **kwargs) -> Runner:
        """``out`` itself when it is a Runner (its settings kept where ``kwargs`` are None),
        else a new Runner on the folder ``out``."""
        if isinstance(out, Runner):
            for k, v in kwargs.items():
                if v is not None:
                    setattr(out, k, v)
            return out
        return cls(out, **{k: v for k, v in kwargs.items() if v is not None})

    def __enter__(self) -> Runner:
        if self._depth == 0:
            from grpolab.grpo.records import output_lock

            lock = output_lock(self.out)
            lock.__enter__()
            self._lock = lock
        self._depth += 1
        return self

    def __exit__(self, *exc) -> bool | None:
        self._depth -= 1
        if self._depth:
            return None
        lock, self._lock = self._lock, None
        return lock.__exit__(*exc)

    # ------------------------------------------------------------------------- checks
    def check(self, plan: list[PlannedRun]) -> dict[str, dict]:
        """The finished runs of ``plan`` (name -> summary), each read once and checked against
        its config (:func:`grpolab.grpo.records.finished_run`: another config or warm start
        is refused, naming the folder). Writes nothing."""
        from grpolab.grpo.records import finished_run

        names = [r.name for r in plan]
        if len(set(names)) != len(names):
            raise ValueError(f"a plan names each run once; got {names}")
        done = {}
        for r in plan:
            s = finished_run(r.folder, r.config, check_log=r.check_log)
            if s is not None:
                done[r.name] = s
        return done

    # ------------------------------------------------------------------------- censuses
    def censuses(self, plan: list[PlannedRun], finished: dict[str, dict],
                 needed: set[str] | None = None, pool=None) -> dict[str, object]:
        """The census each run of ``needed`` (default: every run of ``plan``) starts from
        (name -> array, rows × its ``census_samples``), each measured at most once under its
        one key; a census that finished runs of ``plan`` were seeded from is never replaced
        (:func:`grpolab.grpo.records.cached_census`'s ``frozen``). With a process ``pool``
        (the workers of :meth:`run`), censuses missing from the cache are measured side by
        side in it first; the same seed gives the same census in any process."""
        import numpy as np

        from grpolab.grpo.config import training_prompts
        from grpolab.grpo.records import cached_census, census_stem
        from grpolab.tasks.registry import get_task

        groups: dict[str, list[PlannedRun]] = {}
        for r in plan:
            spec = r.census
            inputs = census_inputs(r.config, seed=spec.seed,
                                   samples=spec.samples if spec.keyed_by_width else None)
            groups.setdefault(census_stem(self.cache_dir, inputs), []).append(r)
        policies: dict = {}
        out: dict[str, object] = {}
        start = time.time()
        needed = {r.name for r in plan} if needed is None else needed
        todo = []  # (stem, inputs, runs, frozen, samples, rows) of each census to read or make
        for stem, runs in groups.items():
            first = runs[0]
            cfg, spec = first.config, first.census
            inputs = census_inputs(cfg, seed=spec.seed,
                                   samples=spec.samples if spec.keyed_by_width else None)
            frozen = any(r.name in finished for r in runs)
            aliases = sorted({r.census.alias for r in runs if r.census.alias})
            for alias in aliases:  # checked even when every run of it finished
                _check_alias(alias, stem, inputs, frozen)
            if not any(r.name in needed for r in runs):
                continue
            rows = len(training_prompts(cfg, get_task(cfg.task, **cfg.task_kwargs))[0])
            todo.append((stem, inputs, runs, frozen, max(r.census.samples for r in runs), rows))
        if pool is not None:
            _measure_side_by_side(pool, self.cache_dir, todo)
        for stem, inputs, runs, frozen, samples, rows in todo:
            cfg, seed = runs[0].config, runs[0].census.seed

            def measure(n: int, cfg=cfg, seed=seed):
                return _measure_census(cfg, self.cache_dir, seed, n, policies=policies,
                                       progress=self.progress, log=self.log, start=start)

            census = cached_census(stem, inputs, measure, samples=samples, rows=rows,
                                   frozen=frozen, log=self.log)
            for alias in sorted({r.census.alias for r in runs if r.census.alias}):
                _write_alias(alias, stem, census, inputs, self.log)
            for r in runs:
                if r.name in needed:
                    out[r.name] = np.ascontiguousarray(
                        census[:, :r.config.pass_rate_window_size])
        return out

    # ------------------------------------------------------------------------- training
    def run(self, plan: list[PlannedRun], finished: dict[str, dict], *,
            workers: int | None = 1, executor: str = "local",
            address: str | None = None) -> dict[str, dict]:
        """Train every run of ``plan`` that has not finished (``finished`` from
        :meth:`check`); return every run's summary by name. Runs with one ``pool_key`` are
        trained once (the others copied); a run already in the pool is copied.

        ``workers``: runs trained at once (None: what the machine holds,
        :func:`default_workers`, or on Ray the cluster's CPUs / the thread count);
        ``executor``: ``local`` processes or ``ray`` tasks (``ray.init(address=address)``;
        None starts a local Ray instance)."""
        import torch

        if executor not in EXECUTORS:
            raise ValueError(f"--executor must be one of {', '.join(EXECUTORS)}; got "
                             f"{executor!r}")
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                    or workers < 1):
            raise ValueError(f"--workers must be an integer >= 1, got {workers!r}")
        if address is not None and executor != "ray":
            raise ValueError("--ray-address needs --executor ray")
        summaries = dict(finished)
        todo = [r for r in plan if r.name not in finished]
        # the pool: copy what is there; of runs sharing a key, train the first only
        leaders, followers = [], {}
        for r in todo:
            key = r.pool_key if self.pool_dir is not None else None
            if key is not None and self._from_pool(r, summaries):
                continue
            if key is not None and key in followers:
                followers[key].append(r)
                continue
            if key is not None:
                followers[key] = []
            leaders.append(r)
        threads = torch.get_num_threads()
        if executor == "local" and workers is None and leaders:
            workers = default_workers(leaders[0].config.device, threads)
        pool = None
        if executor == "local" and len(leaders) > 1 and workers > 1:
            # started now, so the workers' start-up and the censuses overlap
            pool, workers = _process_pool(min(workers, len(leaders)), threads,
                                          leaders[0].config.device)
        try:
            censuses = self.censuses(plan, finished, {r.name for r in leaders}, pool=pool)
            if not leaders:
                return {r.name: summaries[r.name] for r in plan}
            jobs = [_Job(r.name, r.config, r.folder, self.cache_dir, censuses[r.name],
                         r.batches, r.task, r.extra) for r in leaders]
            self._train(jobs, leaders, followers, summaries, pool, executor=executor,
                        address=address, threads=threads, workers=workers)
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        return {r.name: summaries[r.name] for r in plan}

    def _train(self, jobs: list[_Job], leaders: list[PlannedRun], followers: dict,
               summaries: dict, pool, *, executor: str, address: str | None, threads: int,
               workers: int | None) -> None:
        """Train ``jobs``: serially, in the process ``pool``, or on Ray."""

        def done(job: _Job, summary: dict) -> None:
            run = next(r for r in leaders if r.name == job.name)
            summaries[run.name] = summary
            if run.pool_key is not None and self.pool_dir is not None:
                pooled = os.path.join(self.pool_dir, run.pool_key)
                _copy_run(run.folder, pooled, {})
                for other in followers.get(run.pool_key, []):
                    self._from_pool(other, summaries)
            self.log(f"{run.name}: accuracy {summary['initial_accuracy']:.3f} -> "
                     f"{summary['final_accuracy']:.3f}, {summary['completions']} completions, "
                     f"{summary['seconds']:.0f} s")

        if executor == "ray":
            jobs.sort(key=lambda job: -planned_completions(job.config))  # longest first
            _run_on_ray(jobs, done, address=address, threads=threads, workers=workers)
        elif pool is None:
            from tqdm.auto import tqdm

            bar = tqdm(jobs, desc="runs", disable=not self.progress or len(jobs) < 2)
            for job in bar:
                bar.set_postfix_str(job.name)
                done(job, job.train(self.progress))
        else:
            # longest first: the last job to start sets the tail where a worker sits idle
            jobs.sort(key=lambda job: -planned_completions(job.config))
            _run_in_processes(jobs, done, pool=pool, workers=workers, progress=self.progress)

    def _from_pool(self, run: PlannedRun, summaries: dict) -> bool:
        """Copy ``run`` from the pool if a run of its config finished there."""
        from grpolab.grpo.records import finished_run

        pooled = os.path.join(self.pool_dir, run.pool_key)
        if not os.path.isfile(os.path.join(pooled, "summary.json")):
            return False
        _copy_run(pooled, run.folder, run.extra)
        summaries[run.name] = finished_run(run.folder, run.config)
        self.log(f"{run.name}: same config already trained, copied from {pooled}")
        return True


# ----------------------------------------------------------------------------- helpers
def _check_alias(alias: str, stem: str, inputs: dict, frozen: bool) -> None:
    """Check a census's readable alias against this command's inputs. One made from other
    inputs that finished runs were seeded from is refused, naming the difference (so is a
    damaged one). One made from the same inputs but kept only under its alias (a sweep
    folder from before the one key) becomes the keyed census."""
    import shutil

    from grpolab.grpo.records import config_differences, read_json, read_npy

    if not os.path.isfile(alias + ".npy"):
        return
    read_npy(alias + ".npy", "a pass-rate census", ndim=2)
    meta = read_json(alias + ".json", "a census record") if os.path.isfile(alias + ".json") else {}
    diff = config_differences(meta.get("inputs", {}), inputs)
    if diff and frozen:
        raise ValueError(f"{alias}.npy was made from other inputs than this command's "
                         f"({diff}), and finished runs were seeded from it; use another --out")
    if diff or os.path.isfile(stem + ".npy"):
        return
    os.makedirs(os.path.dirname(stem) or ".", exist_ok=True)
    for ext in (".npy", ".json"):
        tmp = f"{stem}{ext}.tmp-{os.getpid()}"
        shutil.copyfile(alias + ext, tmp)
        os.replace(tmp, stem + ext)


def _write_alias(alias: str, stem: str, census, inputs: dict, log) -> None:
    """Keep a copy of the keyed census under its readable alias (rewritten, and ``log``
    told, when it differs)."""
    import numpy as np

    from grpolab.grpo.records import (
        _normalised,
        read_json,
        read_npy,
        write_json_atomic,
        write_npy_atomic,
    )

    record = {"inputs": _normalised(inputs), "shape": list(census.shape)}
    if os.path.isfile(alias + ".npy") and os.path.isfile(alias + ".json"):
        same = read_json(alias + ".json", "a census record") == record
        if same and np.array_equal(read_npy(alias + ".npy", "a pass-rate census"), census):
            return
    if os.path.isfile(alias + ".npy"):
        log(f"{alias}.npy: made from other inputs or too narrow; rebuilding it")
    write_npy_atomic(alias + ".npy", census)
    write_json_atomic(alias + ".json", record)


def _copy_run(src: str, dst: str, extra: dict) -> None:
    """Copy a finished run (log, then summary last) and relabel it with ``extra``; a source
    with a symbolic link in it is refused (a copy never follows a link out of the pool)."""
    from grpolab._files import read_text
    from grpolab._paths import check_no_links

    check_no_links(src, "--pool")
    from grpolab.grpo.records import RUN_SUMMARY, read_json, write_json_atomic, write_text_atomic

    fix = f"delete the folder {src} and rerun"
    summary = read_json(os.path.join(src, "summary.json"), "a run summary", keys=("config",),
                        remedy=fix, schema=RUN_SUMMARY)
    os.makedirs(dst, exist_ok=True)
    write_text_atomic(os.path.join(dst, "log.jsonl"),
                      read_text(os.path.join(src, "log.jsonl"), "a run log", remedy=fix))
    summary.update(extra)
    write_json_atomic(os.path.join(dst, "summary.json"), summary)


@dataclass
class _Job:
    """What a worker needs to train one run (picklable)."""

    name: str
    config: object
    folder: str
    cache_dir: str
    census: object
    batches: Callable | None
    task: Callable | None
    extra: dict

    def train(self, progress: bool) -> dict:
        from grpolab.grpo.backends import train

        kwargs = {}
        if self.batches is not None:
            kwargs["batches"] = self.batches()
        if self.task is not None:
            kwargs["task"] = self.task()
        return train(self.config, self.folder, cache_dir=self.cache_dir, census=self.census,
                     progress=progress, extra=self.extra, **kwargs)


def _die_with_parent() -> None:
    """Linux: this worker is killed when the command that started it dies (kill -9
    included), so no orphan writes into a folder whose lock died with the command."""
    import ctypes
    import signal
    import sys

    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - no prctl: best effort
            pass


def _init_worker(threads: int, gpus) -> None:
    """A worker process: its own GPU (when there are GPUs), the parent's thread count."""
    _die_with_parent()
    if gpus is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpus.get())
    import torch

    torch.set_num_threads(threads)


def _train_job(job: _Job) -> dict:
    return job.train(False)


def planned_completions(config) -> int:
    """The completions a run's config will train on: its cost, used to start the longest
    runs first (a sort key only; the runs themselves do not depend on their order)."""
    if config.completion_budget is not None:
        return int(config.completion_budget)
    return int(config.steps) * int(config.prompts_per_step) * int(config.num_generations)


def _process_pool(workers: int, threads: int, device: str):
    """``workers`` spawned processes, each with ``threads`` torch threads (and its own GPU
    when there are GPUs: then at most one worker per GPU); returns (pool, workers)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from grpolab.models.device import resolve_device

    ctx = multiprocessing.get_context("spawn")
    gpus = None
    if resolve_device(device).type == "cuda":
        import torch

        gpus = ctx.Queue()
        for i in range(torch.cuda.device_count()):
            gpus.put(i)
        workers = min(workers, torch.cuda.device_count())
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker,
                               initargs=(threads, gpus))
    return pool, workers


def _measure_census(config, cache_dir: str, seed: int, samples: int, *,
                    policies: dict | None = None, progress: bool = False, log=None,
                    start: float | None = None):
    """The pass-rate census of ``config``'s starting policy: ``samples`` sampled completions
    per training prompt (``policies`` caches loaded policies across censuses)."""
    from grpolab.grpo.config import training_prompts
    from grpolab.grpo.measure import pass_rate_census
    from grpolab.grpo.setup import load_policy
    from grpolab.models.device import resolve_device
    from grpolab.tasks.registry import get_task

    policies = {} if policies is None else policies
    which = (config.model, config.warmstart_key)
    if which not in policies:
        policies[which] = load_policy(config, cache_dir, resolve_device(config.device),
                                      progress)[:2]
        if log is not None:
            log(f"starting policy {config.model} ready after "
                f"{time.time() - (start or time.time()):.0f} s")
    model, tokenizer = policies[which]
    task = get_task(config.task, **config.task_kwargs)  # the census counts exact matches
    prompts = training_prompts(config, task)[0]
    return pass_rate_census(model, tokenizer, task, prompts, samples=samples,
                            temperature=config.temperature, top_p=config.top_p,
                            max_new_tokens=config.max_completion_length, seed=seed)


def _census_job(stem: str, inputs: dict, config, cache_dir: str, seed: int, samples: int,
                rows: int, frozen: bool) -> None:
    """In a worker: make the census ``stem`` unless the cache holds it (the parent reads it)."""
    from grpolab.grpo.records import cached_census

    cached_census(stem, inputs, lambda n: _measure_census(config, cache_dir, seed, n),
                  samples=samples, rows=rows, frozen=frozen)


def _measure_side_by_side(pool, cache_dir: str, todo: list) -> None:
    """Measure the censuses of ``todo`` in the process ``pool``, all at once; the first
    failure is raised as its own error."""
    futures = [pool.submit(_census_job, stem, inputs, runs[0].config, cache_dir,
                           runs[0].census.seed, samples, rows, frozen)
               for stem, inputs, runs, frozen, samples, rows in todo]
    for fut in futures:
        fut.result()


def _run_in_processes(jobs: list[_Job], done, *, pool, workers: int, progress: bool) -> None:
    """Train ``jobs`` in the process ``pool`` (``workers`` processes); ``done(job, summary)``
    in the parent as each finishes. The first failure cancels the runs not started and is
    raised as the run's own error (the runs still training finish and stay, for a resume)."""
    from concurrent.futures import FIRST_EXCEPTION, wait

    from tqdm.auto import tqdm

    bar = tqdm(total=len(jobs), desc=f"runs ({workers} workers)", disable=not progress)
    try:
        pending = {pool.submit(_train_job, job): job for job in jobs}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_EXCEPTION)
            for fut in finished:
                job = pending.pop(fut)
                exc = fut.exception()
                if exc is not None:
                    for other in pending:
                        other.cancel()
                    raise exc
                done(job, fut.result())
                bar.update(1)
    finally:
        bar.close()


def _run_on_ray(jobs: list[_Job], done, *, address: str | None, threads: int,
                workers: int | None) -> None:
    """Train ``jobs`` as Ray tasks (``ray.init(address=...)``; None starts a local instance,
    shut down again at the end), at most ``workers`` at a time (None: the cluster's CPUs /
    ``threads``), each task holding ``threads`` CPUs and running with that thread count. The
    first failed task cancels the rest and is raised as the run's own error. Every node needs
    grpolab installed, and the warm start and census are made here, before dispatch (the
    ``cache_dir`` must be a folder every node sees, e.g. a shared file system)."""
    try:
        import ray
    except ImportError:
        raise ValueError("--executor ray needs Ray: pip install 'grpolab[cluster]'") from None

    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    try:
        device = str(jobs[0].config.device) if jobs else "cpu"
        resources = ray.cluster_resources()
        gpus = int(device.startswith("cuda") or (device == "auto" and
                                                 resources.get("GPU", 0) >= 1))
        if workers is None:
            workers = max(1, int(resources.get("GPU", 1)) if gpus else
                          int(resources.get("CPU", 1)) // max(1, threads))

        @ray.remote(num_cpus=threads, num_gpus=gpus, max_retries=0)
        def train_remote(job: _Job) -> dict:  # Ray gives a GPU task its own GPU
            _init_worker(threads, None)
            return job.train(False)

        queue, running = list(jobs), {}
        while queue or running:
            while queue and len(running) < workers:
                job = queue.pop(0)
                running[train_remote.remote(job)] = job
            ready, _ = ray.wait(list(running), num_returns=1)
            for ref in ready:
                job = running.pop(ref)
                try:
                    summary = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    for other in running:
                        ray.cancel(other)
                    cause = getattr(exc, "cause", None)
                    raise (cause if isinstance(cause, BaseException) else exc) from None
                done(job, summary)
    finally:
        if started:
            ray.shutdown()
