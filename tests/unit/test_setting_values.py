"""Database settings: a value not of its setting's shape is refused before any server or shell sees it."""

from __future__ import annotations

import pytest

from pickfs.databases.values import SHAPES, value_problem
from pickfs.errors import PlanError
from pickfs.services.postgresql import conf_text, server_settings
from pickfs.workloads import workload_class

INJECTIONS = ["128MB$(touch /tmp/inj) -c fsync=off", "on\nfsync=off", "1; DROP", "on -c x=y", "'on'", "`id`",
              "on\x00", "128MB ", " 128MB", "a b", "../x"]

# (workload, its settings besides the one fuzzed): each database's settings reached through its workloads
HOLDERS = {
    "pgbench": {}, "sysbench-oltp": {}, "sqlite-tpcb": {}, "firebird-tpcb": {},
    "tpcc": {}, "command": {"command": "true"},
}


def _keys(name: str) -> list[str]:
    cls = workload_class(name)
    return sorted(k for k in cls.setting_names() if k in SHAPES)


@pytest.mark.parametrize("name", sorted(HOLDERS))
@pytest.mark.parametrize("bad", INJECTIONS)
def test_every_database_setting_refuses_a_value_not_of_its_shape(name, bad):
    cls = workload_class(name)
    keys = _keys(name)
    assert keys, name
    for key in keys:
        extra = {"server": "postgresql" if key in workload_class("pgbench").defaults else "mariadb"} \
            if name == "command" else {}
        with pytest.raises(PlanError) as err:
            cls.normalize({**HOLDERS[name], **extra, key: bad})
        assert key in err.value.message and "\n" not in err.value.message


@pytest.mark.parametrize("key,good", [("shared_buffers", "128MB"), ("shared_buffers", 16384),
                                      ("checkpoint_timeout", "5min"), ("fsync", False), ("fsync", "off"),
                                      ("synchronous_commit", "remote_apply"), ("wal_sync_method", "open_datasync"),
                                      ("innodb_buffer_pool_size", "512M"), ("innodb_flush_log_at_trx_commit", 2),
                                      ("innodb_flush_method", "O_DIRECT"), ("log_bin", "binlog"),
                                      ("synchronous", "NORMAL"), ("journal_mode", "wal"), ("forced_writes", "off")])
def test_values_of_the_right_shape_pass(key, good):
    assert value_problem(key, good) is None


def test_postgresql_settings_reach_the_server_as_a_quoted_file_not_a_shell_line(tmp_path):
    values = server_settings(tmp_path / "sock", {"shared_buffers": "128MB", "fsync": False, "max_wal_size": None})
    assert values["shared_buffers"] == "128MB" and values["fsync"] == "off" and "max_wal_size" not in values
    assert values["listen_addresses"] == ""
    text = conf_text({**values, "x": "it's"})
    assert "shared_buffers = '128MB'\n" in text and "x = 'it''s'\n" in text
    with pytest.raises(PlanError):
        server_settings(tmp_path, {"shared_buffers": "128MB$(touch /tmp/inj) -c fsync=off"})


@pytest.mark.parametrize("env", [{"A=B": "x"}, {"": "x"}, {"1A": "x"}, {"A": "x\x00y"}, {"A B": "x"}])
def test_command_env_names_and_values_that_cannot_reach_the_environment_are_refused(env):
    with pytest.raises(PlanError) as err:
        workload_class("command").normalize({"command": "true", "env": env})
    assert "env" in err.value.message
