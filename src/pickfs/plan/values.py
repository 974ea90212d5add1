"""The plan's values checked one by one: strings, tables, arrays of tables, mkfs and mount options, shares.
Each refusal is a PlanError naming the fix (pure)."""

from __future__ import annotations

import math
import re
import shlex
from typing import Any

from pickfs.errors import PlanError
from pickfs.units import has_control

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")  # a configuration's name, a filesystem type
_EXAMPLE = {"mkfs": "-b 4096", "mount": "noatime"}


def kind_of(value: Any) -> str:
    """What a TOML value is, in the words of an error message."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def text_value(value: Any, where: str, example: str, empty: bool = False) -> str:
    """A string value of the plan: a string, one line, not empty (unless `empty`)."""
    if not isinstance(value, str):
        raise PlanError(f"{where} must be a string, not {kind_of(value)}", f"e.g. {example}")
    if not value and not empty:
        raise PlanError(f"{where} is empty", f"e.g. {example}")
    if has_control(value):
        raise PlanError(f"{where} holds a control character (a newline, a NUL, ...)", f"e.g. {example}")
    return value


def table_value(value: Any, where: str, example: str) -> dict[str, Any]:
    """A table ([target], [method])."""
    if not isinstance(value, dict):
        raise PlanError(f"{where} must be a table, not {kind_of(value)}", f"e.g. {example}")
    return value


def tables_value(value: Any, where: str, example: str) -> list[dict[str, Any]]:
    """An array of tables ([[config]], [[workload]])."""
    if not isinstance(value, list):
        raise PlanError(f"{where} must be an array of tables ([[{where}]]), not {kind_of(value)}", f"e.g. {example}")
    for i, v in enumerate(value):
        if not isinstance(v, dict):
            raise PlanError(f"{where} #{i + 1} must be a table ([[{where}]]), not {kind_of(v)}", f"e.g. {example}")
    return value


def unknown_keys(table: dict[str, Any], allowed: set[str] | frozenset[str], where: str) -> None:
    """Refuse keys a table does not accept, listing the ones it does."""
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise PlanError(f"{where} has unknown key(s) {', '.join(unknown)}", f"valid keys: {', '.join(sorted(allowed))}")


def options(value: Any, what: str) -> tuple[str, ...]:
    """mkfs or mount options: a string (mkfs: split as a shell would; mount: at commas) or a list of strings."""
    if value is None:
        return ()
    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        texts = [value] if isinstance(value, str) else value
        if any(has_control(v) for v in texts):
            raise PlanError(f"{what} options hold a control character (a newline, a NUL, ...)",
                            f"write them on one line of plain characters, e.g. {what} = \"{_EXAMPLE[what]}\"")
    if isinstance(value, str):
        if what == "mkfs":
            try:
                return tuple(shlex.split(value))
            except ValueError as exc:  # an unbalanced quote, a trailing backslash
                raise PlanError(f"mkfs options {value!r} cannot be split into arguments ({exc})",
                                "balance the quotes, or give a list: mkfs = [\"-L\", \"my label\"]") from None
        return tuple(o for o in value.split(",") if o)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        if what == "mount":
            return tuple(o for v in value for o in v.split(",") if o)
        return tuple(value)
    raise PlanError(f"{what} options must be a string or a list of strings", f'e.g. {what} = ["{_EXAMPLE[what]}"]')


def parse_share(value: Any, what: str, example: str, upper: float | None = None) -> float:
    """A share given as 0.7 or "70%" (pure), the one rule of every share a plan or a flag gives: a bare number of
    1 or more is refused, since it reads as a percentage; with `upper`, the share must be above 0 and below it."""
    text = str(value).strip() if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""
    try:
        share = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise PlanError(f"{what} {value!r} is not a share", f"e.g. {example}") from None
    if not math.isfinite(share):
        raise PlanError(f"{what} {value!r} is not a share", f"e.g. {example}")
    if not text.endswith("%") and share >= 1:
        raise PlanError(f"{what} {text} is read as a share, {share:g} = {share:.0%}: a bare number is a share from "
                        "0 to 1", f"for {share:g} percent write {what + ' ' if what.startswith('--') else ''}"
                        f"{share:g}% or {share / 100:g}")
    if upper is not None and not 0 < share < upper:
        raise PlanError(f"{what} {text} is not above 0% and below {upper:.0%}", f"e.g. {example}")
    return share
