"""The fixed-rate table and the capacity table from stored runs (report/latency.py), terminal and JSON."""

from __future__ import annotations

import json
import os
import random
from dataclasses import replace

from rich.console import Console

from pickfs.analysis.latency import capacity_rows, rate_views
from pickfs.clients.pacing import Book, arrival_times, paced, summary
from pickfs.model import Trial, WorkloadSpec
from pickfs.report.json_export import run_to_dict
from pickfs.report.terminal import render_run
from pickfs.workloads.sqlite_tpcb import SqliteTpcb
from tests.records import fill, make_plan, record_dict
from tests.unit.test_fixed_rate import FakeServer

RUN = "20260101-000000-rate"


def raw(server: FakeServer, rate: float, seed: int) -> str:
    book = Book()
    start = server.clock()
    paced(arrival_times(rate, "poisson", random.Random(seed), start), start + 1.0, server.commit, book, 0.0, None,
          server.clock, server.sleep)
    server.now += 1.0
    return json.dumps({"client": "pickfs-tpcb", "fixed_rate": summary(book, rate, "poisson", 0.0, 1.0)})


def rate_plan(**method):
    plan = make_plan()
    wl = WorkloadSpec("sqlite-tpcb", "sqlite-tpcb", tuple(sorted(SqliteTpcb.normalize({"rate": 100}).items())))
    return replace(plan, configs=plan.configs[:3], workloads=(wl,), method=plan.method.but(**method))


def store_run(store, plan, phase: str, rates=(100.0,)) -> str:
    store.create_run(RUN, "0.1.0", record_dict(plan), {"hostname": "box"})
    servers = {0: FakeServer(0.001), 1: FakeServer(0.001, stall=0.2), 2: FakeServer(0.003)}
    r = 0
    for rate in rates:
        for _ in range(6):
            for cell, server in servers.items():
                store.save_trial(Trial(run_id=RUN, cell_index=cell, repetition=r, phase=phase, started=10.0 + r,
                                       elapsed_s=1.0, ok=True, metrics={"tps": rate, "client_cpu_share": 0.2},
                                       raw_output=raw(server, rate, 7 * r + cell), block=0, round=r))
            r += 1
    store.set_status(RUN, "complete")
    return RUN


def text_of(record) -> str:
    console = Console(width=220, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(render_run(record))
    return console.export_text()


def test_the_fixed_rate_table_shows_percentiles_from_the_schedule_and_paired_ratios(store):
    record = store.load(store_run(store, rate_plan(), "measured"))
    [view] = rate_views(record)
    rows = {r.config: r for r in view.rows}
    assert view.baseline == "ext4" and rows["ext4"].p99_ratio is None
    stalled = rows["ext4-nobarrier"]
    assert stalled.summary.percentiles_s[99.0] >= 0.1  # the stall, seen from the schedule
    assert stalled.p99_ratio is not None and stalled.p99_ratio.low is not None and stalled.p99_ratio.low > 5
    text = text_of(record)
    assert "at a fixed rate: latency from each transaction's scheduled start" in text
    assert "p99 vs ext4 [95%]" in text and "100/s" in text
    doc = run_to_dict(record)
    [fixed] = doc["fixed_rate"]
    by = {c["config"]: c for c in fixed["configs"]}
    assert by["ext4-nobarrier"]["percentiles_s"]["p99"] >= 0.1 and sum(by["ext4"]["latency_us"].values()) > 500
    assert "capacity" not in doc


def test_a_closed_loop_run_has_no_fixed_rate_tables(store):
    record = store.load(fill(store, make_plan()))
    assert rate_views(record) == [] and capacity_rows(record) == []
    assert "fixed_rate" not in run_to_dict(record) and "fixed rate" not in text_of(record)


def test_the_capacity_table_is_derived_from_the_search_slices(store):
    plan = rate_plan(latency_target="p99<=10ms")
    record = store.load(store_run(store, plan, "capacity", rates=(100.0, 200.0, 400.0)))
    [(label, target, rows)] = capacity_rows(record)
    caps = {r.config: r.capacity for r in rows}
    assert target.limit_s == 0.01
    assert caps["ext4"].rate == 400  # a 1 ms commit holds all three
    assert caps["ext4-nobarrier"].rate == 0 and caps["ext4-nobarrier"].lowest_failed == 100  # the stall: none
    assert 0 < caps["xfs"].rate < 400
    assert rate_views(record) == []  # the search's slices never count as fixed-rate figures
    text = text_of(record)
    assert "the highest rate held with p99 <= 10 ms" in text
    assert run_to_dict(record)["capacity"][0]["configs"][0]["capacity_per_s"] == 400


def test_html_shows_percentile_curves_and_latency_against_rate(store):
    from pickfs.report.html import render_html
    from pickfs.report.latency import percentile_curve

    record = store.load(store_run(store, rate_plan(latency_target="p99<=10ms"), "capacity", rates=(100.0, 200.0)))
    page = render_html(record, plotly=None)
    assert 'data-chart="capacity"' in page and "capacity within p99 &lt;= 10 ms" in page
    assert percentile_curve({1000: 998, 5000: 2})[-1] == (99.9, 0.005)  # p99.99 needs 10,000 transactions
    assert [q for q, _ in percentile_curve({1000: 50})] == [50.0, 75.0, 90.0, 95.0, 99.0]


def test_html_of_a_fixed_rate_run(store):
    from pickfs.report.html import render_html

    page = render_html(store.load(store_run(store, rate_plan(), "measured")), plotly=None)
    assert 'data-chart="percentiles"' in page and "at a fixed rate" in page


def test_markdown_carries_both_tables(store):
    from pickfs.report.markdown import render_markdown

    md = render_markdown(store.load(store_run(store, rate_plan(latency_target="p99<=10ms"), "capacity",
                                              rates=(100.0, 200.0))))
    assert "the highest rate held with p99 &lt;= 10 ms" in md and "| ext4 | 200/s |" in md
    assert "at a fixed rate" not in md


def test_the_fixed_rate_recommendation_decides_with_the_plans_margin(store):
    """--margin reaches the recommendation by latency as it reaches the race's (it once used the default 5%)."""
    from pickfs.analysis.run import build_views

    record = store.load(store_run(store, rate_plan(margin=0.25), "measured"))
    [view] = build_views(record)
    assert view.latency is not None and view.latency.decision is not None
    assert view.latency.decision.margin == 0.25
