"""A crash test starts and stops a server per state: the waits around the server's own start-up and stop are
woken by what they wait for, not by a tenth-of-a-second poll."""

import socket
import subprocess
import threading
import time

from pickfs.services.base import Waited, await_ready
from pickfs.services.mariadb import first_answer, not_answering_yet
from pickfs.services.postgresql import pidfile_ready
from pickfs.stack.cleanup import holding, wait_gone
from pickfs.stack.ledger import Ledger


def test_a_stopped_process_is_seen_gone_within_milliseconds(tmp_path):
    led = Ledger(tmp_path / "work" / "ledger")
    took = []
    for _ in range(5):
        with holding(led, "process", child_pid=0, match="sleep") as box:
            p = subprocess.Popen(["sleep", "300"])
            box[0] = led.update(box[0], child_pid=p.pid)
            t0 = time.monotonic()
        took.append(time.monotonic() - t0)
        assert p.poll() is not None
    # the stop was looked at every 100 ms: never under 0.1 s; woken by the exit, a few ms
    assert sorted(took)[2] < 0.05, took


def test_waiting_for_a_process_that_does_not_stop_times_out(tmp_path):
    p = subprocess.Popen(["sleep", "300"])
    try:
        t0 = time.monotonic()
        assert not wait_gone(p.pid, 0.2)
        assert 0.2 <= time.monotonic() - t0 < 1.5
    finally:
        p.kill()
        p.wait()


def test_a_server_ready_soon_is_seen_ready_soon():
    t_ready = time.monotonic() + 0.03
    t0 = time.monotonic()
    assert await_ready(lambda: time.monotonic() >= t_ready, lambda: False, 5) is Waited.READY
    assert time.monotonic() - t0 < 0.03 + 0.02


def test_a_server_that_exits_or_never_answers_is_told_apart():
    assert await_ready(lambda: False, lambda: True, 5) is Waited.EXITED
    t0 = time.monotonic()
    assert await_ready(lambda: False, lambda: False, 0.1) is Waited.TIMED_OUT
    assert time.monotonic() - t0 < 1


def test_postmaster_pid_file_says_ready_on_its_eighth_line():
    head = "123\n/data\n1700000000\n5432\n/sock\n\n  5432001  1\n"
    assert pidfile_ready(head + "ready   \n")
    assert not pidfile_ready(head + "starting\n")
    assert not pidfile_ready(head)
    assert not pidfile_ready("")


def test_mariadb_not_answering_yet_is_told_from_an_answer_with_an_error():
    assert not_answering_yet(2003)  # no connection (its socket not listening yet)
    assert not_answering_yet(2013)  # connection lost (a server that exits as it is asked)
    assert not_answering_yet(1053)  # shutting down
    assert not not_answering_yet(1006)  # "Can't create database": it answered, with an error
    assert not not_answering_yet(1045)  # access denied
    assert not not_answering_yet(0)


def test_mariadb_first_answer_is_none_while_nothing_listens_or_the_server_hangs_up(tmp_path):
    log = tmp_path / "mariadb.log"
    assert first_answer(tmp_path / "none.sock", log) is None  # no socket
    bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound.bind(str(tmp_path / "bound.sock"))  # bound, not listening: refused
    assert first_answer(tmp_path / "bound.sock", log) is None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        srv.bind(str(tmp_path / "hangs-up.sock"))
        srv.listen()

        def hang_up() -> None:
            conn, _ = srv.accept()
            conn.close()
        t = threading.Thread(target=hang_up)
        t.start()
        assert first_answer(tmp_path / "hangs-up.sock", log) is None  # accepted, then closed: lost
        t.join()
    bound.close()
