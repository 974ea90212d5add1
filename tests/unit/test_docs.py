"""The manual holds together: the README stays a front page, every link inside the repository
resolves (file and anchor), none leaves it, and docs/ has an index the README reaches."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
# Pages of the manual written from elsewhere (the plan schema's generator, the registries); a link
# to one is checked like any other once it exists.
WRITTEN_ELSEWHERE = {DOCS / "plan.md", DOCS / "extending.md"}

FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text outside fenced code blocks and inline code."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def slug(heading: str) -> str:
    """The anchor a Markdown heading gets (GitHub's rule): lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        m = re.match(r"#{1,6} (.+)", line)
        if m:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def links(path: Path) -> list[str]:
    return LINK.findall(_prose(path.read_text()))


def _target(page: Path, link: str) -> tuple[Path, str]:
    name, _, anchor = link.partition("#")
    return ((page.parent / name).resolve() if name else page), anchor


def test_the_readme_is_a_front_page_of_at_most_250_lines() -> None:
    assert len(README.read_text().splitlines()) <= 250


def test_the_quick_start_keeps_its_two_commands() -> None:
    text = README.read_text()
    assert "./bootstrap.sh run     # set up what is missing, then the default job: SQLite on every filesystem preset\n" in text
    assert "./bootstrap.sh test    # set up what is missing, then the test suite\n" in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_link_leaves_the_repository(page: Path) -> None:
    text = page.read_text()
    assert not re.search(r"\b(?:https?|ftp)://", text), "a link outside the repository"
    for link in links(page):
        assert not re.match(r"[a-z][a-z0-9+.-]*:", link, re.I) and not link.startswith("/"), link
        target, _ = _target(page, link)
        assert target.is_relative_to(ROOT), f"{link} leaves the repository"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_and_its_anchor(page: Path) -> None:
    pending = []
    for link in links(page):
        target, anchor = _target(page, link)
        if target in WRITTEN_ELSEWHERE and not target.exists():
            pending.append(link)
            continue
        assert target.is_file(), f"{link}: no such file"
        if anchor:
            assert target.suffix == ".md" and anchor in anchors(target), f"{link}: no such heading"
    if pending:
        pytest.skip(f"not in this tree yet: {', '.join(sorted(set(pending)))}")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_manual_speaks_of_the_software_not_of_its_making(page: Path) -> None:
    text = page.read_text()
    assert "<!--" not in text, "an HTML comment"
    assert "../shared" not in text
    assert not re.search(r"\bissues? #?\d+", text, re.I), "an issue number"
    assert not re.search(r"\bbranch(?:es)? [`'\"]?[a-z0-9-]+[`'\"]? \(", text), "a branch name"


def test_docs_has_an_index_the_readme_links_and_that_links_every_page() -> None:
    index = DOCS / "index.md"
    assert "docs/index.md" in links(README)
    linked = {_target(index, link)[0] for link in links(index)}
    pages = set(DOCS.glob("*.md")) - {index}
    assert pages, "docs/ holds the manual"
    assert pages <= linked, f"pages the index does not name: {sorted(p.name for p in pages - linked)}"


def test_the_complexity_limit_stated_is_the_gates() -> None:
    limit = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]["mccabe"]["max-complexity"]
    text = (DOCS / "development.md").read_text()
    stated = re.findall(r"complexity limit of (\d+)", text)
    assert stated == [str(limit)], stated


def test_the_readme_names_every_command_with_its_summary() -> None:
    from pickfs.cli.main import COMMANDS

    text = README.read_text()
    for name, (_, summary) in COMMANDS.items():
        assert f"| `pickfs {name}` | {summary} |" in text, name


def test_slugs_follow_the_rule_links_are_written_with() -> None:
    assert slug("What `bootstrap.sh` does") == "what-bootstrapsh-does"
    assert slug("The earlier design (`--no-race`)") == "the-earlier-design---no-race"
    assert slug("idle_neighbours.py") == "idle_neighbourspy"


def stated_import_rules() -> dict[str, set[str]]:
    """The import table of docs/development.md as rules: a row's packages -> what they may import, the names it
    lists plus what anything may import unless it says "only", everything for "anything", nothing for "nothing"."""
    from tests.unit.test_import_directions import BASE

    text = (DOCS / "development.md").read_text()
    section = text[text.index("## Import directions"):text.index("## The test suite")]
    rules: dict[str, set[str]] = {}
    for row in re.findall(r"^\| (.+?) \| (.+?) \|$", section, re.M)[1:]:
        names, may = re.findall(r"`([\w.]+)`", row[0]), set(re.findall(r"`([\w.]+)`", row[1]))
        if row[1] == "anything":
            may = {"*"}
        elif not row[1].startswith(("only", "nothing")):
            may |= BASE
        rules.update({name: may for name in names})
    return rules


def test_the_import_table_is_the_tests() -> None:
    from tests.unit.test_import_directions import ALLOWED

    assert stated_import_rules() == ALLOWED
