"""Test suites shipped with pickfs, to be run through the `command` workload (field report R1)."""
