# SPDX-License-Identifier: Apache-2.0
# Time budgets for the benchmarks, sourced by them: each side of a comparison trains for a
# number of seconds rather than steps, so that the whole of `make perf` takes about the same
# time on any of these machines' CPUs (a step count sized on an AVX-512 machine ran over 20
# minutes on an AVX2-only one, and CI allows 90 for everything).
# run_for SECONDS RSS_FILE COMMAND...: runs COMMAND (trellis-train with more steps than SECONDS
# allow) and, when SECONDS have passed, sends it SIGTERM: it finishes its step, writes its
# metrics and exits 75 (stopped early). Its peak resident memory in KiB is the last word of
# RSS_FILE. True when it finished or stopped so. (GNU time is outside timeout: the signal goes
# to timeout's process group, and would end a time inside it before its report.)
run_for() {
    local seconds=$1 rss=$2
    shift 2
    /usr/bin/time -f "%M" -o "$rss" timeout --preserve-status -s TERM -k 600 "$seconds" "$@"
    local status=$?
    [ $status = 0 ] || [ $status = 75 ]
}
