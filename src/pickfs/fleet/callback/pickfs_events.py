"""An Ansible stdout callback that writes one JSON object a line for pickfs's controller to read.

Ansible loads this file itself (ANSIBLE_CALLBACK_PLUGINS names this directory); pickfs never imports it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: pickfs_events
    type: stdout
    short_description: JSON lines for pickfs fleet
    description: one JSON object per event, for pickfs's controller
"""

_KEEP = ("msg", "stderr", "stdout", "rc", "unreachable", "attempts", "failed", "changed")


def _brief(result: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key in _KEEP:
        if key in result:
            value = result[key]
            if isinstance(value, str) and len(value) > 4000:
                value = value[-4000:]
            out[key] = value
    return out


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "pickfs_events"

    def _emit(self, event: str, **data: Any) -> None:
        sys.stdout.write(json.dumps({"event": event, **data}, default=str) + "\n")
        sys.stdout.flush()

    def _result(self, event: str, result: Any) -> None:
        self._emit(event, host=result._host.get_name(), task=result._task.get_name(),
                   result=_brief(dict(result._result)))

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        self._emit("task", task=task.get_name())

    def v2_runner_on_ok(self, result: Any) -> None:
        self._result("ok", result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._result("ignored" if ignore_errors else "failed", result)

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._result("unreachable", result)

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._result("skipped", result)

    def v2_runner_retry(self, result: Any) -> None:
        self._result("retry", result)

    def v2_playbook_on_stats(self, stats: Any) -> None:
        self._emit("stats", hosts=sorted(stats.processed))
