"""A search's result as data, in the terminal and as JSON; its record; the room for every image at once."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pickfs.errors import PlanError
from pickfs.model import FsConfig, WorkloadSpec
from pickfs.report.search_json import render_json
from pickfs.report.search_text import render
from pickfs.search.driver import run_search
from pickfs.search.outcome import setup, to_dict
from pickfs.search.presets import presets_not_raced, safe_presets
from pickfs.search.stages import SearchState, blocks_that_fit, load_state, save_state, state_path
from pickfs.stack.provision import HOST_RESERVE_BYTES
from tests.unit.test_search_design import SURFACE, Surface

SPEC = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", (("duration", 4.0), ("journal_mode", "WAL"), ("scale", 1),
                                                  ("synchronous", "FULL"), ("transactions", 0)))
GIB = 1024**3


def test_the_answer_is_a_setup_to_paste():
    c = FsConfig("ext4+journal256m+noatime+commit30+mq-deadline", "ext4", ("-J", "size=256"),
                 ("noatime", "commit=30"), "mq-deadline")
    s = setup(c, SPEC, "sqlite")
    assert s["mkfs"] == "mkfs.ext4 -J size=256 /dev/DEVICE"
    assert s["fstab"] == "/dev/DEVICE  /var/lib/DATABASE  ext4  noatime,commit=30  0  2"
    assert s["udev"] == 'ACTION=="add|change", KERNEL=="DEVICE", ATTR{queue/scheduler}="mq-deadline"'
    assert s["database_settings"] == {"journal_mode": "WAL", "synchronous": "FULL"}
    x = setup(FsConfig("xfs+defaults", "xfs"), SPEC, "sqlite")
    assert x["fstab"].endswith("xfs  defaults  0  0") and x["udev"] is None


def test_the_report_ranks_what_mattered_names_what_did_not_and_gives_the_path_and_answer():
    result = run_search(SURFACE, Surface(4), 1800.0, seed=4, sample=2)
    d = to_dict("S1", result, SPEC, "sqlite", {"max_time_s": 1800.0})
    text = render(d)
    mattered = text.split("What mattered")[1].split("The path")[0]
    lines = [ln.strip() for ln in mattered.splitlines()[1:] if ln.strip() and not ln.startswith("No measurable")]
    assert lines[0].startswith("ext4 A") and "no measurable" not in lines[0]
    assert "ext4 C" in text.split("No measurable difference:")[1]
    assert "ext4 A" not in text.split("No measurable difference:")[1]
    assert "screening (run run): 11 configurations" in text and "refinement (run run)" in text
    assert "The answer: ext4+a+b (settled)" in text
    assert "mkfs:  mkfs.ext4 /dev/DEVICE" in text
    assert "fstab: /dev/DEVICE  /var/lib/DATABASE  ext4  opt_a,opt_b  0  2" in text
    assert "sqlite settings as measured: journal_mode=WAL, synchronous=FULL" in text
    back = json.loads(render_json(d))
    assert back["schema"] == 1 and back["answer"]["name"] == "ext4+a+b"
    assert back["answer"]["advantage"]["low"] > 1.3
    assert any(e["dimension"] == "C" and not e["measurable"] for e in back["effects"])


def test_room_for_every_image_standing_at_once():
    # 10 configurations, the baseline in 3: 12 images a block, each growing to 1 GiB
    assert blocks_that_fit(12 * GIB + HOST_RESERVE_BYTES, GIB, 10, 3, 2) == 1
    assert blocks_that_fit(24 * GIB + HOST_RESERVE_BYTES, GIB, 10, 3, 2) == 2
    assert blocks_that_fit(11 * GIB, GIB, 10, 3, 2) == 0


def test_the_search_record_is_pickfs_own(tmp_path):
    wd = str(tmp_path)
    state = SearchState("20260101-000000-abcd", {"seed": 1}, {"screening": {"run_id": "r", "elapsed_s": 3.0,
                                                                            "done": True}})
    save_state(wd, state)
    path = state_path(wd, state.id)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_state(wd, state.id).stages == state.stages
    with pytest.raises(PlanError) as missing:
        load_state(wd, "20260101-000000-ffff")
    assert "searches there: 20260101-000000-abcd" in missing.value.one_line()
    with pytest.raises(PlanError):
        load_state(wd, "../x")
    os.chmod(path, 0o666)
    with pytest.raises(PlanError, match="can be written by another user"):
        load_state(wd, state.id)


def _pickfs(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pickfs", "search", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "CI": "1"})


@pytest.mark.parametrize(("args", "says"), [
    (("--dry-run", "--fs", "ext4,jfs"), "no built-in search space for jfs"),
    (("--dry-run", "--max-time", "1m"), "leaves no room for the stages of a search"),
    (("--dry-run", "--max-time", "10"), "has no unit"),
    (("--resume", "nope"), "no search 'nope'"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, says):
    r = _pickfs(*args, "--workdir", str(tmp_path / "wd"))
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_plan_without_a_search_section_is_refused(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('[[config]]\nname = "a"\nfstype = "ext4"\n')
    r = _pickfs("--dry-run", "--plan", str(plan), "--workdir", str(tmp_path / "wd"))
    assert r.returncode == 2 and "has no [search] section" in r.stderr


def test_dry_run_shows_the_space_and_builds_nothing(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('[search]\nfilesystems = ["ext4"]\n[search.ext4]\natime = ["", "mount:noatime"]\n'
                    'barriers = ["", "mount:nobarrier"]\n')
    r = _pickfs("--dry-run", "--plan", str(plan), "--workdir", str(tmp_path / "wd"))
    assert r.returncode == 0, r.stderr
    # the workload's own settings are dimensions too (sqlite-tpcb: journal mode, synchronous): x4, and
    # synchronous=NORMAL trades safety as nobarrier does
    assert "search space: 16 configurations over ext4, 4 allowed; the screening races 4 of them" in r.stderr + r.stdout
    assert not (tmp_path / "wd").exists()


def test_an_empty_database_table_searches_no_database_setting(tmp_path):
    plan = tmp_path / "p.toml"
    plan.write_text('[search]\nfilesystems = ["ext4"]\n[search.ext4]\natime = ["", "mount:noatime"]\n'
                    'barriers = ["", "mount:nobarrier"]\n[search.database]\n')
    r = _pickfs("--dry-run", "--plan", str(plan), "--workdir", str(tmp_path / "wd"))
    assert r.returncode == 0, r.stderr
    assert "search space: 4 configurations over ext4, 2 allowed; the screening races 2 of them" in r.stderr + r.stdout


def test_an_unsettled_default_is_not_called_the_winner():
    d = {"search": "S", "workload": {"label": "w"}, "configurations_built": 2, "images_built": 2, "effects": [],
         "skipped": [], "space": {"size": 2, "filesystems": ["ext4"], "allowed": 2, "pruned": [], "unsafe_left_out": []},
         "stages": [{"name": "final", "run_id": "r", "configurations": ["ext4+defaults", "ext4+noatime"], "images": 2,
                     "elapsed_s": 60.0, "budget_s": 60.0, "answer": "ext4+defaults", "settled": False,
                     "tied": ["ext4+defaults", "ext4+noatime"], "out": [], "left": []}],
         "answer": {"name": "ext4+defaults", "settled": False, "tied": ["ext4+defaults", "ext4+noatime"],
                    "description": "ext4, every default", "advantage": None, "best_preset": None,
                    "setup": {"mkfs": "mkfs.ext4 /dev/DEVICE", "fstab": "f", "udev": None, "database": None,
                              "database_settings": {}}}}
    text = render(d)
    assert "not settled: could not tell it from ext4+noatime" in text
    assert "preferred on the final race's estimates, not settled" in text
    assert "nothing searched was faster" not in text


def test_a_search_recorded_before_database_settings_resumes_over_the_same_space(tmp_path):
    request = {"space": {"filesystems": ["ext4"], "ext4": {"atime": ["", "mount:noatime"]}},
               "workload": {"name": "sqlite-tpcb", "label": "sqlite-tpcb", "settings": [["journal_mode", "WAL"]]},
               "sample": 0, "seed": 1}
    save_state(str(tmp_path / "wd"), SearchState("20260101-000000-abcd", request))
    r = _pickfs("--dry-run", "--resume", "20260101-000000-abcd", "--workdir", str(tmp_path / "wd"))
    assert r.returncode == 0, r.stderr
    assert "search space: 2 configurations over ext4, 2 allowed" in r.stderr + r.stdout
    save_state(str(tmp_path / "wd"), SearchState("20260101-000000-abce", {**request, "database_settings": True}))
    r = _pickfs("--dry-run", "--resume", "20260101-000000-abce", "--workdir", str(tmp_path / "wd"))
    assert "search space: 8 configurations over ext4, 4 allowed" in r.stderr + r.stdout


def test_no_measurable_difference_is_called_harmless_only_when_its_interval_lies_within_the_margin():
    result = run_search(SURFACE, Surface(4), 1800.0, seed=4, sample=2)
    c = next(e for e in result.effects if e.dimension == "C")
    assert not c.measurable and c.within(0.5) and not c.within(0.01)
    wide = render(to_dict("S1", result, SPEC, "sqlite", {"margin": 0.01}))
    assert "C  " in wide and "not resolved" in wide.split("ext4 C")[1].splitlines()[0]
    assert "Not resolved: the interval includes no change but reaches past ±1%" in wide
    narrow = render(to_dict("S1", result, SPEC, "sqlite", {"margin": 0.5}))
    assert "within ±50%" in narrow.split("ext4 C")[1].splitlines()[0]
    assert "Not resolved:" not in narrow
    back = json.loads(render_json(to_dict("S1", result, SPEC, "sqlite", {"margin": 0.5})))
    assert {e["within_margin"] for e in back["effects"] if e["dimension"] == "C"} == {True}


def test_the_presets_a_final_race_leaves_out_are_named_with_why():
    raced = {p.name for p in safe_presets()}
    left = dict(presets_not_raced())
    assert {"ext4-nobarrier", "ext4-writeback", "ext2", "tmpfs"} <= set(left) and not raced & set(left)
    assert "power cut" in left["ext4-nobarrier"] and "pickfs run --fs ext4-nobarrier" in left["ext4-nobarrier"]
    result = run_search(SURFACE, Surface(4), 1800.0, seed=4, sample=2)
    text = render(to_dict("S1", result, SPEC, "sqlite", {}, presets_not_raced()))
    assert "preset ext4-nobarrier not raced: nobarrier:" in text


def test_the_path_groups_what_left_together_for_the_same_reason_and_says_each_once():
    d = to_dict("S1", run_search(SURFACE, Surface(4), 1800.0, seed=4, sample=2), SPEC, "sqlite", {})
    first = d["stages"][0]
    first["left"] = [{"name": "a", "round": 3, "why": "ext4+defaults is faster by more than 5%: +300%, at least +150%"},
                     {"name": "b", "round": 3, "why": "ext4+defaults is faster by more than 5%: +200%, at least +90%"},
                     {"name": "c", "round": 6, "why": "not faster than ext4+defaults by more than 5%: +1%, at most +4%"}]
    first["out"] = [{"name": "a", "why": "ext4+defaults is faster by more than 5%: +310%, at least +160%"},
                    {"name": "z", "why": "xfs+defaults is faster by more than 5%: +10%, at least +6%"}]
    path = render(d).split("The path:")[1].split("refinement")[0]
    assert ("left after round 3, ext4+defaults is faster by more than 5%: a (+300%, at least +150%); "
            "b (+200%, at least +90%)") in path
    assert "left after round 6, not faster than ext4+defaults by more than 5%: c (+1%, at most +4%)" in path
    assert "out, xfs+defaults is faster by more than 5%: z (+10%, at least +6%)" in path
    assert path.count(" a (") == 1  # said as it left, not again as out
