from pathlib import Path

import pytest

from pickfs.monitors.procfs import parse_cpu, parse_disk, parse_pid_io, parse_pid_stat, parse_psi

DATA = Path(__file__).parent.parent / "data"


def test_parse_disk_with_discard_and_flush_fields():
    text = ("   7       0 loop0 120 0 2400 10 340 5 8000 90 2 150 100 7 0 64 1 12 3\n"
            " 254       0 vda 1 2 3 4 5 6 7 8 0 9 10\n")
    d = parse_disk(text, "loop0")
    assert (d.reads, d.sectors_read, d.writes, d.sectors_written) == (120, 2400, 340, 8000)
    assert (d.in_flight, d.io_ticks_ms, d.queue_ms, d.discards, d.flushes) == (2, 150, 100, 7, 12)
    assert d.bytes_written == 8000 * 512
    old = parse_disk(text, "vda")  # an old kernel: no discard or flush fields
    assert old.writes == 5 and old.flushes == 0
    assert parse_disk(text, "sdz") is None


def test_parse_cpu():
    c = parse_cpu("cpu  100 5 50 800 40 1 4 0 0 0\ncpu0 50 2 25 400 20 0 2 0 0 0\n")
    assert (c.user, c.system, c.idle, c.iowait) == (100, 50, 800, 40) and c.total == 1000
    with pytest.raises(ValueError):
        parse_cpu("intr 1 2 3")


def test_parse_psi():
    text = ("some avg10=1.00 avg60=0.50 avg300=0.10 total=123456\n"
            "full avg10=0.50 avg60=0.20 avg300=0.05 total=65432\n")
    assert parse_psi(text) == (123456, 65432)


def test_parse_pid_io():
    io = parse_pid_io("rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 8192\n"
                      "cancelled_write_bytes: 0\n")
    assert io["wchar"] == 20 and io["write_bytes"] == 8192


def test_parse_pid_stat_with_spaces_and_parentheses_in_the_name():
    assert parse_pid_stat("412 (jbd2/loop0-8) D 2 0 0") == ("jbd2/loop0-8", "D")
    assert parse_pid_stat("9 (odd (name) x) S 2") == ("odd (name) x", "S")


def test_captured_proc_files():
    """Files captured on the development machine parse as they should."""
    assert parse_cpu((DATA / "proc-stat.txt").read_text()).total > 0
    assert parse_psi((DATA / "proc-pressure-io.txt").read_text())[0] > 0
    comm, _ = parse_pid_stat((DATA / "proc-pid-stat-jbd2.txt").read_text())
    assert comm.startswith("jbd2/")
