"""A results database's URL is shown without its password, wherever the password is written."""

from pickfs.store.postgres import masked


def test_every_password_in_a_url_is_masked():
    assert masked("postgresql://team:s3cret@db.example/pickfs") == "postgresql://team:***@db.example/pickfs"
    assert masked("postgresql://u:se/cret@h/db") == "postgresql://u:***@h/db"
    assert masked("postgresql://u@h/db?password=secret&sslmode=require") == \
        "postgresql://u@h/db?password=***&sslmode=require"
    assert masked("postgres://h/db?sslmode=verify-full&sslpassword=k3y") == "postgres://h/db?sslmode=verify-full&sslpassword=***"
    assert masked("postgresql:///pickfs?host=/run/pg") == "postgresql:///pickfs?host=/run/pg"
