"""Why did a crash state fail? Records a workload once, checks power-cut states of it, and for every state that
lost or broke something prints what its image held against the disk model: each unflushed write of its flush
epoch, how many of its units landed, which file (and which database page) it went to, and the verdict of the
same state with that one write landed whole and lost whole (so the write that decides is named), and the
database's own log of that recovery.

Runs on the real recorder, filesystems and servers (root; an integration run: under the itest lock):

    flock /tmp/pickfs-itest.lock .venv/bin/python benchmarks/crash_state_autopsy.py --fs ext4 \\
        --workload sysbench-oltp --states 60

ext2/3/4 only for the file names (debugfs reads the image); other filesystems print offsets.

InnoDB's doublewrite buffer against the disk model (ext2/3/4 only): `--doublewrite` holds every page the recording
wrote in place against the copies its doublewrite area held on stable storage, and checks the flush epochs of the
exposed writes with them torn; `--first-page-tears` tears one write of a tablespace's first page at a time and reads
the state's image (its page, its copy) before recovery:

    flock /tmp/pickfs-itest.lock .venv/bin/python benchmarks/crash_state_autopsy.py --fs ext4 \\
        --workload sysbench-oltp --first-page-tears --states 8 --seed 5
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

from pickfs.crash import log as wlog
from pickfs.crash.runner import (
    StateChecker,
    StateResult,
    check_state,
    check_states,
    checkers_for,
    copy_image,
    driver_for,
    recorded,
    workbenches,
    workers_for,
)
from pickfs.crash.states import DEFAULT_UNIT, CrashState, choose, epochs, generate, units_of
from pickfs.model import WorkloadSpec
from pickfs.plan import resolve_fs_name
from pickfs.safepaths import MARKER
from pickfs.stack.ledger import Ledger
from pickfs.workloads import workload_class

BLOCK = 4096


def debugfs(image: Path, request: str) -> str:
    proc = subprocess.run(["debugfs", "-R", request, str(image)], capture_output=True, text=True)
    return proc.stdout


def owners(image: Path, blocks: list[int]) -> dict[int, str]:
    """Block -> the path of the file holding it ('' when none: metadata, the journal, free)."""
    inode_of: dict[int, int] = {}
    for line in debugfs(image, "icheck " + " ".join(map(str, blocks))).splitlines()[1:]:
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
            inode_of[int(parts[0])] = int(parts[1])
    inodes = sorted(set(inode_of.values()))
    names: dict[int, str] = {8: "<the journal>"}
    if inodes:
        for line in debugfs(image, "ncheck " + " ".join(map(str, inodes))).splitlines()[1:]:
            parts = line.split(None, 1)
            if len(parts) == 2 and parts[0].isdigit():
                names[int(parts[0])] = parts[1].strip()
    return {b: (names.get(inode_of[b], f"inode {inode_of[b]}") if b in inode_of else "") for b in blocks}


def logical(image: Path, path: str, block: int) -> int | None:
    """The file block that physical `block` is, from the file's block list."""
    listed = debugfs(image, f"blocks {path}").split()
    for k, b in enumerate(listed):
        if b.isdigit() and int(b) == block:
            return k
    return None


