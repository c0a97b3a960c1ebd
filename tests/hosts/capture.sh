#!/usr/bin/env bash
# Captures the hook payloads a real host sends, for the recorded corpora
# (tests/hosts/post_tool_use/): the host from tests/hosts/node_modules (npm ci --prefix
# tests/hosts), driven by fake-model.mjs on loopback with SCRIPT, every hook event answered by
# a hook that only appends its stdin, one JSON line each, to OUT/capture.jsonl.
#
# usage: tests/hosts/capture.sh claude-code|codex|gemini-cli|copilot-cli SCRIPT.json OUT "PROMPT" [host arguments]
# (Gemini CLI: CAPTURE_GEMINI_SETTINGS, a JSON object, is merged into its user settings.)
#
# Nothing leaves the machine: the host's model is the fake server, its home is OUT/home.
# Each run is bounded (the host by `timeout 180`, the model server by its --lifetime).
set -euo pipefail
host=$1 given=$2 out=$3 prompt=$4
shift 4
harness=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out" && mkdir -p "$out/project" "$out/home"
out=$(realpath "$out")
# `${PROJECT}` in the script is the project folder, as in the scenarios.
script=$out/model-script.json
sed "s|\${PROJECT}|$out/project|g" "$given" > "$script"
log=$out/capture.jsonl
hook=$out/hook.sh
printf '#!/bin/sh\ncat >> %q\necho >> %q\n' "$log" "$log" > "$hook"
chmod +x "$hook"

(sleep 300 | node "$harness/fake-model.mjs" --script "$script" --log "$out/requests.jsonl" \
  --port-file "$out/port" --lifetime 300) &
for _ in $(seq 100); do [ -s "$out/port" ] && break; sleep 0.1; done
port=$(cat "$out/port")
trap 'pkill -f "fake-model.mjs --script $script" || true' EXIT

case "$host" in
  claude-code)
    mkdir -p "$out/project/.claude"
    python3 - "$out/project/.claude/settings.json" "$hook" <<'PY'
import json, sys
events = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
          "PreCompact", "PostCompact", "Stop", "SubagentStop", "SessionEnd", "Notification"]
group = lambda: [{"hooks": [{"type": "command", "command": sys.argv[2]}]}]
json.dump({"hooks": {event: group() for event in events}}, open(sys.argv[1], "w"))
PY
    cd "$out/project"
    env -i PATH="$PATH" HOME="$out/home" LANG=C.UTF-8 TERM=dumb NO_COLOR=1 \
      ANTHROPIC_BASE_URL="http://127.0.0.1:$port" ANTHROPIC_API_KEY=sk-ant-fake-key-for-tests \
      DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 DISABLE_AUTOUPDATER=1 \
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1 \
      timeout 180 "$harness/node_modules/@anthropic-ai/claude-code-linux-x64/claude" \
      -p "$prompt" --output-format json \
      --allowedTools "Bash,Write,Edit,Read,Glob,Grep,Task,WebFetch,TodoWrite" "$@" \
      < /dev/null > "$out/host.out" 2> "$out/host.err" || true
    ;;
  codex)
    mkdir -p "$out/project/.codex" "$out/home/.codex"
    python3 - "$out/project/.codex/hooks.json" "$hook" <<'PY'
import json, sys
events = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact",
          "PostCompact", "Stop", "SessionEnd"]
group = lambda: [{"hooks": [{"type": "command", "command": sys.argv[2], "timeout": 30}]}]
json.dump({"hooks": {event: group() for event in events}}, open(sys.argv[1], "w"))
PY
    cat > "$out/home/.codex/config.toml" <<TOML
model = "gpt-5"
model_provider = "fake"
check_for_update_on_startup = false
[model_providers.fake]
name = "fake"
base_url = "http://127.0.0.1:$port/v1"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
[analytics]
enabled = false
[otel]
exporter = "none"
${CAPTURE_CODEX_EXTRA:-}
[projects."$out/project"]
trust_level = "trusted"
TOML
    cd "$out/project"
    env -i PATH="$PATH" HOME="$out/home" LANG=C.UTF-8 TERM=dumb NO_COLOR=1 \
      CODEX_HOME="$out/home/.codex" OPENAI_API_KEY=sk-fake-key-for-tests \
      timeout 180 "$harness/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex" \
      exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox \
      --dangerously-bypass-hook-trust "$@" "$prompt" \
      < /dev/null > "$out/host.out" 2> "$out/host.err" || true
    ;;
  gemini-cli)
    mkdir -p "$out/project/.gemini" "$out/home/.gemini"
    python3 - "$out/project/.gemini/settings.json" "$hook" "$out/home/.gemini/settings.json" <<'PY'
import json, os, sys
events = ["SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "PreCompress", "BeforeModel",
          "AfterAgent", "SessionEnd", "Notification"]
group = lambda: [{"hooks": [{"type": "command", "command": sys.argv[2], "timeout": 30000}]}]
json.dump({"hooks": {event: group() for event in events}}, open(sys.argv[1], "w"))
user = {"security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False}}
user.update(json.loads(os.environ.get("CAPTURE_GEMINI_SETTINGS") or "{}"))
json.dump(user, open(sys.argv[3], "w"))
PY
    cd "$out/project"
    env -i PATH="$PATH" HOME="$out/home" LANG=C.UTF-8 TERM=dumb NO_COLOR=1 \
      GEMINI_API_KEY=fake-key-for-tests GOOGLE_GEMINI_BASE_URL="http://127.0.0.1:$port" \
      GEMINI_CLI_TRUST_WORKSPACE=true \
      timeout 180 node "$harness/node_modules/@google/gemini-cli/bundle/gemini.js" \
      -p "$prompt" --yolo -m gemini-2.5-flash --output-format json "$@" \
      < /dev/null > "$out/host.out" 2> "$out/host.err" || true
    ;;
  copilot-cli)
    # Copilot CLI runs Claude Code's hook format from .github/hooks/*.json.
    mkdir -p "$out/project/.github/hooks"
    python3 - "$out/project/.github/hooks/capture.json" "$hook" <<'PY'
import json, sys
events = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
          "PreCompact", "Stop", "SubagentStop", "SessionEnd"]
group = lambda: [{"hooks": [{"type": "command", "command": sys.argv[2], "timeout": 30}]}]
json.dump({"hooks": {event: group() for event in events}}, open(sys.argv[1], "w"))
PY
    cd "$out/project"
    env -i PATH="$PATH" HOME="$out/home" LANG=C.UTF-8 TERM=dumb NO_COLOR=1 \
      COPILOT_PROVIDER_BASE_URL="http://127.0.0.1:$port/v1" COPILOT_PROVIDER_WIRE_API=responses \
      COPILOT_MODEL=gpt-5 COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false COPILOT_ALLOW_ALL=true \
      timeout 180 "$harness/node_modules/@github/copilot-linux-x64/copilot" \
      -p "$prompt" --disable-client-telemetry "$@" \
      < /dev/null > "$out/host.out" 2> "$out/host.err" || true
    ;;
  *) echo "usage: $0 claude-code|codex|gemini-cli|copilot-cli SCRIPT.json OUT PROMPT [host arguments]" >&2; exit 2 ;;
esac
echo "captured $(grep -c . "$log" || true) events in $log"
