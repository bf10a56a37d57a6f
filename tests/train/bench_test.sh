#!/bin/bash
# trellis-bench on this machine with the plain-environment wireup: allreduce checks its sums
# on 3 ranks and prints nccl-tests' table; p2p and ps print their JSON records.
. "$(dirname "$0")/lib.sh"
BENCH="$TRELLIS_BUILD/trellis-bench"

launch_ranks 3 "$work/bench.out" "$BENCH" allreduce --sizes 4K,1M,5M --iters 3
wait_ranks "$work/bench.out" "trellis-bench allreduce"
cat "$work/bench.out.0"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' "$work/bench.out.0")" -eq 3 ] || fail "allreduce table incomplete or wrong sums"
grep -qE '^# +\(B\) +\(elements\) .*\(us\) +\(GB/s\) +\(GB/s\)' "$work/bench.out.0" &&
    grep -qE '^# Avg bus bandwidth +: [0-9.]+' "$work/bench.out.0" || fail "allreduce table lacks nccl-tests' units row or average"
launch_ranks 2 "$work/p2p.out" "$BENCH" p2p --sizes 8,64K,1M --iters 5 --json
wait_ranks "$work/p2p.out" "trellis-bench p2p"
[ "$(grep -c '"benchmark":"p2p"' "$work/p2p.out.0")" -eq 3 ] || { cat "$work/p2p.out.0"; fail "p2p JSON incomplete"; }
launch_ranks 3 "$work/psb.out" "$BENCH" ps --sizes 64K,1M --iters 3 --json
wait_ranks "$work/psb.out" "trellis-bench ps"
[ "$(grep -c '"benchmark":"ps","transport":"tcp","workers":2,"servers":1' "$work/psb.out.0")" -eq 2 ] ||
    { cat "$work/psb.out.0"; fail "ps JSON incomplete"; }
pass "trellis-bench allreduce (3 ranks, sums checked), p2p and ps (JSON)"
