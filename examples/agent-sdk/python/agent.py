"""An agent on the Claude Agent SDK for Python with Cairn on every tool call.

    pip install -r requirements.txt && (cd /path/to/project && cairn init)
    python agent.py /path/to/project "Fix the failing test."

Every tool call is decided by the project's policies, lanes and reconciliation state and
recorded before it runs; ``cairn runs list`` in the project shows the session's run.
"""

from __future__ import annotations

import asyncio
import os
import sys

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, SystemMessage, query

from cairn_hooks import cairn_hooks


async def main() -> int:
    project = sys.argv[1] if len(sys.argv) > 1 else os.getcwd()
    prompt = sys.argv[2] if len(sys.argv) > 2 else "List the files here."
    options = ClaudeAgentOptions(
        cwd=project,
        hooks=cairn_hooks(project),
        # The tools the agent may use without asking; Cairn narrows them further.
        allowed_tools=["Bash", "Read", "Write", "Edit", "Glob", "Grep"],
        cli_path=os.environ.get("CLAUDE_CODE_EXECUTABLE"),
    )
    failed = False
    async for message in query(prompt=prompt, options=options):
        if isinstance(message, SystemMessage) and message.subtype == "init":
            print(f"session {message.data.get('session_id')}")
        if isinstance(message, ResultMessage):
            print(message.result if message.subtype == "success" else f"ended: {message.subtype}")
            failed = message.subtype != "success"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
