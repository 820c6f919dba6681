"""The torch-free core and the import contracts (pyproject.toml's [tool.importlinter]).

Two kinds of check: at run time, the core and the light commands run with torch and
transformers made unimportable; statically, ``lint-imports`` passes, every top-level module
is in the torch-free contract, and the contracts do break when the rule they state is broken.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "grpolab"
CONTRACTS = {c["id"]: c for c in
             tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
                 "contracts"]}

# Runs the code after it with torch and transformers unimportable, and exits with status 3
# if anything so much as tried to import them (a guarded `try: import torch` included).
BLOCK_HEAVY = textwrap.dedent("""
    import atexit, os, sys
    BLOCKED = ("torch", "transformers")
    tried = []

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                tried.append(name)
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, Block())

    @atexit.register
    def report():
        if tried:
            sys.stderr.write(f"tried to import: {sorted(set(tried))}\\n")
            sys.stderr.flush()
            os._exit(3)
""")


def run_blocked(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCK_HEAVY + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120)


def test_the_blocker_blocks():
    """The harness itself can fail: importing torch under it is caught."""
    out = run_blocked("""
        try:
            import torch  # noqa: F401
        except ImportError:
            pass
    """)
    assert out.returncode == 3 and "torch" in out.stderr


def test_core_imports_no_torch():
    code = ("import grpolab.theory, grpolab.advantages, grpolab.simulate, sys; "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
    out = run_blocked("import grpolab, grpolab.theory, grpolab.advantages, grpolab.simulate, "
                      "grpolab._validate, grpolab._paths")
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("argv, expect", [
    (["lab", "presets"], "gpu-smollm2: "),
    (["theory", "--p", "0.1", "--G", "4"], "0.6561"),
    (["--help"], "lab"),
    (["lab", "train", "--help"], "--num-generations"),
])
def test_light_commands_run_without_torch(argv, expect):
    out = run_blocked(f"""
        import sys
        from grpolab.cli.main import main
        code = main({argv!r})
        sys.stdout.flush()
        sys.exit(code)
    """)
    assert out.returncode == 0, out.stderr
    assert expect in out.stdout


def test_presets_and_configs_import_without_torch():
    """The preset table, the one config and SmolLM2's module import without torch (their
    loaders import it inside the functions that load)."""
    out = run_blocked("""
        import grpolab.labs.sweep.presets, grpolab.grpo.config, grpolab.models.smollm2
        import grpolab.grpo.warmstart, grpolab.cli._config_args
    """)
    assert out.returncode == 0, out.stderr


# ------------------------------------------------------------------ static contracts
def _lint_imports(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which(
        "lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install import-linter)")
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([exe, "--no-logo", "--no-cache"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_lint_imports_passes():
    out = _lint_imports(ROOT, ROOT / "src")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_every_top_level_module_is_in_the_torch_free_contract():
    """A new numpy-only module (grpolab/*.py, or grpolab.toy / grpolab.advise) must be
    listed in the torch-free contract, or this test names it."""
    listed = set(CONTRACTS["core-torch-free"]["source_modules"])
    present = {f"grpolab.{p.stem}" for p in SRC.glob("*.py")
               if p.stem not in ("__init__", "__main__")}
    present |= {f"grpolab.{name}" for name in ("theory", "toy", "advise")
                if (SRC / name).is_dir() or (SRC / f"{name}.py").is_file()}
    missing = present - listed
    assert not missing, f"add {sorted(missing)} to the core-torch-free contract in pyproject.toml"
    assert listed <= present, f"contract lists modules that do not exist: {listed - present}"


@pytest.mark.parametrize("edits, broken", [
    # a torch import deep inside a function of a core module (a chapter module of theory/)
    ({"theory/zero_variance.py": "import torch"}, "never imports torch"),
    # an indirect one: the core importing the engine, which imports torch
    ({"simulate.py": "import grpolab.grpo.loss"}, "never imports torch"),
    # the engine importing a lab
    ({"grpo/loss.py": "import grpolab.labs.sweep.presets"}, "never imports the labs"),
    # a cycle inside a subpackage: rollout <-> loss
    ({"grpo/rollout.py": "import grpolab.grpo.loss", "grpo/loss.py": "import grpolab.grpo.rollout"},
     "No import cycles"),
    # a lower layer importing a higher one
    ({"tasks/arithmetic.py": "import grpolab.grpo.config"}, "Subpackages form layers"),
    # the one runner importing a lab (it receives plans as data)
    ({"labs/runner.py": "import grpolab.labs.sweep.presets"}, "imports no lab"),
])
def test_contracts_break_when_their_rule_is_broken(tmp_path, edits, broken):
    """Each mutation, placed inside a function (import-linter sees those too), breaks the
    contract it is named for."""
    shutil.copytree(SRC, tmp_path / "src" / "grpolab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for module, statement in edits.items():
        target = tmp_path / "src" / "grpolab" / module
        target.write_text(target.read_text() + f"\n\ndef _mutant():\n    {statement}\n")
    out = _lint_imports(tmp_path, tmp_path / "src")
    assert out.returncode != 0, out.stdout
    report = out.stdout.split("Broken contracts")[-1].replace("\n", " ")
    assert broken in report, out.stdout


#: A grpolab module imported by a string (import_module / __import__ with a "grpolab..." name)
#: is invisible to import-linter: a cycle could hide behind it.
_STRING_IMPORT = re.compile(r"""(import_module|__import__)\(\s*f?["']grpolab""")


def string_imports(root: Path) -> list[str]:
    """``file:line`` of every string import of a grpolab module below ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _STRING_IMPORT.search(line):
                found.append(f"{path.relative_to(root)}:{n}")
    return found


def test_no_grpolab_module_is_imported_by_a_string():
    assert string_imports(SRC) == []


def test_the_string_import_check_finds_one(tmp_path):
    (tmp_path / "m.py").write_text('import importlib\nx = importlib.import_module("grpolab.x")\n'
                                   'y = importlib.import_module(f"grpolab.cli.{n}")\n')
    assert string_imports(tmp_path) == ["m.py:2", "m.py:3"]
