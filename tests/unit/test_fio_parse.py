"""fio job files and the parsers of fio's JSON (captured from real runs in tests/data)."""

import json
from pathlib import Path

import pytest

from pickfs.errors import PlanError
from pickfs.model import WorkloadSpec
from pickfs.workloads.fio import Fileio, Wal, fileio_metrics, fio_json, job_text, sync_count

DATA = Path(__file__).parent.parent / "data"


def spec(cls, **settings):
    return WorkloadSpec(cls.name, cls.name, tuple(sorted(cls.normalize(settings).items())))


def test_fileio_metrics_keep_read_write_and_sync_apart():
    raw = (DATA / "fio-fileio-run.json").read_text()
    m = Fileio.parse(raw)
    job = json.loads(raw)["fio"]["jobs"][0]
    assert m["iops"] == pytest.approx(job["read"]["iops"] + job["write"]["iops"])
    assert m["read_MBps"] == pytest.approx(job["read"]["bw_bytes"] / 1e6)
    assert m["read_p99"] == pytest.approx(job["read"]["clat_ns"]["percentile"]["99.000000"] / 1e9)
    assert m["write_p99"] == pytest.approx(job["write"]["clat_ns"]["percentile"]["99.000000"] / 1e9)
    assert m["sync_p99"] == pytest.approx(job["sync"]["lat_ns"]["percentile"]["99.000000"] / 1e9)
    assert m["syncs_per_s"] == pytest.approx(job["sync"]["lat_ns"]["N"] / (job["write"]["runtime"] / 1000))
    assert m["sync_max"] >= m["sync_p99"] >= m["sync_p50"] > 0


def test_sync_count_falls_back_to_the_latency_samples():
    # fio 3.33 leaves sync.total_ios at 0 in some jobs while lat_ns.N counts every call
    assert sync_count({"total_ios": 0, "lat_ns": {"N": 69823}}) == 69823
    assert sync_count({"total_ios": 12, "lat_ns": {"N": 12}}) == 12
    assert sync_count({}) == 0


def test_a_failed_fio_job_is_not_a_result():
    with pytest.raises(ValueError, match="error 22"):
        fileio_metrics({"jobs": [{"error": 22, "read": {}, "write": {}}]})
    with pytest.raises(ValueError):
        Fileio.parse(json.dumps({"tool": "something else"}))


def test_wal_reports_every_method_and_size_and_the_first_as_primary():
    raw = (DATA / "fio-wal-run.json").read_text()
    m = Wal.parse(raw)
    doc = json.loads(raw)
    assert len(doc["results"]) == 10
    for entry in doc["results"]:
        key = f"{entry['method']}_{entry['block_size'] // 1024}k"
        assert m[f"{key}_per_s"] == pytest.approx(entry["fio"]["jobs"][0]["write"]["iops"])
        assert m[f"{key}_p99"] > 0
    assert m["syncs_per_s"] == m["fdatasync_8k_per_s"]
    assert m["methods_refused"] == 0
    assert Wal.notes_from(raw) == []


def test_wal_names_a_refused_method():
    doc = json.loads((DATA / "fio-wal-run.json").read_text())
    doc["results"][4] = {"method": "o_direct_dsync", "block_size": 8192, "job": "",
                         "error": "fio exited 1: fio: looks like your file system does not support direct=1"}
    raw = json.dumps(doc)
    m = Wal.parse(raw)
    assert m["methods_refused"] == 1 and "o_direct_dsync_8k_per_s" not in m
    [note] = Wal.notes_from(raw)
    assert note.startswith("wal o_direct_dsync at 8kB refused") and "direct=1" in note


def test_job_text_drops_unset_options():
    text = job_text([("a", {"rw": "write", "iodepth": None, "bs": 4096})])
    assert text.splitlines() == ["[a]", "rw=write", "bs=4096"]
    assert fio_json("fio: note before the json\n{\"jobs\": []}") == {"jobs": []}


def test_fileio_jobs_lay_files_out_then_measure():
    s = spec(Fileio, size="64M", files=4, block_size="4K", read_share=0, fsync_every=1, sync="fdatasync",
             duration=1.5)
    layout = Fileio().layout_job(s, Path("/mnt/x"))
    assert "rw=write" in layout and "end_fsync=1" in layout and "fallocate=none" in layout
    job = Fileio().measured_job(s, Path("/mnt/x"))
    assert "rw=randwrite" in job and "fdatasync=1" in job and "rwmixread" not in job
    assert "runtime=1500ms" in job and "nrfiles=4" in job and "directory=/mnt/x" in job
    mixed = Fileio().measured_job(spec(Fileio, read_share=0.6, pattern="sequential"), Path("/mnt/x"))
    assert "rw=rw" in mixed and "rwmixread=60" in mixed and "fsync=100" in mixed


@pytest.mark.parametrize("settings, message", [
    ({"read_share": 1.5}, "read_share"),
    ({"sync": "msync"}, "sync"),
    ({"block_size": "1000"}, "multiple of 512"),
    ({"size": "4K", "files": 16}, "too small"),
    ({"files": 0}, "files"),
])
def test_fileio_refuses_bad_settings(settings, message):
    with pytest.raises(PlanError, match=message):
        Fileio.normalize(settings)


def test_wal_settings():
    s = Wal.normalize({"block_sizes": ["16K", "8K", "8K"], "methods": ["fsync"]})
    assert s["block_sizes"] == [16384, 8192] and s["methods"] == ["fsync"]
    with pytest.raises(PlanError, match="4K, 8K and 16K"):
        Wal.normalize({"block_sizes": ["1M"]})
    with pytest.raises(PlanError, match="msync"):
        Wal.normalize({"methods": ["msync"]})
    job = Wal().job(spec(Wal, layout="append"), Path("/mnt/x"), "o_direct_dsync", 8192)
    assert "direct=1" in job and "sync=dsync" in job and "file_append=1" in job
