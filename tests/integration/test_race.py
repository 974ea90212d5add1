"""The race on real filesystems: a configuration far slower than the others leaves the rotation early,
the run answers from its decision, and nothing is left mounted, attached or running, also after
Ctrl-C in the middle of the race and --resume."""

import json
import re
import signal
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import ledger_entries, loops_under, mounts_under, needs_root, pickfs, start_pickfs
from tests.integration.test_side_by_side import processes_under, wait_for_slices

pytestmark = needs_root

# ext4 mounted `sync` writes everything synchronously: a safe candidate many times slower than the rest; ext4 and
# ext4 mounted noatime measure alike, so at a 0.5% margin they race on after it has left (xfs against ext4 could
# settle in the very round ext4-sync leaves, and nothing would show that it left early)
PLAN = """
baseline = "ext4"
[target]
size = "1G"
[method]
max_seconds = {budget}
warmup = 0
blocks = 2
margin = 0.005
[[config]]
preset = "ext4"
[[config]]
name = "ext4-noatime"
fs = "ext4"
mount = "noatime"
[[config]]
name = "ext4-sync"
fs = "ext4"
mount = "sync"
[[workload]]
name = "sqlite-tpcb"
"""


def measured(workdir: Path) -> list[tuple[int, int, int]]:
    conn = sqlite3.connect(workdir / "results.db")
    try:
        return conn.execute("SELECT cell_index, block, round FROM trials WHERE phase='measured' AND ok=1"
                            " ORDER BY id").fetchall()
    finally:
        conn.close()


def nothing_left(workdir: Path) -> None:
    assert mounts_under(workdir) == [] and loops_under(workdir) == [] and ledger_entries(workdir) == []
    assert processes_under(workdir) == []


def test_a_far_slower_configuration_leaves_the_race_early(workdir):
    plan = workdir / "plan.toml"
    plan.write_text(PLAN.format(budget=70))
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--plan", str(plan), "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "ext4-sync leaves the race after round" in r.stdout + r.stderr
    rows = measured(workdir)
    last = {cell: max(rnd for c, _, rnd in rows if c == cell) for cell in {c for c, _, _ in rows}}
    assert last[2] < max(last[0], last[1])  # ext4-sync (cell 2) left while the others went on
    assert "left early" in r.stdout  # the default view: the race in one line
    explained = pickfs(workdir, "report", "latest", "--explain")  # the race log
    assert "left the race after round" in explained.stdout and "ext4-sync" in explained.stdout
    doc = json.loads(out.read_text())
    cells = {c["config"]: c for c in doc["cells"]}
    assert cells["ext4-sync"]["comparison"]["ci_high"] < 1  # clearly slower, with its interval
    assert not cells["ext4-sync"]["recommended"]
    trail_reproduced(workdir, left="ext4-sync")
    nothing_left(workdir)


def trail_reproduced(workdir: Path, left: str | None = None) -> None:
    """The race recorded the decision it acted on after each round, and why it stopped, and the analysis reproduces
    that trail from the stored trials; `left` is among those it let go."""
    from pickfs.analysis.run import build_views
    from pickfs.analysis.views import trail_differences
    from pickfs.model import STOP_REASONS, plan_from_dict
    from pickfs.store import ResultStore

    store = ResultStore.read_only(workdir / "results.db")
    try:
        record = store.load("latest")
    finally:
        store.close()
    plan = plan_from_dict(record.plan)
    assert record.race_rounds and record.race_rounds[-1].stop in STOP_REASONS
    for view in build_views(record):
        assert trail_differences(view, plan.method, record.race_rounds) == []
    if left is not None:
        gone = {name for r in record.race_rounds if r.decision for name, _ in (*r.decision["out"], *r.decision["decided"])}
        assert left in gone


def test_ctrl_c_mid_race_then_resume(workdir):
    plan = workdir / "plan.toml"
    plan.write_text(PLAN.format(budget=60))
    proc = start_pickfs(workdir, "run", "--plan", str(plan))
    try:
        wait_for_slices(workdir, 7)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    nothing_left(workdir)
    kept = measured(workdir)
    run_id = err.split("pickfs run --resume ")[1].split()[0]
    r = pickfs(workdir, "run", "--resume", run_id)
    assert r.returncode == 0, r.stderr
    # the progress counts the rounds as the notes do, over the whole run: on from the rounds kept
    shown = [int(m.group(1)) for m in re.finditer(r"^  \S+ round (\d+): widest interval", r.stderr, re.M)]
    assert shown and shown[0] == max(t[2] for t in kept) + 2, (shown, kept)
    after = measured(workdir)
    assert all(t in after for t in kept) and len(after) > len(kept)
    new = [t for t in after if t not in kept]
    assert min(t[2] for t in new) > max(t[2] for t in kept)  # later rounds, on fresh images
    for cell in {c for c, _, _ in new}:
        assert min(b for c, b, _ in new if c == cell) > max((b for c, b, _ in kept if c == cell), default=-1)
    assert "measured side by side in a race" in pickfs(workdir, "report", "latest", "--explain").stdout
    trail_reproduced(workdir)  # the decisions of both parts, as each acted on them
    nothing_left(workdir)


