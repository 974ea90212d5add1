"""A crash state lost to a cause pickfs measured and traced to the database itself says so in its problem: under
InnoDB's defaults, a table whose torn first page recovery left unmended though its doublewrite copy was on disk."""

from pickfs.crash import runner

CORRUPTED = ("OperationalError: (1877, 'Table `sbtest`.`pickfs_commits` is corrupted. Please drop the table and "
             "recreate.')")


def checked(monkeypatch, tmp_path, backend):
    monkeypatch.setattr(runner, "_client", lambda *a, **k: {"client": "pickfs-commits", "query_error": CORRUPTED})
    return runner.Commits(backend, {}).check(tmp_path, None, tmp_path, {}, 0)


def test_innodb_s_unmended_first_page_is_named_in_the_state_s_problem(monkeypatch, tmp_path):
    opened, consistent, present, problem = checked(monkeypatch, tmp_path, "mariadb")
    assert (opened, consistent, present) == (True, False, set())
    assert problem.startswith(f"database: {CORRUPTED}; the likely cause, measured by pickfs: InnoDB's crash recovery")
    assert "doublewrite" in problem


def test_other_databases_name_no_cause_for_the_same_words(monkeypatch, tmp_path):
    assert checked(monkeypatch, tmp_path, "postgresql")[3] == f"database: {CORRUPTED}"
