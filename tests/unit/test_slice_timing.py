"""A slice's time is the workload's run and its syncfs: holding the server still, and letting it go, are not
counted (a Freezer scans /proc for the server's processes, up to five times, each way)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from pickfs.engine.bench import Bench
from pickfs.engine.sidebyside import Member, Slicer
from pickfs.model import Method, MountInfo, RawOutput, Target
from pickfs.plan import build_plan, configs_from_names
from pickfs.plan.flags import workload_specs
from pickfs.stack.provision import Provisioned
from pickfs.store import ResultStore
from pickfs.usecases.run import plan_record

RUN_S = 0.05
FREEZER_S = 0.4


class Quiet:
    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


class SlowFreezer:
    """A server held still and let go, each taking FREEZER_S; what happened, in order."""

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def thaw(self) -> None:
        time.sleep(FREEZER_S)
        self.events.append("thaw")

    def freeze(self) -> None:
        time.sleep(FREEZER_S)
        self.events.append("freeze")


class Brief:
    """A workload whose run takes RUN_S."""

    notes: tuple[str, ...] = ()

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def run(self, spec: Any, datadir: Path, endpoint: Any) -> RawOutput:
        self.events.append("run")
        time.sleep(RUN_S)
        return RawOutput("tps = 100", RUN_S)

    def parse(self, text: str) -> dict[str, float]:
        return {"tps": 100.0}

    def notes_from(self, text: str) -> list[str]:
        return []


def test_a_slices_time_leaves_out_thawing_and_freezing_its_server(tmp_path: Path) -> None:
    plan = build_plan(Target(workdir=str(tmp_path)), configs_from_names("ext4"),
                      workload_specs(("sqlite-tpcb",), (), None), Method(monitors=False), None)
    store = ResultStore(tmp_path / "results.db")
    store.create_run("r1", "0.1.0", plan_record(plan), {"hostname": "box"})
    slicer = Slicer(Bench(plan, "r1", store, None, Quiet()))  # type: ignore[arg-type]
    events: list[str] = []
    info = MountInfo(None, "", "ext4", (), (), None, None, None)
    member = Member(plan.cells()[0], Provisioned(info, tmp_path, None), None, Brief(events),  # type: ignore[arg-type]
                    SlowFreezer(events))  # type: ignore[arg-type]
    before = time.time()
    trial = slicer.slice(member, 0, [member])
    assert events == ["thaw", "run", "freeze"]
    assert trial.started >= before + FREEZER_S * 0.9, "the slice's start is after its server was let go"
    assert RUN_S * 0.9 <= trial.elapsed_s < FREEZER_S, trial.elapsed_s
    assert [t.elapsed_s for t in store.load("r1").trials] == [trial.elapsed_s]
    warm = slicer.slice(replace(member, block=1), None, [member])
    assert warm.phase == "warmup" and events[-2:] == ["thaw", "run"], "a warm-up leaves its server running"
