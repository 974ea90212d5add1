"""The use cases under the commands: one typed request in, one typed outcome out, no printing and no click.

`pickfs run` (and its dry run), `pickfs plan check`, `pickfs crashtest` and a fleet host's job all run a plan
through `usecases.run.run_plan`. Nothing is imported here, so a command that only reads results loads no engine."""
