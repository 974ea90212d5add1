"""Ctrl-C while Python shuts down after a command said its result: no traceback, the result's exit code."""

import subprocess
import sys

# pickfs (its argv[0] says so) runs a command; a thread it left holds Python's shutdown in threading._shutdown
# and sends SIGINT once the main thread waits there: the window where a Ctrl-C printed
# "Exception ignored in: <module 'threading'> ... KeyboardInterrupt".
SCRIPT = r'''
import os, signal, sys, threading, time
sys.argv[0] = "/usr/local/bin/pickfs"
from pickfs.cli.main import main

def ctrl_c_in_shutdown():
    while threading.main_thread().is_alive():
        time.sleep(0.005)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.5)

threading.Thread(target=ctrl_c_in_shutdown).start()
main(sys.argv[1:])
'''


def test_ctrl_c_while_python_shuts_down(tmp_path):
    r = subprocess.run([sys.executable, "-c", SCRIPT, "results", "--results", str(tmp_path / "none.db")],
                       capture_output=True, text=True, timeout=120)
    assert "Exception ignored" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.returncode == 2, r.stderr  # the command's own answer (no such results file), not the signal's
    assert "no results database" in r.stderr or "does not exist" in r.stderr, r.stderr

