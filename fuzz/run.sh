#!/usr/bin/env bash
# Runs every fuzz target for SECONDS seconds each (default 20), two at a time on a
# two-core machine, each from the committed seeds in fuzz/corpus/<target> into a working
# corpus outside the clone (so the committed corpora stay small). Exits non-zero when any
# target finds a failure; its input is left in fuzz/artifacts/<target>/.
#
#   fuzz/run.sh            # 20 s each: what CI runs, to catch a regression in a harness
#   fuzz/run.sh 600        # a 10-minute campaign per target
#   JOBS=1 fuzz/run.sh 60  # one target at a time
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`); on a stable toolchain it runs with
# RUSTC_BOOTSTRAP=1 for the sanitizer flags.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-20}"
jobs="${JOBS:-2}"
work="${CAIRN_FUZZ_WORK:-${TMPDIR:-/tmp}/cairn-fuzz-work}"
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: cargo-fuzz is not installed: SKIPPING the fuzz targets (cargo install cargo-fuzz)"
  exit 0
fi
targets=(hook_stdin args_to_cedar policy_load bundle_verify proof_verify envelope_v1 vce_rlc)
cargo fuzz build -O >/dev/null
# The hook target keeps its project on a memory file system; drop it afterwards.
trap 'rm -rf /dev/shm/cairn-fuzz-hook-* "${TMPDIR:-/tmp}"/cairn-fuzz-hook-*' EXIT
mkdir -p "$work"
run_one() {
  local target="$1"
  mkdir -p "$work/$target"
  if cargo fuzz run -O "$target" "$work/$target" "corpus/$target" -- \
      -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 \
      >"$work/$target.log" 2>&1; then
    local done_line
    done_line="$(grep -E 'DONE' "$work/$target.log" | tail -1 || true)"
    echo "fuzz: $target ok: ${done_line:-no stats}"
  else
    echo "fuzz: $target FAILED (see $work/$target.log and fuzz/artifacts/$target/)"
    grep -E 'panicked|ERROR|SUMMARY' "$work/$target.log" | head -5
    return 1
  fi
}
status=0
running=0
pids=()
for target in "${targets[@]}"; do
  run_one "$target" &
  pids+=("$!")
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
    running=$((running - 1))
  fi
done
for pid in "${pids[@]}"; do
  wait "$pid" || status=1
done
exit "$status"
