"""Renderers on stored real runs: tests/data/real-runs.db.gz holds runs pickfs really made on this kind of machine
(loop images, mkfs, the clients' raw output and the monitors' series as they were written), not hand-made
fragments. Made with (PICKFS_WORKDIR of one's own, under the disk lock):

    pickfs run --plan db.toml    # tmpfs, ext4, ext4-nobarrier, xfs, btrfs side by side; sqlite-tpcb with
                                 # synchronous FULL and OFF; 75 s per workload; crash test, 4 states, 1.5 s
    pickfs run --plan tree.toml  # tree (generated, 3,000 files) on ext4 and xfs, 3 whole runs each, twice
    pickfs run --plan fio.toml   # fileio (128 MiB in 4 files) on ext4, ext4-nobarrier, xfs side by side, 45 s
    pickfs run --max-time 2m     # the default job: sqlite-tpcb on every preset side by side

(the plans are in tests/data/real-runs.md).
"""

import gzip
import html
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from pickfs.analysis.answer import recommended
from pickfs.analysis.run import build_views
from pickfs.analysis.views import DATABASE, FILE_TREE, OTHER
from pickfs.report.charts import crash_chart, forest_chart, is_reference, latency_chart, safety_chart
from pickfs.report.html import charts_for, render_html
from pickfs.report.markdown import render_markdown
from pickfs.report.site import PLOTLY_FILE, build_site, plan_key
from pickfs.report.terminal import matters, render_run
from pickfs.report.text import fmt_bytes, fmt_value, sanitized, values_text, verdict
from pickfs.stats.summary import log_interval
from pickfs.store import ResultStore

DATA = Path(__file__).resolve().parents[1] / "data" / "real-runs.db.gz"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    path = tmp_path_factory.mktemp("real") / "results.db"
    path.write_bytes(gzip.decompress(DATA.read_bytes()))
    store = ResultStore(path)
    records = [store.load(r.id) for r in store.list_runs()]
    yield {"db": next(r for r in records if any(w["label"] == "sqlite-full" for w in r.plan["workloads"])),
           "trees": [r for r in records if r.plan["workloads"][0]["name"] == "tree"],
           "fio": next(r for r in records if r.plan["workloads"][0]["name"] == "fileio"), "all": records, "path": path}
    store.close()


def terminal(record, explain=False, width=250) -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=width, record=True, file=sink)
        console.print(render_run(record, explain=explain))
        return console.export_text()


def test_the_fixtures_are_real_runs(runs):
    db = runs["db"]
    raw = [t.raw_output for t in db.trials if t.phase == "measured" and t.ok]
    assert raw and all('"client"' in r or "per_second" in r for r in raw)  # the client's own JSON, verbatim
    assert any(t.phase == "crash" and t.ok for t in db.trials)
    assert len(runs["trees"]) >= 2 and plan_key(runs["trees"][0].plan) == plan_key(runs["trees"][1].plan)


def test_intervals_of_rates_are_on_the_log_scale(runs):
    for view in build_views(runs["db"]):
        for row in view.rows:
            if len(row.primary.values) < 2:
                continue
            gm, lo, hi = log_interval(row.primary.values)
            assert 0 < lo < gm < hi
            assert math.isclose(gm / lo, hi / gm, rel_tol=1e-9)  # symmetric in ratio
            assert gm == pytest.approx(math.exp(sum(map(math.log, row.primary.values)) / len(row.primary.values)))


def test_the_ratio_chart_keeps_references_apart_and_is_sorted(runs):
    view = build_views(runs["db"])[0]
    fig = forest_chart(view)
    names = list(fig.data[0].y)
    assert not any(n.startswith("tmpfs") for n in names)  # the in-memory upper bound does not set the scale
    speeds = list(fig.data[0].x)
    assert speeds == sorted(speeds, reverse=True) and min(speeds) > 0
    assert fig.layout.xaxis.type == "log"
    assert any(n.startswith(view.baseline) for n in names)
    refs = forest_chart(view, references=True)
    assert [n.split()[0] for n in refs.data[0].y] == ["tmpfs"]
    # the resolution is drawn as a band around 1
    [band] = [s for s in fig.layout.shapes if s.type == "rect"]
    assert band.x0 < 1 < band.x1
    assert band.x1 == pytest.approx(1 + view.resolution[0])
    # marked when a setting trades safety for speed; the recommended one starred
    unsafe = {r.cell.config.name for r in view.rows if r.unsafe}
    for name, symbol in zip(names, fig.data[0].marker.symbol):
        assert (symbol == "diamond") == (name.split()[0] in unsafe)
    assert f"{recommended(view)} ★" in names


