"""Cairn on every tool call of an agent built on the Claude Agent SDK for Python.

The SDK's hooks are callbacks in your program. ``cairn_hooks()`` registers one for each event
Cairn acts on; each hands the event — the same JSON Claude Code gives a command hook — to
``cairn-hook claude-code --project DIR``, the command ``cairn hooks install`` writes, and turns
its answer into the SDK's. With ``CAIRN_SERVER`` and ``CAIRN_TOKEN`` in the environment,
``cairn-hook`` asks the service instead of a local project.

Fail closed: a tool call is refused when ``cairn-hook`` cannot be started, fails, or does not
answer within the deadline — the SDK would otherwise run it — and the gate's matcher sets the
SDK's ``on_failure="block"``, so a callback that fails refuses the call too. Every other event
(a compaction, a stop) is never blocked.

    from claude_agent_sdk import ClaudeAgentOptions, query
    from cairn_hooks import cairn_hooks

    options = ClaudeAgentOptions(cwd=project, hooks=cairn_hooks(project))
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from claude_agent_sdk import HookMatcher

#: The events Cairn acts on (those ``cairn hooks install --claude-code`` installs).
CAIRN_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PreCompact",
    "PostCompact",
    "Stop",
    "SubagentStop",
    "SessionEnd",
)

#: How long an answer may take (Cairn answers within 10 s; a held approval waits longer).
DEADLINE_S = 55.0


def cairn_hooks(
    project: str, program: str = "cairn-hook", env: dict[str, str] | None = None
) -> dict[str, list[HookMatcher]]:
    """The SDK's ``hooks`` option putting Cairn on every event it acts on.

    ``project`` is the folder whose ``.cairn/`` gates and records the calls; ``program`` the
    hook program (``cairn-hook``, from your PATH); ``env`` its environment.
    """
    if not project:
        raise ValueError("cairn_hooks: `project` names the folder whose .cairn/ decides")

    async def callback(input_data: dict[str, Any], tool_use_id: str | None, _context: Any):
        return await ask(input_data, tool_use_id, project, program, env)

    # `on_failure="block"` on the gate: a callback that fails or times out refuses the call
    # (the SDK's default lets it run).
    return {
        event: [
            HookMatcher(
                hooks=[callback],  # type: ignore[list-item]
                timeout=60,
                on_failure="block" if event == "PreToolUse" else None,
            )
        ]
        for event in CAIRN_EVENTS
    }


def _refuse(reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


async def ask(
    input_data: dict[str, Any],
    tool_use_id: str | None,
    project: str,
    program: str = "cairn-hook",
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Cairn's answer to one event, as the SDK reads it. Never raises."""
    gate = input_data.get("hook_event_name") == "PreToolUse"
    payload = dict(input_data)
    if tool_use_id and "tool_use_id" not in payload:
        payload["tool_use_id"] = tool_use_id
    try:
        code, stdout, stderr = await _run(
            program, ["claude-code", "--project", project], json.dumps(payload), env
        )
    except Exception as error:  # noqa: BLE001 - any failure to ask is a refusal
        reason = f"Cairn could not decide this call ({error}), so it is refused."
        return _refuse(reason) if gate else {}
    answer: Any = {}
    if stdout.strip():
        try:
            answer = json.loads(stdout)
        except ValueError:
            answer = None
    if code == 0 and isinstance(answer, dict):
        return answer
    if not gate:
        return {}
    # Exit 2 is Cairn's refusal (its reason on stderr, and in the JSON when there is one);
    # anything else is a failure, refused as well.
    specific = answer.get("hookSpecificOutput") if isinstance(answer, dict) else None
    if code == 2 and isinstance(specific, dict) and specific.get("permissionDecision") == "deny":
        return answer
    why = stderr.strip() or f"cairn-hook exited with {code}"
    if code == 2:
        return _refuse(why)
    return _refuse(f"Cairn could not decide this call ({why}), so it is refused.")


async def _run(
    program: str, args: list[str], stdin: str, env: dict[str, str] | None
) -> tuple[int, str, str]:
    """Runs ``program`` with ``stdin``: its exit code, stdout and stderr. Raises on a start
    failure or past the deadline (the process is killed)."""
    process = await asyncio.create_subprocess_exec(
        program,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env if env is not None else dict(os.environ),
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin.encode()), DEADLINE_S)
    except asyncio.TimeoutError:
        process.kill()
        await process.wait()
        raise TimeoutError(f"no answer within {DEADLINE_S:.0f} s") from None
    code = process.returncode if process.returncode is not None else 1
    if code < 0:  # killed by a signal
        code = 128 - code
    return code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
