#!/usr/bin/env bash
# run.sh runs each fuzz target for RUNS executions (default 10 million), one job, from the
# checked-in seeds with a fixed seed, prints the figures docs/benchmarks.md cites (exact
# command, executions, wall time, crashes per target) and appends them, with the date, load
# average and commit, to bench/results/fuzz.md as the bench scripts do (bench/record.py).
#
# usage: crates/engine/fuzz/run.sh [RUNS] [TARGET...]   (needs nightly and cargo-fuzz)
set -euo pipefail
cd "$(dirname "$0")"
root="$(git rev-parse --show-toplevel)"
results="${FUZZ_RESULTS:-$root/bench/results/fuzz.md}"
runs="${1:-10000000}"
[ $# -gt 0 ] && shift
if [ $# -gt 0 ]; then targets=("$@"); else targets=(response chunked); fi

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
started="$(date -u '+%Y-%m-%d %H:%M UTC')"
load_start="$(loadavg)"
commit="$(git rev-parse --short HEAD)"
# The targets exercise http.rs only; other uncommitted edits in the tree do not reach them.
git diff --quiet HEAD -- ../src/http.rs . || commit="$commit+dirty (http.rs or fuzz/)"

if ! built="$(cargo +nightly fuzz build 2>&1)"; then
    echo "$built" | tail -n 30
    exit 1
fi
body="$(rustc +nightly --version), $(cargo fuzz --version), one job, ASan (cargo fuzz's default)"$'\n'
failed=0
for t in "${targets[@]}"; do
    rm -rf "corpus/$t" "artifacts/$t"
    mkdir -p "corpus/$t"
    cmd="cargo +nightly fuzz run $t corpus/$t seeds/$t -- -dict=http.dict -runs=$runs -seed=1 -print_final_stats=1"
    log="$(mktemp)"
    t0="$(date +%s.%N)"
    rc=0
    $cmd >"$log" 2>&1 || rc=$?
    t1="$(date +%s.%N)"
    execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
    rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")"
    crashes="$(find "artifacts/$t" -type f 2>/dev/null | wc -l)"
    line="$(printf -- '- `%s`: %s executions, %.0f s wall, %s exec/s, exit %s, %s crashes (load average %s at its end)' \
        "$t" "${execs:-?}" "$(echo "$t1 - $t0" | bc)" "${rate:-?}" "$rc" "$crashes" "$(loadavg)")"
    echo "$line"
    body+=$'\n'"$line"$'\n'"  \`cd crates/engine/fuzz && $cmd\`"
    if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
        failed=1
        tail -n 30 "$log"
    fi
    rm -f "$log"
done

mkdir -p "$(dirname "$results")"
if [ ! -s "$results" ]; then
    printf '# fuzz: fuzzing results\n\nAppended by crates/engine/fuzz/run.sh, newest last. Cite an entry by its heading.\n\n' >"$results"
fi
{
    echo "## $started: fuzz targets, $runs executions each"
    echo
    echo "- command: \`crates/engine/fuzz/run.sh $runs ${targets[*]}\`"
    echo "- commit: $commit"
    echo "- load average: $load_start at the start, $(loadavg) at the end ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo "- machine: $(nproc) cores, $(uname -s) $(uname -r)"
    echo
    echo "$body"
    echo
} >>"$results"
echo "appended to ${results#"$root"/}"
exit "$failed"