def test_charts_are_chosen_per_kind_of_workload(runs):
    db = runs["db"]
    [tree] = build_views(runs["trees"][0])
    assert tree.kind == FILE_TREE and all(v.kind == DATABASE for v in build_views(db))
    kinds = [k for k, _ in charts_for(runs["trees"][0], tree)]
    assert kinds[0] == "forest" and "phases" in kinds
    assert "safety" not in kinds and "device" not in kinds  # no commit safety, no empty per-second panel
    assert safety_chart(tree) is None
    for view in build_views(db):
        kinds = [k for k, _ in charts_for(db, view)]
        assert kinds[0] == "forest" and {"safety", "latency", "over-time"} <= set(kinds) and "phases" not in kinds


def test_safety_chart_names_every_configuration_once_and_marks_the_recommended(runs):
    view = build_views(runs["db"])[0]
    fig = safety_chart(view)
    labels = [y for trace in fig.data if trace.name != "recommended" for y in trace.y]
    measured = [r.cell.config.name for r in view.rows if r.primary.summary and not is_reference(r)]
    assert sorted(label.split()[0] for label in labels) == sorted(measured)  # tmpfs apart: no shared axis
    [star] = [t for t in fig.data if t.name == "recommended"]
    assert star.y[0].split()[0] == recommended(view)
    # safety from the crash test where one ran: a configuration that lost commits is in that group
    lost = {r.cell.config.name for r in view.rows if r.crash_lost}
    [group] = [t for t in fig.data if t.name == "lost commits in a crash test"] or [None]
    assert lost == ({y.split()[0] for y in group.y} if group else set())


def test_crash_picture_is_configurations_by_settings_with_the_worst_loss_on_hover(runs):
    views = build_views(runs["db"])
    fig = crash_chart(views)
    [heat] = fig.data
    assert len(heat.x) == 2 and "synchronous=FULL" in heat.x[0] and "synchronous=OFF" in heat.x[1]
    for i, name in enumerate(heat.y):
        for j, view in enumerate(views):
            row = next(r for r in view.rows if r.cell.config.name == name)
            if row.crash is None or row.crash.error:
                assert heat.z[i][j] is None
                continue
            assert (heat.z[i][j] > 0) == row.crash.lost_any
            assert row.crash.verdict() in heat.hovertext[i][j]


def test_time_metrics_say_lower_is_better_and_factors_read_one_way(runs):
    record = runs["trees"][0]
    [view] = build_views(record)
    row = next(r for r in view.rows if r.cell.config.name != view.baseline)
    text, _ = verdict(row, view.baseline)
    faster = row.comparison.ratio < 1  # a time: lower is faster
    assert ("faster" in text or "as fast" in text) == faster and ("slower" in text) == (not faster)
    assert not re.search(r"×?0\.\d+x? (faster|slower)", text)
    for out in (terminal(record), render_markdown(record), render_html(record)):
        assert "lower is better" in out


def test_sanitized_mean_values_and_space_in_every_renderer(runs):
    for record in (runs["db"], runs["trees"][0]):
        # the terminal's table holds one central value, the median: the others with --explain
        outputs = {"terminal": terminal(record, explain=True), "markdown": render_markdown(record).replace("\\", ""),
                   "html": render_html(record)}
        for view in build_views(record):
            for row in view.rows:
                if not row.primary.values:
                    continue
                for name, out in outputs.items():
                    assert sanitized(row) in out, (name, row.cell.config.name)
                    assert values_text(row) in out or values_text(row, None) in out, (name, row.cell.config.name)
                    for label, value in row.space.items():
                        assert fmt_bytes(value) in out, (name, label)
    tree_out = terminal(runs["trees"][0], explain=True)  # the space used: with --explain, not in the default view
    assert "size of the filesystem" in tree_out and "free with the data in place" in tree_out
    assert "size of the filesystem" not in terminal(runs["trees"][0])


