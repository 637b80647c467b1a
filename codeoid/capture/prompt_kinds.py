"""What kind of prompt reached UserPromptSubmit: Claude Code sends more than what the user typed through it.

A background agent's end comes back as a turn of its own whose prompt is a `<task-notification>` block (Claude Code
2.1.332 runs `Agent` calls in the background). It carries the agent's result, so it is stored, but it is not the
user speaking: it opens no rotation, it is not "the user's last turn", and it does not count toward a window's
prompts.
"""

from __future__ import annotations

TASK_NOTIFICATION_PREFIX = "<task-notification>"
#: The `origin` a stored task notification gets, beside `user`, `seed` and `codeoid`.
TASK_NOTIFICATION_ORIGIN = "task-notification"


def is_task_notification(prompt: object) -> bool:
    return isinstance(prompt, str) and prompt.startswith(TASK_NOTIFICATION_PREFIX)
