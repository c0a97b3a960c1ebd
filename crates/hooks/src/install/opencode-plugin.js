// Cairn on every tool call of OpenCode. Written by `cairn hooks install --opencode`, removed by
// `cairn hooks uninstall --opencode`; edits are overwritten by the next install.
//
// OpenCode has no command hooks: this plugin hands each event to `cairn-hook opencode`, in the
// hook JSON Cairn reads for every host, and throws to refuse a tool call — when Cairn refuses
// it, and when Cairn cannot be asked at all (fail closed).

import { spawn } from 'node:child_process';

const PROJECT = __CAIRN_PROJECT__;
const DEADLINE_MS = 55_000;

function run(stdin) {
  return new Promise((resolve, reject) => {
    const child = spawn('cairn-hook', ['opencode', '--project', PROJECT], { stdio: ['pipe', 'pipe', 'pipe'] });
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
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
  });
}

function parsed(text) {
  try {
    return JSON.parse(text.trim() || '{}');
  } catch {
    return null;
  }
}

export const Cairn = async ({ directory }) => {
  const ask = (event, sessionID, fields = {}) =>
    run(JSON.stringify({ hook_event_name: event, session_id: sessionID, cwd: directory, ...fields }));
  // Context for the model (after a compaction) from an answer, if any.
  const contextOf = (answer) => parsed(answer.stdout)?.hookSpecificOutput?.additionalContext;
  const quietly = async (event, sessionID, fields) => {
    try {
      return await ask(event, sessionID, fields);
    } catch {
      return { code: 0, stdout: '', stderr: '' };
    }
  };
  return {
    'tool.execute.before': async (input, output) => {
      let answer;
      try {
        answer = await ask('PreToolUse', input.sessionID, {
          tool_name: input.tool,
          tool_input: output.args,
          tool_use_id: input.callID,
        });
      } catch (error) {
        throw new Error(`Cairn could not decide this call (${error.message}), so it is refused.`);
      }
      if (answer.code !== 0) {
        const reason = parsed(answer.stdout)?.hookSpecificOutput?.permissionDecisionReason;
        throw new Error(reason || answer.stderr.trim() || `Cairn refused this call (exit ${answer.code}).`);
      }
    },
    'tool.execute.after': async (input, output) => {
      const answer = await quietly('PostToolUse', input.sessionID, {
        tool_name: input.tool,
        tool_input: input.args,
        tool_use_id: input.callID,
        tool_response: { title: output.title, output: output.output, metadata: output.metadata },
      });
      const context = contextOf(answer);
      if (context && typeof output.output === 'string') output.output += `\n\n${context}`;
    },
    'chat.message': async (input, output) => {
      const prompt = (output.parts ?? []).filter((part) => part.type === 'text').map((part) => part.text).join('\n');
      const answer = await quietly('UserPromptSubmit', input.sessionID, { prompt });
      const context = contextOf(answer);
      if (context) output.parts.push({ type: 'text', text: context, synthetic: true });
    },
    'experimental.session.compacting': async (input) => {
      await quietly('PreCompact', input.sessionID, { trigger: 'auto' });
    },
    event: async ({ event }) => {
      const sessionID = event.properties?.sessionID ?? event.properties?.info?.id;
      if (!sessionID) return;
      if (event.type === 'session.created') await quietly('SessionStart', sessionID, { source: 'startup' });
      if (event.type === 'session.compacted') await quietly('PostCompact', sessionID, { trigger: 'auto' });
      if (event.type === 'session.idle') await quietly('Stop', sessionID);
      if (event.type === 'session.deleted') await quietly('SessionEnd', sessionID, { reason: 'deleted' });
    },
  };
};
