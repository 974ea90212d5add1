"""The examples at the end of every command's --help (pure)."""

from __future__ import annotations


def examples(*lines: str) -> str:
    """A help page's closing section: each line a command as it is typed; click keeps them unwrapped."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)