@pytest.mark.parametrize("race", ["true", "false"])
def test_a_run_where_nothing_stands_up_times_no_first_block(workdir, race):
    """Every configuration refused by the kernel at mount (options of the grammar's shape, values ext4 refuses: an
    I/O priority over 7, a read-ahead that is no power of two): each one's failure is said, and no note times a
    block that never stood."""
    plan = workdir / "plan.toml"
    plan.write_text(f"""
[method]
warmup = 0
max_seconds = 30
race = {race}
[[config]]
name = "a"
fs = "ext4"
mount = "journal_ioprio=9"
[[config]]
name = "b"
fs = "ext4"
mount = "inode_readahead_blks=3"
[[workload]]
name = "sqlite-tpcb"
""")
    r = pickfs(workdir, "run", "--plan", str(plan))
    assert r.returncode == 1, r.stderr
    assert "journal_ioprio=9" in r.stderr and "inode_readahead_blks=3" in r.stderr
    assert "standing up" not in r.stdout + r.stderr and "the first took" not in r.stdout + r.stderr, r.stderr
    nothing_left(workdir)


# an A/A copy of ext4 at a 0.5% margin: no run this short can tell two identical configurations apart that
# finely, so the race cannot settle and must stop before its budget, saying why and what it would need
CLOSE_PLAN = """
baseline = "ext4"
[target]
size = "1G"
[method]
max_seconds = {budget}
warmup = 0
blocks = 2
margin = 0.005
[[config]]
preset = "ext4"
[[config]]
name = "ext4-noatime"
fs = "ext4"
mount = "noatime"
[[workload]]
name = "sqlite-tpcb"
"""


def answer_line(doc: dict) -> str:
    return " ".join(a["reason"] for a in doc["answers"])


def test_an_unsettled_race_stops_before_its_budget_and_says_why(workdir):
    budget = 100
    plan = workdir / "plan.toml"
    plan.write_text(CLOSE_PLAN.format(budget=budget))
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--plan", str(plan), "--json", str(out))
    assert r.returncode == 0, r.stderr
    said = r.stdout + r.stderr
    assert "the race stops after round" in said and "cannot settle within the budget" in said, said
    doc = json.loads(out.read_text())
    [note] = [n for n in doc["notes"] if "the race stops after round" in n]
    assert "ext4-noatime" in note and "0.5% margin" in note
    conn = sqlite3.connect(workdir / "results.db")
    try:
        first, last = conn.execute("SELECT MIN(started), MAX(started + elapsed_s) FROM trials "
                                   "WHERE phase='measured'").fetchone()
    finally:
        conn.close()
    print(f"measured for {last - first:.0f} s of a {budget} s budget; {note}; {answer_line(doc)}")
    assert last - first < 0.8 * budget  # measured for well under the budget: it stopped early
    [answer] = doc["answers"]
    # unsettled, it prefers what it leans to on its estimates: ext4, or ext4-noatime when that is over 1.005x
    assert answer["preferred"] in ("ext4", "ext4-noatime") and answer["settled"] is False
    assert answer["would_settle"]["margin"] >= 0.05
    # one figure: the note says what the answer says would settle it, in the same words, when both read the same
    # slices (a disturbed run's answer is figured on its quiet slices alone, and may give another, as margin.py says)
    settle = answer["would_settle"]
    if "sqlite-tpcb" not in doc.get("disturbance", {}).get("figured_on_quiet_slices", []):
        assert ("more time will not settle it" in note) == (settle["more_seconds"] is None), note
        assert f"a {settle['margin']:.0%} margin (--margin {settle['margin']:.0%}" in note, note  # ', in favour of'
        assert ("in favour of ext4)" in note) == (answer["preferred"] == "ext4-noatime"), note
    assert f"a {settle['margin']:.0%} margin" in answer_line(doc)
    nothing_left(workdir)


COPY_PLAN = """
baseline = "ext4"
[target]
size = "1G"
[method]
max_seconds = 60
warmup = 0
blocks = 2
[[config]]
preset = "ext4"
[[config]]
preset = "ext4"
name = "ext4-aa"
[[config]]
preset = "xfs"
[[workload]]
name = "sqlite-tpcb"
"""


def test_an_aa_copy_races_as_a_check_of_the_method_never_as_a_contender(workdir):
    """The same setup under two names: the baseline stands for it, the copy is said beside the answer against it,
    and the race recorded what the analysis decides from the stored slices."""
    plan = workdir / "plan.toml"
    plan.write_text(COPY_PLAN)
    out = workdir / "run.json"
    r = pickfs(workdir, "run", "--plan", str(plan), "--json", str(out))
    assert r.returncode == 0, r.stderr
    [answer] = json.loads(out.read_text())["answers"]
    assert answer["preferred"] in ("ext4", "xfs")
    assert "ext4-aa" not in [c["config"] for c in answer["contenders"]] + answer["undecided_between"]
    [check] = answer["checks"]
    assert check["config"] == "ext4-aa" and check["copy_of"] == "ext4"
    assert check["different"] == (check["ci_low"] > 1 or check["ci_high"] < 1)
    assert "ext4-aa, ext4 measured again as a check of the method" in " ".join(r.stdout.split())
    trail_reproduced(workdir)
    nothing_left(workdir)
