"""Running a plan: the order of trials, and the executor."""
