"""What the extending guide (docs/extending.md) says, read by the tests that follow it: the files a section names,
and a registration made as it says (shared by the dummy database/workload and the dummy way of measuring)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "extending.md"


def edit_as_guided(path: Path, anchor: str, added: str) -> None:
    """Registration as the guide says: `added` right after `anchor` (an import line, a registry's opening)."""
    text = path.read_text()
    assert anchor in text, f"{path.name} has no {anchor!r}: the guide and the code differ"
    path.write_text(text.replace(anchor, anchor + added, 1))


def guide_names(section: str) -> set[str]:
    """The files a section of docs/extending.md names (`src/pickfs/...` in backquotes)."""
    text = GUIDE.read_text()
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`(src/pickfs/[\w/<>.-]+\.py)`", body))
