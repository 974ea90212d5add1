"""The controller's build of what the hosts install keeps everything it makes on its way inside its own cache
directory: killed midway (kill -9 of it and of the pip it runs), it leaves nothing in the shared temporary
directory."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

BUILD = "import sys; from pathlib import Path; from pickfs.fleet import package; package.build(Path(sys.argv[1]))"


def descendants(pid: int) -> list[tuple[int, str]]:
    out, parents = [], {pid}
    for _ in range(4):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                ppid = int(Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except (OSError, IndexError, ValueError):
                continue
            if ppid in parents and int(entry.name) not in parents:
                parents.add(int(entry.name))
                out.append((int(entry.name), cmd))
    return out


def test_a_build_killed_midway_leaves_nothing_in_the_temporary_directory(tmp_path: Path):
    tmp, cache = tmp_path / "tmp", tmp_path / "cache"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", BUILD, str(cache)], env={**os.environ, "TMPDIR": str(tmp)},
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 60 and not any(" pip " in cmd for _, cmd in descendants(proc.pid)):
        time.sleep(0.01)
    assert proc.poll() is None, "the build ended before pip ran"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert list(tmp.iterdir()) == []
