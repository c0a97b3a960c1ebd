// Cairn on every tool call of an agent built on the Claude Agent SDK.
//
// The SDK's hooks are callbacks in your program. `cairnHooks()` registers one for each event
// Cairn acts on; each hands the event — the same JSON Claude Code gives a command hook — to
// `cairn-hook claude-code --project DIR`, the command `cairn hooks install` writes, and turns
// its answer into the SDK's. With `CAIRN_SERVER` and `CAIRN_TOKEN` in the environment,
// `cairn-hook` asks the service instead of a local project.
//
// Fail closed: a tool call is refused when `cairn-hook` cannot be started, fails, or does
// not answer within the deadline — the SDK would otherwise run it — and the gate's matcher
// sets the SDK's `onFailure: 'block'`, so a callback that fails refuses the call too. Every
// other event (a compaction, a stop) is never blocked.
//
//   import { query } from '@anthropic-ai/claude-agent-sdk';
//   import { cairnHooks } from './cairn.mjs';
//   for await (const m of query({ prompt, options: { cwd: project, hooks: cairnHooks({ project }) } })) { … }

import { spawn } from 'node:child_process';

/** The events Cairn acts on (those `cairn hooks install --claude-code` installs). */
export const CAIRN_EVENTS = [
  'SessionStart',
  'UserPromptSubmit',
  'PreToolUse',
  'PostToolUse',
  'PostToolUseFailure',
  'PreCompact',
  'PostCompact',
  'Stop',
  'SubagentStop',
  'SessionEnd',
];

/** How long an answer may take (Cairn answers within 10 s; a held approval waits longer). */
const DEADLINE_MS = 55_000;

/**
 * The SDK's `hooks` option putting Cairn on every event it acts on.
 * @param {{project: string, program?: string, env?: NodeJS.ProcessEnv}} options
 *   `project`: the folder whose `.cairn/` gates and records the calls; `program`: the hook
 *   program (`cairn-hook`, from your PATH); `env`: its environment.
 */
export function cairnHooks({ project, program = 'cairn-hook', env = process.env }) {
  if (!project) throw new Error('cairnHooks: `project` names the folder whose .cairn/ decides');
  const callback = (input, toolUseID) => ask(input, toolUseID, { project, program, env });
  // `onFailure: 'block'` on the gate: a callback that fails or times out refuses the call
  // (the SDK's default lets it run).
  return Object.fromEntries(
    CAIRN_EVENTS.map((event) => [
      event,
      [{ hooks: [callback], timeout: 60, ...(event === 'PreToolUse' ? { onFailure: 'block' } : {}) }],
    ]),
  );
}

/** Cairn's answer to one event, as the SDK reads it. Never throws. */
export async function ask(input, toolUseID, { project, program = 'cairn-hook', env = process.env }) {
  const gate = input?.hook_event_name === 'PreToolUse';
  const refuse = (reason) => ({
    hookSpecificOutput: {
      hookEventName: 'PreToolUse',
      permissionDecision: 'deny',
      permissionDecisionReason: reason,
    },
  });
  let result;
  try {
    const payload = toolUseID && !input.tool_use_id ? { ...input, tool_use_id: toolUseID } : input;
    result = await run(program, ['claude-code', '--project', project], JSON.stringify(payload), env);
  } catch (error) {
    const reason = `Cairn could not decide this call (${error.message}), so it is refused.`;
    return gate ? refuse(reason) : {};
  }
  let answer = {};
  const text = result.stdout.trim();
  if (text) {
    try {
      answer = JSON.parse(text);
    } catch {
      answer = null;
    }
  }
  if (result.code === 0 && answer && typeof answer === 'object') return answer;
  if (!gate) return {};
  // Exit 2 is Cairn's refusal (its reason on stderr, and in the JSON when there is one);
  // anything else is a failure, refused as well.
  if (result.code === 2 && answer?.hookSpecificOutput?.permissionDecision === 'deny') return answer;
  const why = result.stderr.trim() || `cairn-hook exited with ${result.code}`;
  return refuse(result.code === 2 ? why : `Cairn could not decide this call (${why}), so it is refused.`);
}

/** Runs `program` with `stdin`; its exit code, stdout and stderr. Rejects on a start failure
 * or past the deadline (the process is killed). */
function run(program, args, stdin, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no answer within ${DEADLINE_MS / 1000} s`));
    }, DEADLINE_MS);
    child.stdout.on('data', (chunk) => out.push(chunk));
    child.stderr.on('data', (chunk) => err.push(chunk));
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code: code ?? (signal ? 128 : 1),
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
    child.stdin.on('error', () => {}); // a hook that exits before reading: its answer decides
    child.stdin.end(stdin);
  });
}