def verdict(r: StateResult) -> str:
    if not r.mounted:
        return "would not mount"
    if not r.db_opened:
        return f"database would not open ({r.problem[:160]})"
    if r.lost:
        return f"lost {r.lost} of {r.acked_before} ({r.problem[:160]})"
    if r.consistent is False:
        return f"inconsistent ({r.problem[:160]})"
    return "all present, consistent"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fs", default="ext4")
    p.add_argument("--workload", default="sysbench-oltp")
    p.add_argument("--set", action="append", default=[], dest="sets")
    p.add_argument("--states", type=int, default=60)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--recovery", type=float, default=0.0, help="share of states with a second power cut")
    p.add_argument("--size", type=int, default=512, help="image MiB")
    p.add_argument("--keep", default="/var/tmp/pickfs-autopsy")
    p.add_argument("--variants", type=int, default=3, help="failing states taken apart, at most")
    p.add_argument("--checkpoints", action="store_true",
                   help="only list the flush epochs in which InnoDB's checkpoint block and a page of a data file "
                        "were both written")
    p.add_argument("--least", type=int, default=16384, help="--torn-epochs: epochs with a write of this many bytes")
    p.add_argument("--torn-epochs", action="store_true",
                   help="instead of the crash test's states: one per flush epoch holding a multi-unit write, cut "
                        "just before its flush, every multi-unit write of it torn")
    p.add_argument("--doublewrite", action="store_true",
                   help="instead: every page written in place during the recording, held against the copies the "
                        "doublewrite area held on stable storage; the pages written over an older version without one; "
                        "then up to --states of the flush epochs holding such a page checked, cut before their flush "
                        "with every write landed but those pages torn")
    p.add_argument("--first-page-tears", action="store_true",
                   help="instead: up to --states writes of a tablespace's first page (over an older version, its copy "
                        "durable in the doublewrite area), each in a state cut before its epoch's flush with every "
                        "write landed but that one torn (its first 4 KiB landed), the copy looked up in the state's "
                        "image before recovery; then the same with the tablespace's page 3 torn instead")
    p.add_argument("--list-file", action="append", default=[],
                   help="--doublewrite: also list every page write to this data file (e.g. pickfs_commits.ibd)")
    p.add_argument("--first-pages", action="store_true",
                   help="instead: the flush epochs whose writes hold the first page (FSP header) of a tablespace, each "
                        "cut before its flush with every multi-unit write torn, and each one's recovery taken apart "
                        "(every write kept, then cut just after each checkpoint it wrote)")
    a = p.parse_args(argv)
    settings = dict(s.split("=", 1) for s in a.sets)
    cls = workload_class(a.workload)
    spec = WorkloadSpec(a.workload, "x", tuple(sorted(cls.normalize(settings).items())))
    config = resolve_fs_name(a.fs)
    keep = Path(a.keep) / uuid.uuid4().hex[:8]
    apart = Path(a.keep) / f"{keep.name}-recoveries"  # what a recovery taken apart leaves: images, its writes
    Path(a.keep).mkdir(mode=0o700, exist_ok=True)
    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="pickfs-autopsy-") as tmp:
        workdir = Path(tmp)
        workdir.chmod(0o755)  # a server's own user walks through it to its data directory
        (workdir / MARKER).touch(mode=0o600)
        ledger = Ledger(workdir / "ledger")
        driver = driver_for(spec, workdir)
        with recorded(config, spec, workdir, ledger, a.size * 1024**2, a.duration, a.seed, driver) as rec:
            records = rec.records
            if a.first_page_tears:
                first_page_tears(config, rec, ledger, driver, audited(rec, workdir), a.states, apart)
                return 0
            if a.doublewrite:
                found = doublewrite_audit(rec, workdir, a.list_file)
                if a.states:
                    check_exposed(config, rec, ledger, driver, found, a.states, keep)
                return 0
            if a.first_pages:
                with open(rec.log, "rb") as fh:
                    states = [st for st in torn_epochs(records, rec.first, rec.last, rec.t_end, a.seed, a.least)
                              if any(first_page(fh, records[i]) for i in range(st.durable, st.cut))][:a.states]
                print(f"{len(states)} flush epochs write a tablespace's first page", flush=True)
                for st in states[:a.variants]:
                    take_apart_recovery(config, rec, ledger, driver, st, None, apart, a.seed)
                return 0
            if a.torn_epochs:
                states = torn_epochs(records, rec.first, rec.last, rec.t_end, a.seed, a.least)[:a.states]
            else:
                states = generate(records, rec.t_start, rec.t_end, a.states, a.seed, DEFAULT_UNIT, rec.events,
                                  a.recovery)
            print(f"recorded {len(rec.acks)} acks, {rec.last - rec.first} records, {len(rec.events)} events; "
                  f"{len(states)} states", flush=True)
            if a.checkpoints:
                checkpoint_epochs(rec)
                return 0
            workers = workers_for(str(driver.backend), config.fstype)
            with workbenches(rec, ledger, workers, rewinds=False) as (benches, _), ExitStack() as stack:
                checkers = checkers_for(config, rec, ledger, driver, benches, stack, a.seed, DEFAULT_UNIT, keep, "s")
                results = list(check_states(checkers, states, [None] * len(states), threading.Event()))
            failed = [r for r in results if r.failed]
            print(f"{len(failed)} of {len(results)} states failed", flush=True)
            for r in results:
                st = states[r.index]
                print(f"  state {r.index}: {st.mode} {'(recovery crash) ' if st.recovery else ''}{st.why}; "
                      f"cut {st.cut}, durable {st.durable}, {st.units} units, {st.torn} torn: {verdict(r)}"
                      + (f"; {r.recovery}" if r.recovery else ""))
            pages: dict[int, list[PageWrite]] = {}  # record -> the pages it wrote in place, against the doublewrite area
            for w in (audited(rec, workdir) if failed and not a.torn_epochs else []):
                pages.setdefault(w.record, []).append(w)
            for r in failed[:a.variants]:
                # a state whose first recovery had every commit failed in its second power cut: taken apart as
                # such; one whose first recovery failed too failed at its first cut, taken apart as one
                if states[r.index].recovery and r.recovery.endswith("the first recovery: recovered"):
                    take_apart_recovery(config, rec, ledger, driver, states[r.index], r, apart, a.seed)
                else:
                    take_apart(config, rec, ledger, driver, states[r.index], r, workdir, pages)
    return 0


