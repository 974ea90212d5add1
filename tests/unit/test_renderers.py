import csv
import io

import pytest

from pickfs.analysis.run import build_views
from pickfs.report.comparison import pair_runs
from pickfs.report.csv_export import render_csv
from pickfs.report.envdiff import diff
from pickfs.report.markdown import render_markdown
from pickfs.report.recommend import recommend
from tests.records import fill, make_plan


def test_recommendation_picks_the_fastest_safe_config_and_prices_the_unsafe_one(store):
    # ext4 1000, ext4-nobarrier 2000 (unsafe), xfs 500
    [view] = build_views(store.load(fill(store, make_plan())))
    text = " ".join(recommend(view))
    assert text.startswith("sqlite-tpcb: use ext4 (1,000 tx/s, median of 3 runs): significantly faster than every "
                           "other configuration with no setting known to lose acknowledged commits")
    assert "1.99x as fast [1.55x to 2.56x; 95%, this pair alone] against the next best, xfs" in text
    # factors as speed, in words that cannot be misread: 2.01x as fast, never a bare "x2.01"
    assert "ext4-nobarrier would be 2.01x as fast [1.52x to 2.65x] against ext4, at a price: nobarrier" in text


def test_recommendation_names_ties(store):
    values = {0: [1000, 1100, 900], 1: [2000, 2100, 1900], 2: [1000, 1050, 950]}
    [view] = build_views(store.load(fill(store, make_plan(), values=values)))
    rec = recommend(view)[0]
    # ext4 and xfs cannot be told apart: ext4 wins the tie as the distribution's default, and says so
    assert rec.startswith(("sqlite-tpcb: ext4, xfs are tied for the fastest",
                           "sqlite-tpcb: xfs, ext4 are tied for the fastest"))
    assert "use ext4, because it is the distribution's default" in rec


def test_markdown_has_the_table_and_recommendation(store):
    md = render_markdown(store.load(fill(store, make_plan())))
    assert ("| configuration | median | vs ext4 \\[95% interval\\] | verdict | p99 | runs | geo. mean \\[95% interval\\] | "
            "sanitized mean | notes |") in md
    assert "median tx/s (higher is better)" in md
    assert "| ext4-nobarrier ⚠ | 2,000 |" in md and "⚠ ext4-nobarrier: nobarrier" in md
    assert "| **★ ext4** | 1,000 |" in md  # the recommended configuration, marked
    assert "- ext4-nobarrier: 2,000 2,100 1,900" in md  # every run's figure, in order
    assert "**Recommendation.** sqlite-tpcb: use ext4" in md
    assert "| jfs | - |" in md and "2. unavailable: kernel has no jfs" in md  # the notes under the table


def test_csv_has_one_row_per_trial(store):
    record = store.load(fill(store, make_plan()))
    rows = list(csv.DictReader(io.StringIO(render_csv(record))))
    assert len(rows) == len(record.trials) == 19
    measured = [r for r in rows if r["phase"] == "measured" and r["ok"] == "1"]
    assert [float(r["tps"]) for r in measured if r["config"] == "ext4-nobarrier"] == [2000, 2100, 1900]
    assert rows[-1]["error"].startswith("unavailable")


def test_compare_pairs_cells_and_keeps_the_unmatched(store):
    a = store.load(fill(store, make_plan(), run_id="20260101-000000-aaaa"))
    slower = {0: [500, 550, 450], 1: [2000, 2100, 1900], 2: [500, 500, 500]}
    b = store.load(fill(store, make_plan(), run_id="20260101-000000-bbbb", values=slower))
    pairs = {p.config: p for p in pair_runs(a, b)}
    assert pairs["ext4"].comparison.ratio == pytest.approx(0.5, rel=0.02) and pairs["ext4"].comparison.p < 0.05
    assert pairs["ext4-nobarrier"].comparison.ratio == pytest.approx(1.0)
    assert pairs["jfs"].comparison is None  # measured in neither


def test_env_diff_puts_storage_first_and_finds_r2s_difference():
    dev = {"host.kernel": "6.1", "host.cpus": "8", "mount.fstype": "ext3", "mount.option.rw": "on",
           "device.0.kind": "device-mapper vg-root", "device.0.name": "dm-0", "device.0.write_cache": "write back"}
    ci = {"host.kernel": "6.1", "host.cpus": "4", "mount.fstype": "ext4", "mount.option.rw": "on",
          "mount.option.nobarrier": "on", "device.0.kind": "disk", "device.0.name": "sda",
          "device.0.write_cache": "write back"}
    d = diff(dev, ci)
    assert [x.key for x in d] == ["mount.fstype", "mount.option.nobarrier", "device.0.kind", "host.cpus"]
    assert [x.storage for x in d] == [True, True, True, False]
    assert d[1].a is None and d[1].b == "on"
    assert diff(dev, dev) == []


