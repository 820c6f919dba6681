"""How a config dataclass is checked and documented: a table of per-field rules, and the
docstring written under each field.

Every config of the package (:class:`grpolab.grpo.config.GRPOConfig`, the warm start's, the
sweep's, a remedy's) checks its fields through one table of :class:`Rule` rows and
:func:`check_fields`, so a range is written once and every error names the field as its
command-line flag. :func:`field_docs` gives the ``--help`` text of generated flags.
"""

from __future__ import annotations

import ast
import functools
import inspect
import math
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Rule", "check_field", "check_fields", "field_docs", "count_rule", "seed_rule",
           "bad_field", "MAX_COUNT", "MAX_SEED"]

#: The largest count (steps, budgets, samples, ...) a field takes: torch and numpy index
#: with int64, but counts this large would never finish.
MAX_COUNT = 2**31 - 1
#: Seeds go to numpy's and torch's generators (both take 32-bit seeds without folding).
MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class Rule:
    """How one config field is checked: its kind, its range, what an unset value means.

    ``kind`` is ``"int"`` (an integer in [low, high]), ``"real"`` (a finite number in
    [low, high], ``low_open``/``high_open`` excluding an end) or ``"choice"`` (one of ``choices``).
    ``optional`` allows None. ``why`` explains a bound in the error message (``high_why``
    the upper one, when it has another reason than the lower).
    """

    kind: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    optional: bool = False
    choices: tuple = ()
    why: str = ""
    high_why: str = ""


def bad_field(name: str, why: str, prefix: str = "") -> ValueError:
    """The error for field ``name``, named as its flag ``--prefix-name``."""
    return ValueError(f"--{prefix}{name.replace('_', '-')} {why}")


def _is_int(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, int)


def _is_real(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, int | float) and math.isfinite(v)


def check_field(name: str, v, rule: Rule, prefix: str = "") -> None:
    """Raise a ValueError (naming ``--prefix-name``) when ``v`` breaks ``rule``."""
    if v is None and rule.optional:
        return
    unset = " or unset" if rule.optional else ""
    note = f" ({rule.why})" if rule.why else ""
    if rule.kind == "choice":
        if v not in rule.choices:
            raise bad_field(name, f"must be one of {', '.join(map(str, rule.choices))}, got {v!r}",
                       prefix)
    elif rule.kind == "int":
        if not _is_int(v):
            raise bad_field(name, f"must be an integer in [{rule.low}, {rule.high}]{unset}, got "
                       f"{v!r}", prefix)
        if v < rule.low and rule.why:
            raise bad_field(name, f"must be >= {rule.low}{note}, got {v}", prefix)
        if v > rule.high and (rule.why or rule.high_why):
            why = f" ({rule.high_why})" if rule.high_why else note
            raise bad_field(name, f"must be <= {rule.high}{why}, got {v}", prefix)
        if not rule.low <= v <= rule.high:
            raise bad_field(name, f"must be an integer in [{rule.low}, {rule.high}]{unset}, got "
                       f"{v!r}", prefix)
    elif rule.kind == "real":
        sign = "positive" if (rule.low == 0 and rule.low_open) else "non-negative"
        if not _is_real(v) or (rule.low == 0 and (v < 0 or (rule.low_open and v == 0))):
            raise bad_field(name, f"must be a {sign} finite number{unset}, got {v!r}", prefix)
        low_ok = v > rule.low if rule.low_open else v >= rule.low
        high_ok = rule.high is None or (v < rule.high if rule.high_open else v <= rule.high)
        if not (low_ok and high_ok):
            if rule.low == 0 and rule.high is not None:
                op = "<" if rule.high_open else "<="
                raise bad_field(name, f"must be {op} {rule.high}{note}, got {v!r}", prefix)
            left = "(" if rule.low_open else "["
            raise bad_field(name, f"must be in {left}{rule.low}, {rule.high}]{note}, got {v!r}",
                       prefix)
    else:  # pragma: no cover - a rule table typo
        raise TypeError(f"unknown rule kind {rule.kind!r} for {name}")


def check_fields(obj, rules: Mapping[str, Rule], prefix: str = "") -> None:
    """Check every field of ``obj`` named in ``rules``, in the table's order."""
    for name, rule in rules.items():
        check_field(name, getattr(obj, name), rule, prefix)


def count_rule(low: int = 1, high: int = MAX_COUNT, *, optional: bool = False, why: str = "",
               high_why: str = "") -> Rule:
    """An integer count in [low, high] (None too when ``optional``)."""
    return Rule("int", low, high, optional=optional, why=why, high_why=high_why)


def seed_rule(*, optional: bool = False) -> Rule:
    return Rule("int", 0, MAX_SEED, optional=optional)


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of dataclass ``cls`` (for ``--help``)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:], strict=False):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


#: The sampling temperature's bound, shared by every command that samples (``lab sweep``,
#: ``lab train``, ``remedies`` through GRPOConfig, and ``lab pass-rates``): below 1e-3
#: ``logits / T`` overflows float32 to inf; above 100 the distribution is flat.
TEMPERATURE_RULE = Rule("real", 1e-3, 100, why="logits / T overflows or flattens beyond")


def check_temperature(value, flag_prefix: str = "") -> None:
    """Refuse a sampling temperature outside :data:`TEMPERATURE_RULE`, naming
    ``--temperature``: one bound and one message for every command."""
    check_field("temperature", value, TEMPERATURE_RULE, flag_prefix)
