"""One ``--flag`` per field of a config dataclass, documented by the field.

The way CleanRL's ``Args`` do it: the help of ``--learning-rate`` is the docstring written
under ``learning_rate`` in ``grpo/config.py`` (:func:`grpolab.grpo.fields.field_docs`), its
type comes from the annotation, and the default shown is the one passed in. A flag the user
does not give stays unset, so a preset's value is only overridden by what was typed::

    add_config_arguments(parser, GRPOConfig())
    args = parser.parse_args()
    config = apply_overrides(preset_config, config_overrides(args))

The same works for any dataclass whose fields carry docstrings: ``lab sweep`` adds the
sweep's own fields (:class:`grpolab.labs.sweep.presets.SweepPreset`, ``Regime``) and
``remedies`` a remedy's (:class:`grpolab.labs.remedies.remedy.Remedy`), each under its own
``prefix`` so two classes' fields never share a destination.

Value syntax: numbers and strings as usual; ``none`` for an optional field's None; lists
as several values (``--train-difficulties 1 2 3``); dict and dataclass fields
(``task_kwargs``, ``warmstart``) as a JSON object whose keys replace those of the base
config's value, the other keys staying as they were.

No torch here: building the parser must stay cheap (``grpolab --help``).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import types
import typing
from collections.abc import Iterable, Mapping

from grpolab.grpo.config import GRPOConfig, apply_overrides, field_docs

__all__ = ["add_config_arguments", "config_overrides", "apply_overrides", "flag_name"]

_DEST_PREFIX = "config."  # argparse dest of field f is "config.f": no clash with --out & co.


class _Unset:
    """The default of every config flag: tells 'not given' apart from any real value."""

    def __repr__(self) -> str:
        return "<unset>"


UNSET = _Unset()


def flag_name(field_name: str) -> str:
    """``learning_rate`` → ``--learning-rate``."""
    return "--" + field_name.replace("_", "-")


def _optional_inner(annotation):
    """``(inner, True)`` for ``X | None`` / ``Optional[X]``, else ``(annotation, False)``."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(annotation)) == 2:
            return args[0], True
    return annotation, False


def _scalar_parser(kind: type, optional: bool, flag: str):
    def parse(text: str):
        if optional and text.lower() == "none":
            return None
        if kind is bool:
            low = text.lower()
            if low in ("true", "yes", "1"):
                return True
            if low in ("false", "no", "0"):
                return False
            raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"invalid {kind.__name__} value: {text!r}") from None

    parse.__name__ = kind.__name__  # argparse names it in "invalid int value" messages
    return parse


def _loads(text: str, flag: str):
    """JSON from the command line through the checked parser (bounded nesting and integers,
    finite numbers), so a hostile argument is a usage error, not a RecursionError."""
    from grpolab._files import CorruptFileError, JSONSyntaxError, parse_json

    shown = text if len(text) <= 60 else text[:57] + "..."
    try:
        return parse_json(text, flag, "a JSON value", expect=None, remedy="")
    except JSONSyntaxError as exc:
        reason = exc.problem.split(" (", 1)[-1].split(")", 1)[0]
        raise argparse.ArgumentTypeError(f"not JSON ({reason}): {shown!r}") from None
    except CorruptFileError as exc:
        raise argparse.ArgumentTypeError(f"{exc.problem}: {shown!r}") from None


