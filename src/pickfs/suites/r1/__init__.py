"""R1's test suite: a small pytest suite against the database server pickfs started on the
filesystem under test, written as an application's integration tests are (each test creates its
schema, commits row by row as an ORM does, reads back, drops it).

Run it through the `command` workload (see examples/r1-test-suite.toml):

    command = "$PICKFS_PYTHON -m pickfs.suites.r1"

It finds its server in the environment the command workload sets: MYSQL_UNIX_PORT (MariaDB or
MySQL, through PyMySQL) or PGHOST (PostgreSQL, through psycopg). PICKFS_SUITE_ROWS (default 200)
sets the rows each test commits, PICKFS_SUITE_ROUNDS (default 24) how many times each test runs.
"""