def test_renderers_agree_on_verdicts_and_do_not_repeat_the_status(store):
    import os

    from rich.console import Console

    from pickfs.report.html import render_html
    from pickfs.report.terminal import render_run

    record = store.load(fill(store, make_plan()))
    with open(os.devnull, "w") as sink:
        console = Console(width=300, record=True, file=sink)
        console.print(render_run(record))
    outputs = {"terminal": console.export_text(), "markdown": render_markdown(record), "html": render_html(record)}
    outputs["markdown"] = outputs["markdown"].replace("\\[", "[").replace("\\]", "]")
    for name, text in outputs.items():
        # one column of ratios, every one in one unit (factors here, as xfs is beyond half the speed)
        assert "2.01x [1.52x to 2.65x]" in text and "faster, p=0.014" in text, name  # ext4-nobarrier against ext4
        assert "0.50x [0.39x to 0.64x]" in text and "slower, p=0.014" in text, name  # xfs
        assert "unavailable: unavailable" not in text, name
        assert "kernel has no jfs" in text, name


def test_factors_read_one_way_whatever_the_metrics_direction():
    from pickfs.report.text import speed_words
    from pickfs.stats.compare import Comparison

    # a time 0.86 of the baseline's is faster: 1.16x as fast, in the one unit of every view
    time_ratio = Comparison(0.86, 0.80, 0.93, 0.01)
    assert speed_words(time_ratio, higher_is_better=False) == "1.16x as fast [1.08x to 1.25x]"
    rate_ratio = Comparison(0.86, 0.80, 0.93, 0.01)
    assert speed_words(rate_ratio, higher_is_better=True) == "0.86x as fast [0.80x to 0.93x]"
    assert speed_words(Comparison(2.35, 0.15, 37.0, 0.3), True) == "2.35x as fast [0.15x to 37x]"
    assert speed_words(Comparison(0.55, 0.44, 0.68, 0.01), True) == "0.55x as fast [0.44x to 0.68x]"


def test_p_values_too_small_to_print_read_p_below_a_thousandth():
    from pickfs.report.text import fmt_p

    assert fmt_p(0.00002) == "p<0.001" and fmt_p(0.0123) == "p=0.012" and fmt_p(0.001) == "p=0.001"


def test_log_interval_stays_positive_where_the_t_interval_goes_below_zero():
    from pickfs.stats.summary import log_interval, mean_confidence_interval

    values = [40.0, 700.0]  # two runs far apart: issue 19's -330 tx/s
    assert mean_confidence_interval(values)[0] < 0
    gm, lo, hi = log_interval(values)
    assert 0 < lo < gm < hi and gm == pytest.approx((40 * 700) ** 0.5)
    assert log_interval([1.0, 0.0, 2.0]) is None and log_interval([5.0]) is None


def test_the_html_names_the_machine_from_what_the_run_stored(store):
    from dataclasses import replace

    from pickfs.report.html import machine, render_html

    record = store.load(fill(store, make_plan()))
    host = {"hostname": "db7", "cpu_model": "AMD EPYC 7763", "cpus": 16, "memory_bytes": 64 * 1024**3,
            "os": "Debian 12", "kernel": "6.1",
            "fingerprint": {"device.0.name": "nvme0n1", "device.0.kind": "disk", "device.0.model": "Samsung PM9A3",
                            "mount.fstype": "ext4"}}
    words = machine(replace(record, host=host))
    assert words.startswith("db7; AMD EPYC 7763 (16 CPUs); 64.0 GiB memory; disk: Samsung PM9A3; images on ext4")
    assert "Machine: db7; AMD EPYC 7763" in render_html(replace(record, host=host), plotly=None)
    bare = machine(replace(record, host={"hostname": "vm", "fingerprint": {"device.0.name": "vda",
                                                                          "device.0.kind": "disk"}}))
    assert bare.startswith("vm; disk: disk vda (model not reported)")


def test_terse_lines_name_the_answer_or_say_undecided(store):
    from dataclasses import replace

    from pickfs.report.table import Answer, build_table, terse_answer

    def terse(table):
        return terse_answer(table.workload, table.answer)

    [view] = build_views(store.load(fill(store, make_plan())))
    table = build_table(view)
    assert terse(table) == "sqlite-tpcb: ext4" and table.answer.choice == "ext4"
    undecided = replace(table, answer=Answer(("...",), "ext4", "tied", decided=False))
    assert terse(undecided) == "sqlite-tpcb: ext4 (undecided)"
    assert terse(replace(table, answer=Answer(("...",), None, ""))) == "sqlite-tpcb: none"
