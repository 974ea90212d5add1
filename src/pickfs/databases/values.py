"""The values each database setting may take, checked before any server sees them (pure).

A setting's value ends up in a server's configuration file or on its command line: a value that
is not of its setting's shape (a space, a quote, a `$(...)`, a newline, a second option) is
refused here, with the shape it should have, instead of reaching the server or its tools.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pickfs.errors import PlanError


@dataclass(frozen=True)
class ValueShape:
    """The shape of one setting's values: a pattern (whole value, case-insensitive or not) or a choice."""

    example: str
    pattern: str = ""
    choices: tuple[str, ...] = ()
    case_sensitive: bool = False

    def accepts(self, text: str) -> bool:
        if self.choices:
            return (text if self.case_sensitive else text.lower()) in self.choices
        flags = 0 if self.case_sensitive else re.IGNORECASE
        return re.fullmatch(self.pattern, text, flags) is not None

    def describe(self) -> str:
        if self.choices:
            return "one of " + ", ".join(self.choices)
        return f"of the form {self.example}"


BOOL = ("on", "off", "true", "false", "yes", "no", "1", "0")  # the values of an on/off setting

# Every database setting a workload can pass to a database, by key: each database declares the shapes of
# its own (Database.setting_shapes) and its registration adds them here (the keys are distinct across databases).
SHAPES: dict[str, ValueShape] = {}


def register_shapes(owner: str, shapes: dict[str, ValueShape]) -> None:
    """Add a database's setting shapes; ValueError when another database gave one of its keys another shape."""
    for key, shape in shapes.items():
        if SHAPES.setdefault(key, shape) != shape:
            raise ValueError(f"{owner}: setting {key} already has another shape")


def value_text(value: Any) -> str:
    """A setting's value as the server reads it (TOML's true/false as on/off)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def value_problem(key: str, value: Any) -> str | None:
    """Why `value` cannot be given to the database setting `key` (None: it can, or `key` is not one)."""
    shape = SHAPES.get(key)
    if shape is None or value is None or value == "":
        return None
    if isinstance(value, float) or not isinstance(value, (str, int, bool)):
        return f"{key} = {value!r} is not a value of this setting: it takes {shape.describe()}"
    text = value_text(value)
    if not shape.accepts(text):
        return f"{key} = {text!r} is not a value of this setting: it takes {shape.describe()}"
    return None


def check_values(settings: dict[str, Any], where: str) -> None:
    """PlanError for the first database setting in `settings` whose value is not of its shape."""
    for key, value in settings.items():
        problem = value_problem(key, value)
        if problem:
            raise PlanError(f"{where} {problem}", f"e.g. {key} = {SHAPES[key].example}")