def checkpoint_epochs(rec) -> None:  # type: ignore[no-untyped-def]
    """The flush epochs holding a write of InnoDB's checkpoint blocks (ib_logfile0's 2nd and 3rd 4 KiB) and a write
    to a data file (.ibd, ibdata1): InnoDB must have made the page durable before it wrote the checkpoint."""
    records = rec.records
    listed = debugfs(rec.start_image, "blocks /pickfs-data/mysql/ib_logfile0").split()
    header = {int(b) for b in listed[1:3]}
    ends = [i for i in range(rec.first, rec.last) if records[i].kind == wlog.FLUSH] + [rec.last]
    start, found, older_pages = rec.first, 0, 0
    for end in ends:
        writes = [i for i in range(start, end) if records[i].kind == wlog.WRITE]
        ckpt = [i for i in writes if records[i].offset // BLOCK in header]
        if ckpt:
            others = [i for i in writes if i not in ckpt]
            names = owners(rec.start_image, sorted({records[i].offset // BLOCK for i in others})) if others else {}
            data = [i for i in others if names.get(records[i].offset // BLOCK, "").endswith((".ibd", "ibdata1"))]
            print(f"  epoch [{start}, {end}): checkpoint write {ckpt}, {len(others)} other writes, "
                  f"{len(data)} to data files")
            with open(rec.log, "rb") as fh:
                lsn = 0
                for i in ckpt:
                    fh.seek(records[i].data_pos + records[i].offset % BLOCK)
                    block = fh.read(16)
                    lsn = int.from_bytes(block[:8], "big")
                    print(f"    checkpoint record {i}: checkpoint LSN {lsn}, end LSN {int.from_bytes(block[8:16], 'big')}")
                for i in data:
                    fh.seek(records[i].data_pos)
                    head = fh.read(38)
                    page_lsn = int.from_bytes(head[16:24], "big")
                    older = page_lsn < lsn
                    older_pages += older
                    if older or i in data[:4]:
                        print(f"    page write {i}{' after' if i > ckpt[0] else ' before'} the checkpoint: "
                              f"{names[records[i].offset // BLOCK]} {records[i].length} B, page "
                              f"{int.from_bytes(head[4:8], 'big')} of space {int.from_bytes(head[34:38], 'big')}, "
                              f"FIL_PAGE_LSN {page_lsn}{' OLDER THAN THE CHECKPOINT' if older else ''}")
            found += bool(data)
        start = end + 1
    print(f"{found} epochs hold the checkpoint and a data page unflushed together; {older_pages} of those pages are "
          "older than that checkpoint")
    # every page written after a checkpoint whose changes are older than it (the checkpoint vouched for them)
    with open(rec.log, "rb") as fh:
        lsn, late = 0, 0
        for i in range(rec.first, rec.last):
            x = records[i]
            if x.kind != wlog.WRITE:
                continue
            if x.offset // BLOCK in header:
                fh.seek(x.data_pos + x.offset % BLOCK)
                lsn = max(lsn, int.from_bytes(fh.read(8), "big"))
            elif x.length == 16384 and x.offset % 16384 == 0 and lsn:
                fh.seek(x.data_pos)
                head = fh.read(38)
                page_lsn = int.from_bytes(head[16:24], "big")
                if 0 < page_lsn < lsn:
                    late += 1
                    if late <= 5:
                        print(f"    page write {i} after checkpoint LSN {lsn}: page {int.from_bytes(head[4:8], 'big')} of "
                              f"space {int.from_bytes(head[34:38], 'big')}, FIL_PAGE_LSN {page_lsn}")
    print(f"{late} page writes carry changes older than a checkpoint written before them")


def torn_epochs(records: list[wlog.Record], first: int, last: int, t_end: int, seed: int,
                least: int = 0) -> list[CrashState]:
    """A state per flush epoch that holds a write of more than one unit: cut just before its flush, each such write
    torn (some of its units landed, some not), the others landed; in the order of their cuts."""
    rng = random.Random(seed)
    out: list[CrashState] = []
    for e in sorted(epochs(records, first, last, DEFAULT_UNIT), key=lambda e: e.start):
        if not any(len(units_of(records, i, DEFAULT_UNIT)) > 1 and records[i].length >= least
                   for i in range(e.start, e.cut) if records[i].changes):
            continue
        kept, dropped, units, torn = choose(records, e.start, e.cut, "torn writes", DEFAULT_UNIT, rng)
        t_ns = min(records[e.cut].t_ns - 1, t_end) if e.cut < len(records) else t_end
        out.append(CrashState(len(out), e.cut, e.start, kept, dropped, t_ns, "torn writes", units, torn,
                              why="every epoch with a multi-unit write, torn"))
    return out


def take_apart(config, rec, ledger, driver, st: CrashState, r: StateResult, workdir: Path,  # type: ignore[no-untyped-def]
               pages: dict[int, list[PageWrite]] | None = None) -> None:
    records = rec.records
    print(f"\n== state {st.index}: {verdict(r)}; kept as {r.kept_as}")
    image = Path(r.kept_as) if r.kept_as else None
    if image is not None:
        text = debugfs(image, "cat /pickfs-data/mariadb.log")
        tail = [line for line in text.splitlines() if "InnoDB" in line or "ERROR" in line or "corrupt" in line]
        print("  the database's log of that recovery:")
        for line in tail[-40:]:
            print(f"    {line}")
    changes = [i for i in range(st.durable, st.cut) if records[i].changes]
    landed: dict[int, int] = {}
    for piece in st.kept:
        landed[piece.record] = landed.get(piece.record, 0) + 1
    blocks = sorted({b for i in changes for b in range(records[i].offset // BLOCK,
                                                         (records[i].offset + max(1, records[i].length) - 1) // BLOCK + 1)})
    names = owners(image, blocks) if image is not None else {}
    print(f"  the epoch's unflushed writes ({len(changes)}), flushes before: "
          f"{sum(1 for x in records[rec.first:st.durable] if x.kind == wlog.FLUSH)}")
    suspects, checkpoints = [], []
    for i in changes:
        x = records[i]
        n = len(units_of(records, i, DEFAULT_UNIT))
        got = landed.get(i, 0)
        b0 = x.offset // BLOCK
        where = names.get(b0, "")
        page = ""
        if where and not where.startswith("<"):
            lb = logical(image, where, b0) if image is not None else None  # type: ignore[arg-type]
            if lb is not None:
                page = f" file block {lb} (16K page {lb * BLOCK // 16384})"
                if where.endswith("ib_logfile0") and lb in LOG_CHECKPOINTS:
                    checkpoints.append(i)
                    page += " (a CHECKPOINT block)"
        if 0 < got < n:
            suspects.append(i)
        if 0 < got < n or len(suspects) < 40:
            print(f"    record {i}: {x.kind.decode()} {x.length} B at block {b0}: {where or '(no file)'}{page}; "
                  f"{got} of {n} units landed{' TORN' if 0 < got < n else ''}")
            for w in (pages or {}).get(i, []):
                print(f"      {said(w)}")
    bisect(config, rec, ledger, driver, st, suspects, checkpoints)


def bisect(config, rec, ledger, driver, st: CrashState, suspects: list[int],  # type: ignore[no-untyped-def]
           checkpoints: Sequence[int] = ()) -> None:
    """Which torn write decides: bisected (the others landed whole), then that one lost whole; and the same state with
    the epoch's unflushed checkpoint writes lost."""
    with workbenches(rec, ledger, 1, rewinds=False) as (benches, _):
        checker = StateChecker(config, benches[0], rec.base, ledger, driver, rec.acks, 1, DEFAULT_UNIT, None,
                               "variant", rec.t_start, rec.events)
        count = [0]

        def check(what: str, kept: tuple[wlog.Piece, ...]) -> bool:
            count[0] += 1
            out = checker.check(replace(st, kept=kept, recovery=False, index=10_000 + count[0]), None)
            print(f"  variant: {what}: {verdict(out)}", flush=True)
            return out.failed

        def torn_only(chosen: list[int]) -> tuple[wlog.Piece, ...]:
            """The state's pieces, but every torn write not in `chosen` landed whole."""
            whole = set(suspects) - set(chosen)
            kept = [p for p in st.kept if p.record not in whole] + [wlog.Piece(i) for i in whole]
            return tuple(sorted(kept, key=lambda p: (p.record, p.skip)))

        check("the same state again", st.kept)
        if checkpoints:
            check(f"the epoch's checkpoint writes (records {', '.join(map(str, checkpoints))}) lost, the rest as in the "
                  "state", tuple(p for p in st.kept if p.record not in checkpoints))
        if not suspects:
            return
        check("every torn write landed whole", torn_only([]))
        left = list(suspects)
        while len(left) > 1:
            half = left[:len(left) // 2]
            if check(f"only {len(half)} torn writes torn (records {half[0]}-{half[-1]})", torn_only(half)):
                left = half
            elif check(f"only {len(left) - len(half)} torn writes torn (records {left[len(half)]}-{left[-1]})",
                       torn_only(left[len(half):])):
                left = left[len(half):]
            else:
                print(f"  no single half decides: it takes writes of both ({len(left)} left)")
                break
        if len(left) == 1:
            i = left[0]
            print(f"  the deciding torn write: record {i}")
            check(f"record {i} lost whole (the others landed whole)",
                  tuple(p for p in torn_only([]) if p.record != i))



# --- a power cut during recovery, taken apart: what the first recovery wrote, in order, and which cut loses ---
DATA = "/pickfs-data/mysql"
PAGE = 16384
DOUBLEWRITE = range(64 * PAGE // BLOCK, 192 * PAGE // BLOCK)  # ibdata1's doublewrite blocks (its pages 64-191)


LEAF = re.compile(r"\s*(?P<level>\d+)/\s*(?P<depth>\d+)\s+\d+/\s*\d+\s+(?P<first>\d+)\s*-\s*(?P<last>\d+)\s+"
                  r"(?P<disk>\d+)")


def block_map(image: Path) -> dict[int, tuple[str, int]]:
    """Physical block -> (file, its block in the file) for InnoDB's files and the server's log (debugfs)."""
    names = ["ib_logfile0", "ibdata1"] + [f"{schema}/{n}" for schema in ("sbtest", "mysql")
                                           for n in debugfs(image, f"ls {DATA}/{schema}").split() if n.endswith(".ibd")]
    out: dict[int, tuple[str, int]] = {}
    for name, path in [*((n, f"{DATA}/{n}") for n in names), ("mariadb.log", "/pickfs-data/mariadb.log")]:
        for line in debugfs(image, f"ex {path}").splitlines():  # the leaf extents: file blocks -> disk blocks
            m = LEAF.match(line)
            if m and m["level"] == m["depth"]:
                for k in range(int(m["first"]), int(m["last"]) + 1):
                    out[int(m["disk"]) + k - int(m["first"])] = (name, k)
    for b in (x for x in debugfs(image, "blocks <8>").split() if x.isdigit()):
        out[int(b)] = ("<the journal>", 0)
    return out


def torn_pages(image: Path) -> list[str]:
    """The InnoDB pages of the image whose header and trailer disagree (full_crc32: the low 32 bits of
    FIL_PAGE_LSN are repeated 8 bytes before the page's end): pages torn between two versions."""
    out = []
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        for name in ["ibdata1"] + [f"sbtest/{n}" for n in debugfs(image, f"ls {DATA}/sbtest").split()
                                   if n.endswith(".ibd")]:
            dump = Path(tmp) / "file"
            subprocess.run(["debugfs", "-R", f"dump {DATA}/{name} {dump}", str(image)], capture_output=True)
            data = dump.read_bytes() if dump.exists() else b""
            for k in range(len(data) // PAGE):
                page = data[k * PAGE:(k + 1) * PAGE]
                if any(page) and page[20:24] != page[-8:-4]:
                    out.append(f"{name} page {k} (header LSN {int.from_bytes(page[16:24], 'big')}, trailer's low "
                               f"32 bits {int.from_bytes(page[-8:-4], 'big')})")
    return out


def timeline(image: Path, log: Path, records: list[wlog.Record]) -> list[int]:
    """Print what the recovery wrote, in order (checkpoints, doublewrite batches, data pages, flushes); the indexes
    of its checkpoint writes."""
    where = block_map(image)
    checkpoints: list[int] = []
    quiet: dict[str, int] = {}
    lsn = 0  # the newest checkpoint written so far

    def say(text: str) -> None:
        if quiet:
            print("      (" + ", ".join(f"{n} {what}" for what, n in quiet.items()) + ")")
            quiet.clear()
        print(f"    {text}")

    with open(log, "rb") as fh:
        for i, x in enumerate(records):
            if x.kind == wlog.FLUSH:
                quiet["flushes"] = quiet.get("flushes", 0) + 1
                continue
            if x.kind != wlog.WRITE:
                quiet[x.kind.decode()] = quiet.get(x.kind.decode(), 0) + 1
                continue
            name, fb = where.get(x.offset // BLOCK, ("", 0))
            fh.seek(x.data_pos)
            data = fh.read(x.length)
            if name == "ib_logfile0" and fb in (1, 2):
                checkpoints.append(i)
                at = x.offset % BLOCK
                lsn = max(lsn, int.from_bytes(data[at:at + 8], "big"))
                say(f"record {i}: CHECKPOINT block {fb}: LSN {int.from_bytes(data[at:at + 8], 'big')}")
            elif name == "ibdata1" and fb in DOUBLEWRITE:
                pages = [data[k:k + PAGE] for k in range(0, len(data) - PAGE + 1, PAGE)]
                others = [f"space {int.from_bytes(p[34:38], 'big')} page {int.from_bytes(p[4:8], 'big')}"
                          for p in pages if int.from_bytes(p[34:38], "big")]
                say(f"record {i}: doublewrite {x.length} B ({len(pages)} pages)"
                    + (f", of other spaces: {', '.join(others[:8])}" if others else ""))
            elif name == "ibdata1" or name.endswith(".ibd"):
                pages = [data[k:k + PAGE] for k in range(0, len(data) - PAGE + 1, PAGE)]
                heads = [f"page {int.from_bytes(p[4:8], 'big')} LSN {int.from_bytes(p[16:24], 'big')}"
                         + (" OLDER THAN THE CHECKPOINT WRITTEN BEFORE IT" if 0 < int.from_bytes(p[16:24], "big") < lsn
                            else "") for p in pages]
                say(f"record {i}: {name} block {fb}, {x.length} B: {', '.join(heads[:6]) or 'part of a page'}")
            elif name == "ib_logfile0":
                quiet["log writes"] = quiet.get("log writes", 0) + 1
            else:
                what = f"writes to {name}" if name else "other writes (metadata)"
                quiet[what] = quiet.get(what, 0) + 1
        say(f"end: {len(records)} records")
    return checkpoints


def first_page(fh, x: wlog.Record) -> str:  # type: ignore[no-untyped-def]
    """'space S' when the write holds page 0 (an FSP header page) of a tablespace other than the system one, else ''."""
    if x.kind != wlog.WRITE or x.length < PAGE:
        return ""
    fh.seek(x.data_pos)
    data = fh.read(x.length)
    for k in range(0, len(data) - PAGE + 1, PAGE):
        page = data[k:k + PAGE]
        space = int.from_bytes(page[34:38], "big")
        if space and int.from_bytes(page[4:8], "big") == 0 and int.from_bytes(page[24:26], "big") == 8:
            return f"space {space}"
    return ""


def take_apart_recovery(config, rec, ledger, driver, st: CrashState, r: StateResult | None,  # type: ignore[no-untyped-def]
                        workdir: Path, seed: int) -> None:
    """A failing state with a second power cut: its first recovery run again with every write kept, the pages torn
    before it and after it, what it wrote in order, and the recovery cut just after each checkpoint write it made
    (every write before it landed, none after: a state any disk allows) checked."""
    workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if r is None:
        print(f"\n== epoch [{st.durable}, {st.cut}): every multi-unit write torn; its recovery taken apart")
    else:
        print(f"\n== state {st.index} (a power cut during recovery): {verdict(r)}; {r.recovery}; kept as {r.kept_as}")
    if r is not None and r.kept_as:
        text = debugfs(Path(r.kept_as), "cat /pickfs-data/mariadb.log")
        print("  its last recovery's log:")
        for line in [x for x in text.splitlines() if "InnoDB" in x or "ERROR" in x][-12:]:
            print(f"    {line.strip(chr(0))}")
        print("  torn pages in the kept image:", "; ".join(torn_pages(Path(r.kept_as))) or "none")
    with workbenches(rec, ledger, 1, rewinds=False) as (benches, _), ExitStack() as stack:
        checker = checkers_for(config, rec, ledger, driver, benches, stack, seed, DEFAULT_UNIT, None, "recovery")[0]
        bench = benches[0]
        bench.prepare(st)
        before = workdir / f"state-{st.index}-before.img"
        copy_image(bench.served.backing, before)
        print("  torn pages in the state before recovery:", "; ".join(torn_pages(before)) or "none")
        first = check_state(config, bench.image, rec.base, ledger, driver, rec.acks, st, False, checker.standing,
                            checker.station)
        found = bench.checked()
        saved = workdir / f"state-{st.index}-recovery.log"
        shutil.copyfile(bench.served.log, saved)
        after = workdir / f"state-{st.index}-after.img"
        copy_image(bench.served.backing, after)
        print(f"  its first recovery, run again with every write kept: {verdict(first)}")
        text = debugfs(after, "cat /pickfs-data/mariadb.log")
        starts = [k for k, line in enumerate(text.splitlines()) if "Starting MariaDB" in line]
        print("  that recovery's log:")
        for line in text.splitlines()[starts[-1] if starts else 0:]:
            if "InnoDB" in line or "ERROR" in line or "Warning" in line:
                print(f"    {line.strip(chr(0))}")
        print("  torn pages after it:", "; ".join(torn_pages(after)) or "none")
        print(f"  what it wrote ({len(found)} records), in order:")
        checkpoints = timeline(after, saved, found)
        for k in checkpoints[:6]:
            bench.reset(forget_log=False)
            bench.add(bench.log, bench.records, st.kept)
            bench.add(saved, found, [wlog.Piece(i) for i in range(k + 1)])
            os.truncate(bench.served.log, 0)
            cut = replace(st, recovery=False, index=20_000 + k)
            out = check_state(config, bench.image, rec.base, ledger, driver, rec.acks, cut, True, checker.standing,
                              checker.station)
            bench.checked()
            print(f"  power cut just after record {k} (a checkpoint) of that recovery, all before it landed, nothing "
                  f"after: {verdict(out)}", flush=True)
            if out.failed:
                kept = workdir / f"state-{st.index}-cut-{k}.img"
                copy_image(bench.served.backing, kept)
                print(f"    torn pages: {'; '.join(torn_pages(kept)) or 'none'}; kept as {kept}")
        bench.reset()


# --- every page InnoDB wrote in place, held against its doublewrite area as the disk model leaves it ---
LOG_CHECKPOINTS = (1, 2)  # ib_logfile0's blocks holding the two checkpoint records (8 bytes LSN first)
PAGE_TYPES = {0: "allocated", 2: "undo log", 3: "inode", 4: "ibuf free list", 5: "ibuf bitmap", 6: "system",
              7: "transaction system", 8: "FSP header", 9: "extent descriptor", 10: "BLOB", 17855: "index",
              18: "instant", 17854: "R-tree"}


@dataclass(frozen=True)
class PageWrite:
    """A page of a data file written in place during the recording, and what of it the doublewrite area held."""

    record: int  # the write (index in the recording)
    epoch: int  # flushes before it in the recording's window
    file: str
    page: int  # its page number in the file
    space: int  # the header's space id and page number (the page number may differ from `page`: not a page image)
    page_no: int
    lsn: int  # FIL_PAGE_LSN
    kind: int  # FIL_PAGE_TYPE
    checkpoint: int  # the newest checkpoint LSN on stable storage when it was written
    # "its copy durable", "an older copy durable", "its copy not flushed yet", "no copy", or "older than the checkpoint
    # on disk" (a checkpoint written and flushed before the page vouches for its changes)
    copy: str
    new: bool  # the page held only zeros before it (a page written for the first time)
    copy_overwritten: bool  # the doublewrite slot holding its durable copy was written again before the page's flush
    old_lsn: int = 0  # FIL_PAGE_LSN of the version it overwrote
    # the newest checkpoint LSN past the page's own that was written in the same flush epoch (0: none): a disk may keep
    # that checkpoint and tear the page, and recovery then neither replays the page's changes nor takes a copy older
    # than the checkpoint from the doublewrite area
    vouched_by: int = 0
    vouched_first: bool = False  # that checkpoint was written before the page

    @property
    def image(self) -> bool:
        """Whether what was written is a page image of this page (else zeros: a freed page, or part of a page)."""
        return self.page_no == self.page and (self.lsn != 0 or self.space != 0)

    @property
    def type_name(self) -> str:
        return PAGE_TYPES.get(self.kind, f"type {self.kind}")


class DiskView:
    """The image as the window's writes leave it, block by block: the start image under the blocks written since."""

    def __init__(self, where: dict[int, tuple[str, int]], start: Callable[[int], bytes]) -> None:
        self.where, self.start = where, start
        self.block_of = {v: b for b, v in where.items()}
        self.over: dict[int, bytes] = {}

    def read(self, b: int) -> bytes:
        return self.over[b] if b in self.over else self.start(b)

    def write(self, offset: int, body: bytes) -> None:
        for b in range(offset // BLOCK, (offset + len(body) - 1) // BLOCK + 1):
            lo, hi = max(offset, b * BLOCK), min(offset + len(body), (b + 1) * BLOCK)
            part = body[lo - offset:hi - offset]
            if hi - lo < BLOCK:
                old = self.read(b)
                part = old[:lo - b * BLOCK] + part + old[hi - b * BLOCK:]
            self.over[b] = part

    def page(self, name: str, k: int) -> bytes | None:
        """Page k of file `name` (None: a block of it not in the map)."""
        per = PAGE // BLOCK
        blocks = [self.block_of.get((name, k * per + j)) for j in range(per)]
        return None if None in blocks else b"".join(self.read(b) for b in blocks if b is not None)

    def slot(self, s: int) -> bytes | None:
        """Slot s of the doublewrite area (its s-th page)."""
        return self.page("ibdata1", DOUBLEWRITE.start // (PAGE // BLOCK) + s)

    def checkpoint(self) -> int:
        """The newest checkpoint LSN of the redo log's two checkpoint blocks."""
        blocks = [self.block_of.get(("ib_logfile0", k)) for k in LOG_CHECKPOINTS]
        return max((int.from_bytes(self.read(b)[:8], "big") for b in blocks if b is not None), default=0)


def header(page: bytes) -> tuple[int, int, int]:
    """(space id, page number, FIL_PAGE_LSN) of an InnoDB page."""
    return int.from_bytes(page[34:38], "big"), int.from_bytes(page[4:8], "big"), int.from_bytes(page[16:24], "big")


def usable_copy(durable: dict[int, bytes], space: int, page_no: int, lsn: int, checkpoint: int) -> int:
    """The doublewrite slot holding the newest copy of the page that recovery can use (its LSN between the
    checkpoint and the page's own); -1: none."""
    fits = [s for s, c in durable.items() if header(c)[:2] == (space, page_no) and checkpoint <= header(c)[2] <= lsn]
    return max(fits, key=lambda s: header(durable[s])[2], default=-1)


def copy_said(page: bytes, durable: dict[int, bytes], now: dict[int, bytes], checkpoint: int) -> str:
    """What the doublewrite area held of a page being written in place."""
    if header(page)[2] < checkpoint:
        return "older than the checkpoint on disk"  # recovery neither replays it nor takes a copy of it
    if page in durable.values():
        return "its copy durable"
    if usable_copy(durable, *header(page), checkpoint) >= 0:
        return "an older copy durable"
    return "its copy not flushed yet" if page in now.values() else "no copy"


def data_pages(places: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The (file, page) of a data file that blocks (file, block) fall in: .ibd files, ibdata1 outside its doublewrite
    area."""
    return sorted({(name, fb // (PAGE // BLOCK)) for name, fb in places
                   if name.endswith(".ibd") or (name == "ibdata1" and fb not in DOUBLEWRITE)})


def page_writes(records: list[wlog.Record], first: int, last: int, data: Callable[[int], bytes],
                where: dict[int, tuple[str, int]], start: Callable[[int], bytes]) -> list[PageWrite]:
    """Every page of a data file (an .ibd file, or ibdata1 outside its doublewrite area) the writes of the window
    [first, last) changed, each with the copy of it the doublewrite area held on stable storage, under the disk
    model (a write is durable at the next flush) (pure).

    `data(i)`: record i's bytes; `where`: physical 4 KiB block -> (file, its block in the file); `start(b)`: block b
    of the image as the window began. A torn write of a page is repaired by InnoDB from a copy in the doublewrite
    area only where one was durable (written, then flushed) before it, and stays there until the page itself is
    flushed; a page written without one relies on the redo log alone (InnoDB writes a page it initialised since it
    was last written, buf_page_t::REINIT, without the doublewrite buffer)."""
    disk = DiskView(where, start)
    now = {s: page for s in range(len(DOUBLEWRITE) // (PAGE // BLOCK)) if (page := disk.slot(s)) is not None}
    durable, checkpoint, epoch = dict(now), disk.checkpoint(), 0
    written: set[int] = set()  # doublewrite slots written since the last flush
    checkpoints: list[tuple[int, int]] = []  # this epoch's checkpoint writes: (record, checkpoint LSN)
    out: list[PageWrite] = []
    pending: list[PageWrite] = []  # this epoch's page writes

    def settle() -> list[PageWrite]:  # the epoch's page writes, with what the epoch's other writes did to them
        out = []
        for w in pending:
            past = [(r, lsn) for r, lsn in checkpoints if lsn > w.lsn]
            out.append(replace(w, copy_overwritten=usable_copy(durable, w.space, w.page_no, w.lsn, w.checkpoint)
                               in written, vouched_by=max((lsn for _, lsn in past), default=0),
                               vouched_first=any(r < w.record for r, _ in past)))
        return out

    for i in range(first, last):
        x = records[i]
        if x.kind == wlog.FLUSH:
            out += settle()
            pending, written, checkpoints = [], set(), []
            durable, checkpoint, epoch = dict(now), disk.checkpoint(), epoch + 1
        if x.kind != wlog.WRITE or not x.length:
            continue
        places = [where.get(b, ("", 0)) for b in range(x.offset // BLOCK, (x.offset + x.length - 1) // BLOCK + 1)]
        before = {p: disk.page(*p) for p in data_pages(places)}
        disk.write(x.offset, data(i))
        slots = {(fb - DOUBLEWRITE.start) // (PAGE // BLOCK) for name, fb in places
                 if name == "ibdata1" and fb in DOUBLEWRITE}
        written |= slots
        checkpoints += [(i, int.from_bytes(disk.read(b)[:8], "big")) for b, (name, fb) in
                        zip(range(x.offset // BLOCK, x.offset // BLOCK + len(places)), places, strict=True)
                        if name == "ib_logfile0" and fb in LOG_CHECKPOINTS]
        now.update({s: page for s in slots if (page := disk.slot(s)) is not None})
        for (name, k), was in before.items():
            page = disk.page(name, k)
            if page is not None:
                space, page_no, lsn = header(page)
                pending.append(PageWrite(i, epoch, name, k, space, page_no, lsn, int.from_bytes(page[24:26], "big"),
                                         checkpoint, copy_said(page, durable, now, checkpoint), not any(was or b""),
                                         False, header(was)[2] if was else 0))
    return out + settle()


def audited(rec, workdir: Path) -> list[PageWrite]:  # type: ignore[no-untyped-def]
    """Every page InnoDB wrote in place during the recording, held against the doublewrite area (page_writes)."""
    final = workdir / "final.img"
    copy_image(rec.start_image, final)
    wlog.apply_pieces(rec.log, rec.records, [wlog.Piece(i) for i in range(rec.first, len(rec.records))], final)
    where = block_map(final)
    with open(rec.log, "rb") as log, open(rec.start_image, "rb") as img:
        def data(i: int) -> bytes:
            log.seek(rec.records[i].data_pos)
            return log.read(rec.records[i].length)

        def start(b: int) -> bytes:
            img.seek(b * BLOCK)
            return img.read(BLOCK).ljust(BLOCK, b"\0")

        found = page_writes(rec.records, rec.first, rec.last, data, where, start)
    os.unlink(final)
    return found


def said(w: PageWrite) -> str:
    return (f"{w.file} page {w.page} ({w.type_name}, space {w.space}), FIL_PAGE_LSN {w.lsn:,} over {w.old_lsn:,}, "
            f"checkpoint on disk {w.checkpoint:,}: {w.copy}"
            + (", its copy overwritten before the page was flushed" if w.copy_overwritten else "")
            + (f", VOUCHED FOR BY CHECKPOINT {w.vouched_by:,} WRITTEN {'BEFORE' if w.vouched_first else 'AFTER'} IT "
               "IN THE SAME FLUSH EPOCH" if w.vouched_by else ""))


def doublewrite_audit(rec, workdir: Path, listed: Sequence[str] = ()) -> list[PageWrite]:  # type: ignore[no-untyped-def]
    """Every page InnoDB wrote in place during the recording, held against the doublewrite area; prints what was
    written without a durable copy."""
    found = audited(rec, workdir)
    counts: dict[tuple[str, bool, bool, bool], int] = {}
    for w in found:
        key = (w.copy if w.image else "zeros or not a page image", w.new, w.copy_overwritten, bool(w.vouched_by))
        counts[key] = counts.get(key, 0) + 1
    print(f"{len(found)} pages written in place in the window "
          f"({sum(1 for x in rec.records[rec.first:rec.last] if x.kind == wlog.FLUSH)} flushes):")
    for (copy, new, gone, vouched), n in sorted(counts.items()):
        print(f"  {n:6d}  {copy}{', a new page' if new else ', over an older version'}"
              f"{', ITS COPY OVERWRITTEN BEFORE THE PAGE WAS FLUSHED' if gone else ''}"
              f"{', VOUCHED FOR BY A CHECKPOINT OF ITS OWN FLUSH EPOCH' if vouched else ''}")
    risky = [w for w in found if exposed(w)]
    kinds: dict[tuple[str, str], int] = {}
    for w in risky:
        kinds[(w.file, w.type_name)] = kinds.get((w.file, w.type_name), 0) + 1
    print("exposed page writes by file and page type: "
          + ", ".join(f"{name} {kind} {n}" for (name, kind), n in sorted(kinds.items())))
    for w in found:
        if any(w.file.endswith(f"/{name}") for name in listed):
            print(f"  page write {w.record} (epoch {w.epoch}){' NEW' if w.new else ''}: {said(w)}")
    print(f"{len(risky)} page writes over an older version with no copy in the doublewrite area that recovery would "
          f"use ({sum(1 for w in found if w.vouched_by)} of all vouched for by a checkpoint of their own flush epoch):")
    for w in risky[:60]:
        print(f"    record {w.record} (epoch {w.epoch}): {said(w)}")
    return found


def exposed(w: PageWrite) -> bool:
    """A page write over an older version that recovery could not mend if it were torn: no copy in the doublewrite
    area it would use, or one a checkpoint of the same flush epoch makes it skip."""
    return w.image and not w.new and (w.copy in ("no copy", "its copy not flushed yet", "older than the checkpoint on "
                                                 "disk") or w.copy_overwritten or bool(w.vouched_by))


def check_exposed(config, rec, ledger, driver, found: list[PageWrite], n: int,  # type: ignore[no-untyped-def]
                  keep: Path) -> None:
    """For up to n flush epochs holding exposed page writes: a state cut just before the epoch's flush, every write
    of the epoch landed but the exposed pages' writes, each torn (its first unit landed, the rest not); checked as a
    crash test checks a state, and again with those writes landed whole."""
    records = rec.records
    by_epoch: dict[int, list[PageWrite]] = {}
    for w in found:
        if exposed(w):
            by_epoch.setdefault(w.epoch, []).append(w)
    flushes = [i for i in range(rec.first, rec.last) if records[i].kind == wlog.FLUSH]
    starts = [rec.first] + [f + 1 for f in flushes]
    with workbenches(rec, ledger, 1, rewinds=False) as (benches, _), ExitStack() as stack:
        checker = checkers_for(config, rec, ledger, driver, benches, stack, 1, DEFAULT_UNIT, keep, "exposed")[0]
        for k, (epoch, ws) in enumerate(sorted(by_epoch.items())[:n]):
            start, cut = starts[epoch], flushes[epoch] if epoch < len(flushes) else rec.last
            torn = {w.record for w in ws}
            whole = [wlog.Piece(i) for i in range(start, cut) if records[i].changes]
            tore = [p for i in range(start, cut) if records[i].changes
                    for p in (units_of(records, i, DEFAULT_UNIT)[:1] if i in torn else [wlog.Piece(i)])]
            t_ns = min(records[cut].t_ns - 1, rec.t_end) if cut < len(records) else rec.t_end
            print(f"\n== flush epoch {epoch} (records {start}-{cut}): {len(ws)} exposed page writes", flush=True)
            for w in ws:
                print(f"    record {w.record}: {said(w)}")
            for what, pieces in (("those writes torn", tore), ("those writes landed whole", whole)):
                st = CrashState(20_000 + 2 * k + (pieces is whole), cut, start, tuple(pieces), 0, t_ns,
                                "torn writes", len(pieces), len(torn) if pieces is tore else 0,
                                why="an epoch with exposed page writes")
                r = checker.check(st, None)
                print(f"  cut before its flush, {what}: {verdict(r)}" + (f"; kept as {r.kept_as}" if r.kept_as else ""),
                      flush=True)


def dumped(image: Path, path: str, tmp: Path) -> bytes:
    """A file of an ext2/3/4 image, read with debugfs."""
    out = tmp / "dumped"
    out.unlink(missing_ok=True)
    subprocess.run(["debugfs", "-R", f"dump {path} {out}", str(image)], capture_output=True)
    return out.read_bytes() if out.exists() else b""


def fsp_size(page: bytes) -> int:
    """FSP_SIZE of a tablespace's first page (FSP_HEADER_OFFSET 38 + FSP_SIZE 8)."""
    return int.from_bytes(page[46:50], "big") if len(page) >= 50 else -1


def first_page_tears(config, rec, ledger, driver, found: list[PageWrite], n: int,  # type: ignore[no-untyped-def]
                     workdir: Path) -> None:
    """Writes of a tablespace's page 0 (and, for comparison, its page 3) over an older version with their copy
    durable in the doublewrite area: each in a state cut just before its flush epoch's flush, every write of the epoch
    landed but that one, torn (its first 4 KiB landed, the rest not). The state's image is looked at before recovery
    (the copy in ibdata1's doublewrite area, byte for byte the page written; the page torn in the data file), then
    checked as a crash test checks a state."""
    workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    records = rec.records
    flushes = [i for i in range(rec.first, rec.last) if records[i].kind == wlog.FLUSH]
    starts = [rec.first] + [f + 1 for f in flushes]
    chosen = [w for w in found if w.image and not w.new and w.copy == "its copy durable" and not w.copy_overwritten
              and w.file.endswith(".ibd") and w.page in (0, 3)]
    chosen = sorted(chosen, key=lambda w: (w.page != 0, w.record))[:n]
    print(f"{len(chosen)} writes of page 0 or 3 of a tablespace, their copy durable, each torn in a state of its own")
    with open(rec.log, "rb") as log, workbenches(rec, ledger, 1, rewinds=False) as (benches, _), \
            ExitStack() as stack:
        checker = checkers_for(config, rec, ledger, driver, benches, stack, 1, DEFAULT_UNIT, None, "tears")[0]
        bench = benches[0]
        for k, w in enumerate(sorted(chosen, key=lambda w: w.record)):
            start, cut = starts[w.epoch], flushes[w.epoch] if w.epoch < len(flushes) else rec.last
            pieces = [p for i in range(start, cut) if records[i].changes
                      for p in (units_of(records, i, DEFAULT_UNIT)[:1] if i == w.record else [wlog.Piece(i)])]
            t_ns = min(records[cut].t_ns - 1, rec.t_end) if cut < len(records) else rec.t_end
            st = CrashState(30_000 + k, cut, start, tuple(pieces), 0, t_ns, "torn writes", len(pieces), 1,
                            why="one page write torn")
            log.seek(records[w.record].data_pos)
            written = log.read(records[w.record].length)
            bench.prepare(st)
            before = workdir / f"tear-{k}-before.img"
            copy_image(bench.served.backing, before)
            replayed = workdir / "replayed.img"  # debugfs reads no journal: its replay on a copy, as a mount would
            copy_image(before, replayed)
            subprocess.run(["e2fsck", "-y", "-E", "journal_only", str(replayed)], capture_output=True)
            ibdata = dumped(replayed, f"{DATA}/ibdata1", workdir)
            slots = [ibdata[(DOUBLEWRITE.start // 4 + s) * PAGE:(DOUBLEWRITE.start // 4 + s + 1) * PAGE]
                     for s in range(len(DOUBLEWRITE) // 4)]
            copies = [s for s, c in enumerate(slots) if c == written[:PAGE]]
            data = dumped(replayed, f"{DATA}/{w.file}", workdir)[w.page * PAGE:(w.page + 1) * PAGE]
            replayed.unlink()
            print(f"\n== {said(w)}; record {w.record} torn in a state cut before flush {cut}")
            print(f"  before recovery: its copy in doublewrite slot(s) {copies or 'NONE'}; the page in the file: "
                  f"header LSN {header(data)[2]:,}, trailer's low 32 bits {int.from_bytes(data[-8:-4], 'big'):,}",
                  flush=True)
            r = check_state(config, bench.image, rec.base, ledger, driver, rec.acks, st, True, checker.standing,
                            checker.station)
            bench.checked()
            print(f"  recovered: {verdict(r)}; FSP_SIZE written {fsp_size(written)}, before {fsp_size(data[BLOCK:])}"
                  if w.page == 0 else f"  recovered: {verdict(r)}", flush=True)
            after = workdir / f"tear-{k}-after.img"
            copy_image(bench.served.backing, after)
            text = debugfs(after, "cat /pickfs-data/mariadb.log").replace("\0", "")
            runs = [i for i, line in enumerate(text.splitlines()) if "Starting MariaDB" in line]
            for line in text.splitlines()[runs[-1] if runs else 0:]:
                if any(x in line for x in ("doublewrite", "first page", "pickfs_commits", "crash recovery", "space=6",
                                           "End of log", "To recover", "Restoring", "deferred", "size")):
                    print(f"    {line.strip()[20:]}")
            if r.failed:
                print(f"  images kept: {before}, {after}")
            else:
                before.unlink()
                after.unlink()
            bench.reset()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