def _json_object_parser(kind, flag: str):
    keys = ({f.name for f in dataclasses.fields(kind)} if dataclasses.is_dataclass(kind)
            else None)

    def parse(text: str):
        value = _loads(text, flag)
        if not isinstance(value, dict):
            raise argparse.ArgumentTypeError(f"expected a JSON object, got {text[:60]!r}")
        if keys is not None and set(value) - keys:
            bad = sorted(set(value) - keys)
            near = difflib.get_close_matches(bad[0], sorted(keys), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise argparse.ArgumentTypeError(
                f"unknown keys {', '.join(bad)}{hint} (known: {', '.join(sorted(keys))})")
        return value

    parse.__name__ = "JSON object"
    return parse


def _show(value) -> str:
    if dataclasses.is_dataclass(value):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return " ".join(map(str, value)) if value else "[]"
    return "none" if value is None else str(value)


def _json_value_parser(text: str):
    return _loads(text, "a JSON value")


_json_value_parser.__name__ = "JSON value"


def _argument_spec(name: str, annotation, flag: str) -> dict:
    """argparse keyword arguments (type, nargs, metavar, choices) for one field's annotation.

    Scalars, ``Literal``, lists/tuples of scalars, dicts and dataclasses get their own
    syntax; any other annotation takes a JSON value, so a new field never breaks the CLI.
    """
    inner, optional = _optional_inner(annotation)
    origin = typing.get_origin(inner) or inner
    if origin is typing.Literal:
        values = typing.get_args(inner)
        kind = type(values[0])
        return dict(type=_scalar_parser(kind, optional, flag), metavar="{" + ",".join(
            map(str, values)) + "}", choices=[*values, None] if optional else list(values))
    if origin in (list, tuple):
        items = [a for a in typing.get_args(inner) if a is not Ellipsis] or [str]
        if len(set(items)) == 1 and items[0] in (int, float, str):
            return dict(type=_scalar_parser(items[0], optional, flag), nargs="+",
                        metavar=items[0].__name__.upper()[0])
    elif origin is dict or dataclasses.is_dataclass(inner):
        return dict(type=_json_object_parser(inner, flag), metavar="JSON")
    elif inner in (int, float, str, bool):
        metavar = {int: "N", float: "X", str: "NAME", bool: "BOOL"}[inner]
        return dict(type=_scalar_parser(inner, optional, flag), metavar=metavar)
    return dict(type=_json_value_parser, metavar="JSON")


def add_config_arguments(parser: argparse.ArgumentParser, defaults, *,
                         aliases: Mapping[str, Iterable[str]] | None = None,
                         exclude: Iterable[str] = (),
                         title: str = "GRPO configuration (grpolab.grpo.config.GRPOConfig)",
                         description: str | None = None,
                         prefix: str = _DEST_PREFIX) -> argparse._ArgumentGroup:
    """Add one ``--flag-name`` per field of ``defaults``' dataclass (a :class:`GRPOConfig` by
    default) to ``parser``, in an argument group; returns the group.

    ``defaults`` is the instance whose values ``--help`` shows. ``aliases`` maps a field to
    extra option strings (``{"num_generations": ["--G"]}``); ``exclude`` names fields that
    get no flag (a command that sets them itself). Unknown names in either are an error.
    ``prefix`` is the argparse destination prefix (:func:`config_overrides` reads it back).
    """
    cls = type(defaults)
    aliases = {k: list(v) for k, v in (aliases or {}).items()}
    exclude = set(exclude)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = (set(aliases) | exclude) - set(names)
    if unknown:
        raise ValueError(f"not {cls.__name__} fields: {', '.join(sorted(unknown))}")
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    syntax = ("Values: 'none' unsets an optional field; lists take several values; "
              "--task-kwargs and --warmstart take a JSON object whose keys replace those of "
              "the base config's value.")
    group = parser.add_argument_group(title, f"{description} {syntax}" if description else syntax)
    for name in names:
        if name in exclude:
            continue
        flag = flag_name(name)
        doc = docs.get(name)
        if not doc:
            raise ValueError(f"{cls.__name__}.{name} has no docstring: write one under the field")
        help_text = f"{doc} (default: {_show(getattr(defaults, name))})"
        group.add_argument(flag, *aliases.get(name, ()), dest=prefix + name,
                           default=UNSET, help=help_text.replace("%", "%%"),
                           **_argument_spec(name, hints[name], flag))
    return group


def config_overrides(args: argparse.Namespace, cls: type = GRPOConfig,
                     prefix: str = _DEST_PREFIX) -> dict:
    """The fields of ``cls`` the user set on the command line, ``{field: value}``.

    Values are as parsed: a list flag given ``none`` becomes None; dict and dataclass
    fields hold only the keys given (merge them with :func:`apply_overrides`).
    """
    out = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        value = getattr(args, prefix + f.name, UNSET)
        if value is UNSET:
            continue
        several = "nargs" in _argument_spec(f.name, hints[f.name], flag_name(f.name))
        if several and any(v is None for v in value):
            if len(value) != 1:
                raise ValueError(f"{flag_name(f.name)}: 'none' cannot be mixed with values")
            value = None
        out[f.name] = value
    return out
