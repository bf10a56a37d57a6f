# SPDX-License-Identifier: Apache-2.0
# Time budgets and sizes for the benchmarks, sourced by them. Time: each side of a comparison
# trains for a number of seconds rather than steps, so that the whole of `make perf` takes
# about the same time on any of these machines' CPUs (a step count sized on an AVX-512 machine
# ran over 20 minutes on an AVX2-only one, and CI allows 90 for everything).
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

# The size of a run, TRELLIS_PERF_SIZE: "whole" (or unset) is the full comparison; "smallest"
# runs each side of each comparison once, at the smallest model, batch, message size and rank
# count the benchmark already uses, with the fewest warm-up and timed steps that still give a
# figure: every benchmark, its peer and its ratio in a few minutes together, so that none rots
# between the whole runs. Its figures are single samples: a verdict that such a sample cannot
# carry (a 1% difference, a threshold no short run reaches) is printed as not judged.
case ${TRELLIS_PERF_SIZE:-whole} in
whole | smallest) ;;
*) echo "TRELLIS_PERF_SIZE: \"whole\" or \"smallest\", not \"$TRELLIS_PERF_SIZE\"" >&2; exit 2 ;;
esac
perf_smallest() { [ "${TRELLIS_PERF_SIZE:-whole}" = smallest ]; }