def test_terminal_shows_one_line_of_why_for_the_configurations_that_matter(runs):
    record = runs["db"]
    short, full = terminal(record), terminal(record, explain=True)
    for view in build_views(record):
        want = [r for r in view.rows if r.cell.config.name in matters(view) and r.explanation]
        assert recommended(view) is None or recommended(view) in matters(view)  # none when every one is unsafe
        assert all(n == recommended(view) or next(r for r in view.rows if r.cell.config.name == n).comparison.significant
                   for n in matters(view))
        for r in view.rows:
            line = f"why {r.cell.config.name}: {r.explanation[0]}" if r.explanation else None
            if line:
                assert (line in short) == (r in want)
                assert f"why {r.cell.config.name}:" in full and all(x in full for x in r.explanation)
    assert len(short.splitlines()) < len(full.splitlines())
    # the answer comes first: right after the run's line, before any table or explanation
    lines = short.splitlines()
    first_rec = next(i for i, x in enumerate(lines) if x.startswith("sqlite-full: "))
    assert first_rec == 1 and not any(x.startswith("why ") for x in lines[:first_rec + 6])


def test_site_has_an_index_run_pages_and_a_comparison_of_runs_of_one_plan(runs):
    files = build_site(runs["all"])
    assert PLOTLY_FILE in files and "index.html" in files
    for record in runs["all"]:
        assert f"run-{record.id}.html" in files
        assert f"href='run-{record.id}.html'" in files["index.html"]
        assert record.host["hostname"] in files["index.html"]
    plans = [f for f in files if f.startswith("plan-")]
    assert plans == [f"plan-{plan_key(runs['trees'][0].plan)}.html"]
    compare = files[plans[0]]
    for record in runs["trees"]:
        assert record.id in compare
    assert f"{runs['trees'][1].id} against {runs['trees'][0].id}" in compare
    for name, text in files.items():
        if name.endswith(".html"):
            assert not re.search(r"<(script|link)[^>]+(src|href)=[\"']?(https?:)?//", text), name  # nothing remote
            if '<div class="chart"' in text:
                assert f'<script src="{PLOTLY_FILE}"></script>' in text


