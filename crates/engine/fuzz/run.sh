#!/usr/bin/env bash
# run.sh runs each fuzz target for RUNS executions (default 10 million), one job, from the
# checked-in seeds with a fixed seed, and prints what docs/benchmarks.md records: date, load
# average, commit, the exact command, executions, wall time and crashes.
#
# usage: crates/engine/fuzz/run.sh [RUNS] [TARGET...]   (needs nightly and cargo-fuzz)
set -euo pipefail
cd "$(dirname "$0")"
runs="${1:-10000000}"
[ $# -gt 0 ] && shift
if [ $# -gt 0 ]; then targets=("$@"); else targets=(response chunked); fi

echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- ../src ../Cargo.toml . || echo ' (+ uncommitted changes)')"
echo "$(rustc +nightly --version), $(cargo fuzz --version)"
if ! built="$(cargo +nightly fuzz build 2>&1)"; then
    echo "$built" | tail -n 30
    exit 1
fi
for t in "${targets[@]}"; do
    rm -rf "corpus/$t" "artifacts/$t"
    mkdir -p "corpus/$t"
    cmd="cargo +nightly fuzz run $t corpus/$t seeds/$t -- -dict=http.dict -runs=$runs -seed=1 -print_final_stats=1"
    log="$(mktemp)"
    start_date="$(date -u '+%Y-%m-%d %H:%M UTC')"
    load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
    t0="$(date +%s.%N)"
    rc=0
    $cmd >"$log" 2>&1 || rc=$?
    t1="$(date +%s.%N)"
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
    crashes="$(find "artifacts/$t" -type f 2>/dev/null | wc -l)"
    echo "target $t: $start_date, load average ${load_before} at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
    echo "  \$ cd crates/engine/fuzz && $cmd"
    printf '  executions %s, %.0f s wall, %s exec/s, exit %s, crashes %s\n' \
        "${execs:-?}" "$(echo "$t1 - $t0" | bc)" "${rate:-?}" "$rc" "$crashes"
    if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
        tail -n 30 "$log"
    fi
    rm -f "$log"
done
