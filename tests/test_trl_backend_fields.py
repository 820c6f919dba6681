"""The TRL backend refuses what it does not implement (issue #33, item 5).

Every :class:`grpolab.grpo.config.GRPOConfig` field is either read by the TRL backend
(``config.TRL_READS``: its source reads ``config.<field>``) or refused there with any value but
the one TRL runs (``config.TRL_REFUSED``). The list comes from the dataclass's fields, so a
new field that nobody classified fails here. No torch: these refusals come before any work.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grpolab.grpo import config as config_module
from grpolab.grpo.config import TRL_READS, TRL_REFUSED, GRPOConfig

ROOT = Path(__file__).resolve().parents[1]
FIELDS = [f.name for f in dataclasses.fields(GRPOConfig)]

#: A valid value other than TRL's for each refused field (the grpolab loop runs all of them).
OTHER_VALUE = {
    "completion_budget": 512,
    "eval_at": [64, 256],
    "advantage_baseline": "leave_one_out",
    "advantage_ddof": 0,
    "advantage_eps": 1e-6,
    "optimizer": "sgd",
}


def _trl_backend_sources() -> str:
    """The code a TRL run executes with its config: trl_backend, the shared setup, and the
    config's helpers that setup calls (the prompt filters, the census width)."""
    from grpolab.grpo import backends, setup, trl_backend

    return "\n".join([inspect.getsource(trl_backend), inspect.getsource(setup),
                      inspect.getsource(backends),
                      inspect.getsource(config_module.training_prompts),
                      inspect.getsource(GRPOConfig.pass_rate_window_size.fget),
                      inspect.getsource(GRPOConfig.warmstart_key.fget)])


@pytest.mark.parametrize("name", FIELDS)
def test_every_field_is_read_or_refused_by_the_trl_backend(name):
    read, refused = name in TRL_READS, name in TRL_REFUSED
    assert read != refused, (f"GRPOConfig.{name} must be in exactly one of config.TRL_READS "
                             "and config.TRL_REFUSED: say what the TRL backend does with it")
    if read:
        source = _trl_backend_sources()
        assert f"config.{name}" in source or f"self.{name}" in source, (
            f"config.TRL_READS lists {name}, but the TRL backend never reads config.{name}")
        return
    supported, _ = TRL_REFUSED[name]
    assert supported == getattr(GRPOConfig(), name), "TRL's value must be grpolab's default"
    other = OTHER_VALUE[name]
    # the grpolab loop runs it: the refusal is the TRL backend's, not the value's
    GRPOConfig(**{name: other}).validate()
    with pytest.raises(ValueError) as err:
        GRPOConfig(backend="trl", **{name: other}).validate()
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"--{name.replace('_', '-')} ") and "--backend grpolab" in msg, msg
    GRPOConfig(backend="trl").validate()  # TRL's own value passes


def test_no_table_names_a_field_that_does_not_exist():
    assert set(TRL_READS) | set(TRL_REFUSED) <= set(FIELDS)
    assert set(OTHER_VALUE) == set(TRL_REFUSED)


def test_the_cli_refuses_in_one_line_before_torch_and_writes_nothing(tmp_path):
    """``lab train --backend trl --advantage-baseline leave_one_out``: exit 2, one line naming
    the flag and ``--backend grpolab``, no output folder, torch never imported."""
    out = tmp_path / "out"
    script = textwrap.dedent(f"""
        import sys, contextlib, io
        from grpolab.cli.main import main
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(["lab", "train", "--preset", "cpu-quick", "--backend", "trl",
                         "--advantage-baseline", "leave_one_out", "--quiet",
                         "--out", {str(out)!r}])
        print(code, "torch" in sys.modules)
        print(err.getvalue(), end="")
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    first, *err = done.stdout.splitlines()
    assert first == "2 False"
    assert len(err) == 1 and err[0].startswith("error: --advantage-baseline leave_one_out"), err
    assert "--backend grpolab" in err[0]
    assert not out.exists()
