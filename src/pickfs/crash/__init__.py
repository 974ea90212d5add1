"""Crash safety: record every write and flush under the loop device, rebuild power-cut states, check them."""
