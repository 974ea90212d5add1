"""The autopsy's doublewrite audit: every page InnoDB wrote in place during a recording, held against the copies the
doublewrite area held on stable storage under the disk model (a write is durable at the next flush)."""

from pickfs.crash import log as wlog
from tests.benchmark_module import load_benchmark

autopsy = load_benchmark("crash_state_autopsy")

BLOCK, PAGE = 4096, 16384
IBDATA, IBD, LOG = 1000, 3000, 5000  # where each file's blocks start on the disk
SPACE = 7


def where():
    out = {IBDATA + k: ("ibdata1", k) for k in range(800)}
    out |= {IBD + k: ("sbtest/t.ibd", k) for k in range(16)}
    out |= {LOG + k: ("ib_logfile0", k) for k in range(4)}
    return out


def page(page_no, lsn, space=SPACE, fill=b"x"):
    head = bytes(4) + page_no.to_bytes(4, "big") + bytes(8) + lsn.to_bytes(8, "big") + (17855).to_bytes(2, "big")
    head += bytes(34 - len(head)) + space.to_bytes(4, "big")
    return head + fill * (PAGE - len(head))


class Recording:
    def __init__(self):
        self.records, self.data = [], {}

    def write(self, offset, body):
        self.data[len(self.records)] = body
        self.records.append(wlog.Record(wlog.WRITE, len(self.records), offset, len(body), 0))

    def in_place(self, page_no, body):
        self.write((IBD + page_no * 4) * BLOCK, body)

    def doublewrite(self, slot, body):
        self.write((IBDATA + 256 + slot * 4) * BLOCK, body)

    def flush(self):
        self.records.append(wlog.Record(wlog.FLUSH, len(self.records), 0, 0, 0))

    def audit(self, start=None):
        blocks = start or {}
        return autopsy.page_writes(self.records, 0, len(self.records), self.data.__getitem__, where(),
                                   lambda b: blocks.get(b, bytes(BLOCK)))


def start_with(page_no, body):
    """A start image whose page `page_no` of the .ibd file holds `body`."""
    return {IBD + page_no * 4 + j: body[j * BLOCK:(j + 1) * BLOCK] for j in range(4)}


def test_a_page_written_after_its_copy_was_flushed_has_its_copy():
    rec = Recording()
    rec.doublewrite(0, page(3, 200))
    rec.flush()
    rec.in_place(3, page(3, 200))
    rec.flush()
    (w,) = rec.audit(start_with(3, page(3, 100)))
    assert (w.file, w.page, w.lsn, w.copy, w.new, w.copy_overwritten) == ("sbtest/t.ibd", 3, 200, "its copy durable",
                                                                          False, False)


def test_a_page_written_over_an_older_version_without_a_copy_is_told():
    rec = Recording()
    rec.in_place(3, page(3, 200))
    rec.flush()
    (w,) = rec.audit(start_with(3, page(3, 100)))
    assert (w.copy, w.new) == ("no copy", False)


def test_a_copy_not_flushed_before_the_page_is_not_durable():
    rec = Recording()
    rec.doublewrite(0, page(3, 200))
    rec.in_place(3, page(3, 200))
    rec.flush()
    (w,) = rec.audit(start_with(3, page(3, 100)))
    assert w.copy == "its copy not flushed yet"


def test_a_copy_overwritten_before_the_page_was_flushed_is_told():
    rec = Recording()
    rec.doublewrite(0, page(3, 200))
    rec.flush()
    rec.in_place(3, page(3, 200))
    rec.doublewrite(0, page(9, 300))  # the next batch, before the page is flushed
    rec.flush()
    (w,) = rec.audit(start_with(3, page(3, 100)))
    assert (w.copy, w.copy_overwritten) == ("its copy durable", True)


def test_a_page_written_in_two_writes_is_new_at_the_first_only():
    rec = Recording()
    body = page(2, 200)
    rec.in_place(2, body[:8192])
    rec.in_place(2, body)
    rec.flush()
    first, second = rec.audit()
    assert (first.new, second.new, second.copy, second.lsn) == (True, False, "no copy", 200)


def test_an_older_copy_newer_than_the_checkpoint_serves_recovery():
    rec = Recording()
    rec.write((LOG + 1) * BLOCK, (150).to_bytes(8, "big") + bytes(BLOCK - 8))  # checkpoint at LSN 150
    rec.doublewrite(1, page(3, 180))
    rec.flush()
    rec.in_place(3, page(3, 200))
    rec.flush()
    (w,) = rec.audit(start_with(3, page(3, 100)))
    assert (w.copy, w.checkpoint) == ("an older copy durable", 150)


def test_a_page_vouched_for_by_a_checkpoint_of_its_own_flush_epoch_is_told():
    rec = Recording()
    rec.doublewrite(0, page(3, 200))
    rec.flush()
    rec.in_place(3, page(3, 200))
    rec.write((LOG + 2) * BLOCK, (250).to_bytes(8, "big") + bytes(BLOCK - 8))  # a checkpoint past the page, unflushed
    rec.in_place(2, page(2, 260))  # newer than that checkpoint: its changes are replayed
    rec.flush()
    three, two = rec.audit(start_with(3, page(3, 100)) | start_with(2, page(2, 100)))
    assert (three.vouched_by, three.vouched_first, three.copy) == (250, False, "its copy durable")
    assert two.vouched_by == 0


def test_a_page_older_than_the_checkpoint_on_disk_when_written_is_told():
    rec = Recording()
    rec.doublewrite(0, page(3, 200))
    rec.write((LOG + 1) * BLOCK, (250).to_bytes(8, "big") + bytes(BLOCK - 8))  # a checkpoint past the page
    rec.flush()
    rec.in_place(3, page(3, 200))  # written after it: recovery neither replays it nor takes its copy (LSN 200 < 250)
    rec.flush()
    (w,) = rec.audit(start_with(3, page(3, 100)))
    assert (w.copy, w.checkpoint) == ("older than the checkpoint on disk", 250)
    assert autopsy.exposed(w)