def test_pickfs_report_site_writes_the_pages(runs, tmp_path):
    out = tmp_path / "site"
    env = {**os.environ, "PICKFS_WORKDIR": str(tmp_path / "w")}
    r = subprocess.run([sys.executable, "-m", "pickfs", "report", "--site", str(out), "--results", str(runs["path"])],
                       capture_output=True, text=True, env=env, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert (out / "index.html").exists() and (out / PLOTLY_FILE).exists()
    assert len(list(out.glob("run-*.html"))) == len(runs["all"])
    bad = subprocess.run([sys.executable, "-m", "pickfs", "report", "--site", str(out / "index.html"), "--results",
                          str(runs["path"])], capture_output=True, text=True, env=env, timeout=60,
                         check=False)
    assert bad.returncode == 2 and "is a file, not a directory" in bad.stderr and "Traceback" not in bad.stderr
    # a link planted under a page's name is replaced, never written through; a shared directory is refused
    victim = tmp_path / "victim"
    victim.write_text("must stay")
    (out / "index.html").unlink()
    (out / "index.html").symlink_to(victim)
    again = subprocess.run([sys.executable, "-m", "pickfs", "report", "--site", str(out), "--results",
                            str(runs["path"])], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert again.returncode == 0, again.stderr
    assert victim.read_text() == "must stay" and not (out / "index.html").is_symlink()
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    refused = subprocess.run([sys.executable, "-m", "pickfs", "report", "--site", str(shared), "--results",
                              str(runs["path"])], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert refused.returncode == 2 and "not your own directory" in refused.stderr and not list(shared.iterdir())


def test_values_are_formatted_in_order(runs):
    view = build_views(runs["db"])[0]
    row = next(r for r in view.rows if len(r.primary.values) > 3)
    assert values_text(row, None).split(" ")[0] == fmt_value(row.primary.values[0], row.primary.metric).split(" ")[0]


def test_latency_is_drawn_as_distributions_with_fsync_apart(runs):
    [view] = build_views(runs["fio"])
    assert view.kind == OTHER
    fig = latency_chart(view)
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["read latency", "write latency", "fsync latency"]  # one panel per call, fsync apart
    for trace in fig.data:
        row = next(r for r in view.rows if r.cell.config.name == trace.name)
        # a percentile curve rises (fio's percentiles are binned, so p99 can sit a hair above the exact max)
        assert all(b >= a * 0.98 for a, b in zip(trace.y, trace.y[1:])), trace.y
        prefix = {"x": "read", "x2": "write", "x3": "sync"}[trace.xaxis]
        assert trace.y[0] == pytest.approx(row.metric(f"{prefix}_p50").summary.median * 1000)
    kinds = [k for k, _ in charts_for(runs["fio"], view)]
    assert "safety" not in kinds and "phases" not in kinds and "latency" in kinds


def test_json_has_the_log_interval_df_figures_and_the_recommendation(runs):
    from pickfs.report.json_export import run_to_dict

    doc = run_to_dict(runs["trees"][0])
    for cell in doc["cells"]:
        lo, gm, hi = (cell["log_interval"][k] for k in ("low", "geometric_mean", "high"))
        assert 0 < lo < gm < hi
        assert 0 < cell["free_bytes"] < cell["filesystem_size_bytes"]
        assert cell["workload_kind"] == FILE_TREE
    assert sum(c["recommended"] for c in doc["cells"]) == 1


def test_default_job_ratio_chart_is_not_flattened_by_tmpfs(runs):
    record = next(r for r in runs["all"] if len(r.plan["configs"]) == 12)
    [view] = build_views(record)
    main = forest_chart(view)
    speeds = list(main.data[0].x)
    assert len(speeds) == 11  # every disk configuration, tmpfs apart
    tmpfs = next(r for r in view.rows if r.cell.config.name == "tmpfs")
    assert tmpfs.comparison.ratio > 3 * max(speeds)  # it would have set the scale
    _, hi = main.layout.xaxis.range
    assert 10 ** hi < tmpfs.comparison.ratio  # and does not


def _table_lines(text: str, names: list[str]) -> list[str]:
    return [line for line in text.splitlines() if line.split() and line.lstrip("★ ").split()[0] in names]


@pytest.mark.parametrize("width", [80, 120])
def test_every_stored_run_fits_the_terminal_with_the_answer_first(runs, width):
    """At 80 and 120 columns: no line wider than the terminal, the answer within the first 25 lines, every
    configuration's name whole, each note once and on one line, no p-value cut, one central value."""
    for record in runs["all"]:
        text = terminal(record, width=width)
        lines = text.splitlines()
        assert max(len(line.rstrip()) for line in lines) <= width, record.id
        for view in build_views(record):
            if not view.measured:
                continue
            answer = next(i for i, x in enumerate(lines) if x.startswith(f"{view.label}: "))
            assert answer < 25, (record.id, width, answer)
            names = [r.cell.config.name for r in view.rows]
            rows = _table_lines(text, names)
            for name in names:  # each name whole, at the start of its row of the results table
                assert any(line.lstrip("★ ").split()[0] == name for line in rows), (name, width)
            assert "…" not in "".join(line.split()[0] for line in rows)
        assert "p=0.0…" not in text and "p=0.000" not in text
        assert "sanitized mean" not in text and "geo. mean" not in text  # the median only; the rest with --explain
        notes = [line for line in lines if re.match(r"^ ?\d+ \S", line)]
        assert len({n.split(" ", 2)[-1] for n in notes}) == len(notes)  # each note once
        cut = [line for line in lines if "…" in line and line not in notes]
        assert cut == [], (record.id, width, cut)  # only a note is cut to its line (whole with --explain)


def test_wider_terminals_get_more_columns(runs):
    record = next(r for r in runs["all"] if len(r.plan["configs"]) == 12)
    head = {w: next(x for x in terminal(record, width=w).splitlines() if x.startswith("configuration"))
            for w in (80, 120)}
    assert "p99" not in head[80].split() or "slices" not in head[80].split()
    assert {"p99", "slices"} <= set(head[120].split())
    assert len(terminal(record, width=80).splitlines()) < 100


def test_notes_sit_under_the_table_once_and_whole_with_explain(runs):
    from pickfs.report.table import build_table

    for record in runs["all"]:
        for view in build_views(record):
            if not view.measured:
                continue
            table = build_table(view)
            texts = [n.text for n in table.notes]
            assert len(texts) == len(set(texts))
            for r in view.rows:  # every note of every row is among them, and the row points at it
                row = next(x for x in table.rows if x.config == r.cell.config.name)
                for note in r.notes:
                    assert texts.index(note) + 1 in row.notes


def test_one_table_model_gives_every_format_the_same_columns(runs):
    import csv as csv_mod
    import io

    from pickfs.report.csv_export import render_csv, render_table_csv
    from pickfs.report.json_export import run_to_dict
    from pickfs.report.table import build_table

    record = runs["db"]
    doc = run_to_dict(record)
    md = html.unescape(render_markdown(record).replace("\\", ""))  # "p<0.001" is escaped as Markdown text
    page = render_html(record)
    for view, jt in zip([v for v in build_views(record) if v.measured], doc["tables"]):
        table = build_table(view)
        heads = [c.head for c in table.columns]
        assert [c["heading"] for c in jt["columns"]] == heads
        assert "| " + " | ".join(heads) + " |" in md
        assert "".join(f"<th>{h}</th>" for h in heads).replace("[", "[") in page.replace("&#x27;", "'")
        assert "p99" in heads and table.counted == "slices" and "slices" in heads
        assert set(jt["answer"]) >= {"text", "configuration", "reason", "decided"}
        assert jt["answer"]["configuration"] == recommended(view)
        for row in table.rows:
            for key, cell in row.cells.items():
                assert cell in md or cell == "", (key, cell)
    table_rows = list(csv_mod.DictReader(io.StringIO(render_table_csv(record))))
    measured_views = [v for v in build_views(record) if v.measured]
    assert len(table_rows) == sum(len(v.rows) for v in measured_views)
    for view in measured_views:
        table = build_table(view)
        for row in table.rows:
            [line] = [x for x in table_rows if x["workload"] == view.label and x["configuration"] == row.config]
            assert {c.key: line[c.key] for c in table.columns} == {c.key: row.cells[c.key] for c in table.columns}
            assert line["recommended"] == str(int(row.recommended))
    rows = list(csv_mod.DictReader(io.StringIO(render_csv(record))))
    measured = [r for r in rows if r["phase"] == "measured"]
    assert {r["block"] for r in measured} == {"0", "1"} and all(r["round"] != "" for r in measured)
    keys = [(r["config"], r["workload"], r["block"], r["round"]) for r in measured]
    assert len(keys) == len(set(keys))  # no two slices look alike


def test_the_html_names_the_machine_and_the_site_index_each_runs_answer(runs):
    from pickfs.report.html import machine

    record = runs["db"]
    page = render_html(record)
    words = machine(record)
    assert record.host["hostname"] in words and record.host["cpu_model"] in words and "disk" in words
    assert f"Machine: {words}" in page.replace("&#x27;", "'")
    index = build_site(runs["all"])["index.html"]
    for rec in runs["all"]:
        for view in build_views(rec):
            if view.measured:
                chosen = recommended(view)
                assert f"{view.label}: {chosen or 'none'}" in index


def test_report_with_a_file_export_prints_no_table_and_quiet_prints_one_line(runs, tmp_path):
    env = {**os.environ, "PICKFS_WORKDIR": str(tmp_path / "w"), "COLUMNS": "80"}
    out = tmp_path / "run.json"
    r = subprocess.run([sys.executable, "-m", "pickfs", "report", runs["db"].id, "--json", str(out), "--results",
                        str(runs["path"])], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and out.exists()
    q = subprocess.run([sys.executable, "-m", "pickfs", "report", runs["db"].id, "--quiet", "--results",
                        str(runs["path"])], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert q.returncode == 0, q.stderr
    views = [v for v in build_views(runs["db"]) if v.measured]
    assert q.stdout.splitlines() == [f"{v.label}: {recommended(v) or 'none'}" for v in views]
    piped = subprocess.run([sys.executable, "-m", "pickfs", "report", runs["db"].id, "--results", str(runs["path"])],
                           capture_output=True, text=True, env=env, timeout=120, check=False)
    assert max(len(line) for line in piped.stdout.splitlines()) <= 80  # COLUMNS honoured when piped


def test_safety_legend_follows_each_risks_own_words(runs):
    from pickfs.report.charts import SAFETY_LEVELS, safety_level

    record = next(r for r in runs["all"] if len(r.plan["configs"]) == 12)
    [view] = build_views(record)
    level = {r.cell.config.name: safety_level(r) for r in view.rows}
    assert level["ext4-nobarrier"] == SAFETY_LEVELS[1]  # the disk's cache: acknowledged commits lost
    assert level["ext4-writeback"] == level["ext2"] == SAFETY_LEVELS[2]  # stale blocks, a full fsck: not commits
    assert level["ext4"] not in SAFETY_LEVELS[:3]
    fig = safety_chart(view)
    assert "tmpfs" not in {y.split()[0] for t in fig.data for y in t.y}


def test_log_axes_label_every_tick_in_full_and_hold_every_interval(runs):
    from pickfs.report.charts import over_time_chart, value_ticks

    ticks = value_ticks([900, 30_000])
    assert ticks["ticktext"] == ["1k", "2k", "5k", "10k", "20k"] and ticks["tickvals"] == sorted(ticks["tickvals"])
    record = next(r for r in runs["all"] if len(r.plan["configs"]) == 12)
    [view] = build_views(record)
    fig = forest_chart(view)
    lo, hi = (10 ** x for x in fig.layout.xaxis.range)
    [trace] = fig.data
    xs = list(trace.x)
    highs = [x + e for x, e in zip(xs, trace.error_x.array)]
    lows = [x - e for x, e in zip(xs, trace.error_x.arrayminus)]
    assert lo <= min(lows) and max(highs) <= hi  # the range holds every interval
    ticks = list(fig.layout.xaxis.tickvals)
    assert max(ticks) >= max(xs) / 1.5 and min(ticks) <= min(xs) * 1.5  # and the labels reach them
    small = over_time_chart(view)
    panels = {t.xaxis for t in small.data}
    assert len(panels) == len([r for r in view.rows if r.observations])  # small multiples, one per configuration
    assert all(ax.ticktext is None or all(str(x)[-1] in "0123456789kMG" for x in ax.ticktext)
               for ax in (small.layout[k] for k in small.layout if k.startswith("yaxis")))


def test_the_answer_never_contradicts_the_table(runs):
    """A configuration the table calls significantly faster than the baseline is not 'tied' with it, and one it
    calls significantly slower does not lead (a stored tree run once said 'xfs, ext4 are tied; use ext4' beside
    'xfs 1.68x faster, p=0.015')."""
    checked = 0
    for record in runs["all"]:
        for view in build_views(record):
            if view.choice is None or view.baseline is None:
                continue
            leaders = {r.cell.config.name for r in view.choice.leaders}
            for row in view.rows:
                c = row.comparison
                if c is None or not c.significant or row.unsafe or row.cell.config.name == view.baseline:
                    continue
                faster = (c.ratio > 1) == row.primary.metric.higher_is_better
                loser = view.baseline if faster else row.cell.config.name
                assert loser not in leaders, (record.id, view.label, row.cell.config.name)
                checked += 1
    assert checked >= 1


def test_over_time_panels_do_not_share_one_axis_with_tmpfs(runs):
    """The default job's per-slice panels shared one log axis with tmpfs (11x the others): ext4's whole range
    filled 12% of its panel."""
    from pickfs.report.charts import over_time_chart

    record = next(r for r in runs["all"] if len(r.plan["configs"]) == 12)
    [view] = build_views(record)
    fig = over_time_chart(view)
    titles = [a.text for a in fig.layout.annotations]
    axis_of = {}
    for trace in fig.data:
        if trace.name:
            axis_of[trace.name] = "yaxis" + trace.yaxis.removeprefix("y")
    assert "tmpfs (own scale)" in titles and "ext4" in titles
    ext4 = next(t for t in fig.data if t.name == "ext4")
    lo, hi = fig.layout[axis_of["ext4"]].range
    span = math.log10(max(ext4.y)) - math.log10(min(ext4.y))
    every = [y for t in fig.data if t.name for y in t.y]
    one_axis = math.log10(max(every)) - math.log10(min(every))
    assert (hi - lo) < one_axis / 1.8, (hi - lo, one_axis)  # ext4's slices fill twice the share of their panel
    assert span / (hi - lo) > 0.15
    tlo, thi = fig.layout[axis_of["tmpfs"]].range
    tmpfs = next(t for t in fig.data if t.name == "tmpfs")
    assert tlo <= math.log10(min(tmpfs.y)) and math.log10(max(tmpfs.y)) <= thi  # and tmpfs's fit in its own


def test_a_configuration_keeps_its_colour_across_charts_and_never_wears_a_verdicts(runs):
    """A configuration drawn in the 'unsafe' orange or the 'faster' green in one chart read as a verdict in
    another; its colour also depended on each chart's own order of configurations."""
    from pickfs.report.charts import latency_chart, over_time_chart
    from pickfs.report.colours import MEANINGS, PALETTE

    assert not MEANINGS & set(PALETTE)
    seen: dict[str, set[str]] = {}
    for record in runs["all"]:
        for view in build_views(record):
            for chart in (over_time_chart(view), latency_chart(view)):
                for trace in chart.data if chart is not None else ():
                    if trace.name and trace.line and trace.line.color:
                        seen.setdefault(f"{record.id}/{view.label}/{trace.name}", set()).add(trace.line.color)
    assert seen and all(len(c) == 1 for c in seen.values()), {k: c for k, c in seen.items() if len(c) > 1}
    assert not MEANINGS & {c for cs in seen.values() for c in cs}
