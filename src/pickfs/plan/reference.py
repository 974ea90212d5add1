"""The plan-file reference, docs/plan.md, generated from the schema: every key with its type, default,
range or choices and meaning, grouped by where it is written, after a short example plan.

    python -m pickfs.plan.reference [PATH]     writes PATH (default: docs/plan.md)

A unit test fails when docs/plan.md differs from what this renders."""

from __future__ import annotations

import sys
from pathlib import Path

from pickfs.plan.schema import SECTIONS, TOP_KEYS, Key, Section
from pickfs.plan.workload_keys import workload_sections

COMMAND = "python -m pickfs.plan.reference"
DEFAULT_PATH = Path("docs/plan.md")

EXAMPLE = '''\
fs = ["ext4", "xfs"]          # configurations: presets, each as it comes
baseline = "ext4"             # the one the others are compared with
memory = "1G"                 # production conditions: the box's memory

[target]
kind = "image"                # a sparse image on a loop device per configuration

[method]
max_seconds = 300             # the time budget

[[config]]                    # one more configuration: ext4 with one option changed
preset = "ext4"
name = "ext4-noatime"
mount = "noatime"
base = "ext4"                 # warns if it differs from ext4 in more than one setting

[[workload]]
name = "sqlite-tpcb"
synchronous = "FULL"
'''


def _cell(text: str) -> str:
    """Text in a Markdown table cell: pipes escaped, no line breaks."""
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{text}`" if text else ""


def _size(n: float) -> str:
    """A byte count with its binary unit beside it: 67108864 (64 MiB)."""
    for unit, scale in (("PiB", 1024**5), ("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale and n % scale == 0:
            return f"{int(n)} ({n / scale:g} {unit})"
    return f"{n:g}"


def allowed_text(key: Key) -> str:
    """The range or the choices of a key, in words."""
    if key.choices:
        shown = ", ".join(_code(c) if c else '`""`' for c in key.choices)
        return f"{'some' if key.several else 'one'} of {shown}"
    if key.span is None:
        return ""
    if key.unit != "bytes":
        return key.span.words()
    return key.span.words(_size)


def _type_text(key: Key) -> str:
    return f"{key.value_type} ({key.unit})" if key.unit and key.unit != key.value_type else key.value_type


def _default_cell(key: Key) -> str:
    if key.default_text:
        return key.default_text
    return _code(key.shown_default()) or "none"


def section_table(section: Section) -> list[str]:
    """One section: its heading, what it is, and a row per key."""
    lines = ["| key | type | default | range or choices | meaning |", "|---|---|---|---|---|"]
    for key in section.keys:
        lines.append("| " + " | ".join(_cell(x) for x in (
            _code(key.name), _type_text(key), _default_cell(key), allowed_text(key), key.description)) + " |")
    return lines


def render_reference() -> str:
    """docs/plan.md as text (pure)."""
    out = [
        "# Plan file reference",
        "",
        "A plan is a TOML file given to `pickfs run --plan FILE` (check it first with `pickfs plan check FILE`).",
        "Every key has a default, but a plan names at least one configuration (`fs`, a `[[config]]` table or",
        "`paths` under `[target]`). A plan is checked completely, types and ranges, before anything is built;",
        "a key pickfs does not know is refused with the list of the ones it does.",
        "",
        "This page is generated from the plan schema (`src/pickfs/plan/schema.py` and, for each workload's",
        f"settings, `src/pickfs/plan/workload_keys.py`) by `{COMMAND}`: change the schema, then run it.",
        "",
        "## An example",
        "",
        "```toml",
        EXAMPLE.rstrip("\n"),
        "```",
        "",
        f"Top-level keys: {', '.join(_code(k) for k in sorted(TOP_KEYS))}.",
        "",
    ]
    for section in SECTIONS:
        where = f" ({section.header})" if section.table else ""
        out += [f"## {section.title}{where}", "", section.intro, "", *section_table(section), ""]
    out += ["## The settings of each workload", "",
            "Written in the workload's `[[workload]]` table beside `name` and `label`. A size is a number of bytes "
            'or a text such as "16K" or "2G"; a duration is seconds or a text such as "10s" or "5min".', ""]
    for section in workload_sections():
        out += [f"### {section.title.removeprefix('Workload ')}", "", section.intro, "", *section_table(section), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the reference to PATH (default docs/plan.md)."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DEFAULT_PATH
    path.write_text(render_reference(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
