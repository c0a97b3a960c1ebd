// An agent on the Claude Agent SDK with Cairn on every tool call.
//
//   npm ci && (cd /path/to/project && cairn init)   # .cairn/ once
//   node agent.mjs /path/to/project "Fix the failing test."
//
// Every tool call is decided by the project's policies, lanes and reconciliation state and
// recorded before it runs; `cairn runs list` in the project shows the session's run.

import { query } from '@anthropic-ai/claude-agent-sdk';
import { cairnHooks } from './cairn.mjs';

const [project = process.cwd(), prompt = 'List the files here.'] = process.argv.slice(2);

const options = {
  cwd: project,
  hooks: cairnHooks({ project }),
  // The tools the agent may use without asking; Cairn narrows them further.
  allowedTools: ['Bash', 'Read', 'Write', 'Edit', 'Glob', 'Grep'],
  ...(process.env.CLAUDE_CODE_EXECUTABLE
    ? { pathToClaudeCodeExecutable: process.env.CLAUDE_CODE_EXECUTABLE }
    : {}),
};

let failed = false;
for await (const message of query({ prompt, options })) {
  if (message.type === 'system' && message.subtype === 'init') {
    console.log(`session ${message.session_id}`);
  }
  if (message.type === 'result') {
    console.log(message.subtype === 'success' ? message.result : `ended: ${message.subtype}`);
    failed = message.subtype !== 'success';
  }
}
process.exit(failed ? 1 : 0);
