"""Workload clients run as their own processes: standard library only, cheap to start."""
