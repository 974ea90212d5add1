"""Commands: one module each; the only place that prints or exits."""
