"""environment.yml and pyproject.toml list the same dependencies, with the same specifiers."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def normalise(req: str) -> str:
    name, rest = re.match(r"\s*([A-Za-z0-9_.\-]+)(.*)", req).groups()
    rest = rest.replace(" ", "").replace('"', "'")
    return name.lower().replace("_", "-") + rest


def pyproject_requirements() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = set(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs |= {r for r in extra if not r.startswith("grpolab[")}
    return {normalise(r) for r in reqs}


def environment_requirements() -> set[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    return {normalise(r) for r in pip if not r.startswith("-e")}


def test_environment_matches_pyproject():
    py, env = pyproject_requirements(), environment_requirements()
    assert py == env, (f"only in pyproject: {sorted(py - env)}; "
                       f"only in environment.yml: {sorted(env - py)}")


def test_environment_installs_the_package_and_python():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert any(str(d).startswith("python=3.1") for d in env["dependencies"])
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert "-e ." in pip
