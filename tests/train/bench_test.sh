#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# trellis-bench on this machine with the plain-environment wireup: allreduce checks its sums
# on 3 ranks and prints nccl-tests' table; p2p and ps print their JSON records, and --log-dir
# keeps them in bench.jsonl after a line describing the run; data (the input pipeline, one
# process) one JSON record per thread count.
. "$(dirname "$0")/lib.sh"
BENCH="$TRELLIS_BUILD/trellis-bench"

launch_ranks 3 "$work/bench.out" "$BENCH" allreduce --sizes 4K,1M,5M --iters 3
wait_ranks "$work/bench.out" "trellis-bench allreduce"
cat "$work/bench.out.0"
[ "$(grep -cE '^ +[0-9]+ +[0-9]+ +float +sum .* 0$' "$work/bench.out.0")" -eq 3 ] || fail "allreduce table incomplete or wrong sums"
grep -qE '^# +\(B\) +\(elements\) .*\(us\) +\(GB/s\) +\(GB/s\)' "$work/bench.out.0" &&
    grep -qE '^# Avg bus bandwidth +: [0-9.]+' "$work/bench.out.0" || fail "allreduce table lacks nccl-tests' units row or average"
TRELLIS_NUMA=0 launch_ranks 2 "$work/p2p.out" "$BENCH" p2p --sizes 8,64K,1M --iters 5 --json --log-dir "$work/log"
wait_ranks "$work/p2p.out" "trellis-bench p2p"
[ "$(grep -c '"benchmark":"p2p"' "$work/p2p.out.0")" -eq 3 ] || { cat "$work/p2p.out.0"; fail "p2p JSON incomplete"; }
launch_ranks 3 "$work/psb.out" "$BENCH" ps --sizes 64K,1M --iters 3 --json --transport tcp
wait_ranks "$work/psb.out" "trellis-bench ps"
[ "$(grep -c '"benchmark":"ps","transport":"tcp","workers":2,"servers":1' "$work/psb.out.0")" -eq 2 ] ||
    { cat "$work/psb.out.0"; fail "ps JSON incomplete"; }
pass "trellis-bench allreduce (3 ranks, sums checked), p2p and ps (JSON)"

# --log-dir: rank 0 appends to DIR/bench.jsonl a line describing the invocation, then the
# objects --json prints, with "kind":"result". A line cut short (kill -9) is left behind, and
# the next invocation's lines start on a fresh line.
printf '{"kind":"result","benchmark":"p2p","transp' >>"$work/log/bench.jsonl"
launch_ranks 2 "$work/ar2.out" "$BENCH" allreduce --sizes 4K,64K --iters 3 --json --transport tcp \
    --allreduce-algorithm ring --log-dir "$work/log"
wait_ranks "$work/ar2.out" "trellis-bench allreduce --log-dir"
"$PYTHON3" - "$work/log/bench.jsonl" "$work/p2p.out.0" "$work/ar2.out.0" <<'PY' || { cat "$work/log/bench.jsonl"; fail "bench.jsonl"; }
import sys
from trellis_studies.report.jsonl import read_jsonl, records_of
lines, notes = read_jsonl(sys.argv[1])
assert len(notes) == 1 and "cut short" in notes[0], notes
runs = [i for i, line in enumerate(lines) if line["kind"] == "run"]
assert runs == [0, 4], runs
for start, printed, expected in ((0, sys.argv[2], {"benchmark": "p2p", "transport": "shm", "algorithm": "",
                                                    "sizes": [8, 65536, 1048576], "iters": 5}),
                                 (4, sys.argv[3], {"benchmark": "allreduce", "transport": "tcp", "algorithm": "ring",
                                                   "sizes": [4096, 65536], "iters": 3})):
    run = lines[start]
    for field, value in dict(expected, ranks=2, nodes=1, ranks_per_node=2).items():
        assert run[field] == value, (field, run[field], value)
    assert run["hostname"] and run["time"] > 1.6e9, run
    assert run["binding"]["TRELLIS_RANK"] == "0" and run["binding"]["cpus"], run["binding"]
    assert "TRELLIS_MASTER" not in run["binding"], run["binding"]
    assert "TRELLIS_SECRET" not in run["binding"], run["binding"]
    assert (run["binding"].get("TRELLIS_NUMA") == "0") == (run["benchmark"] == "p2p"), run["binding"]
    results = records_of(printed)
    logged = lines[start + 1:start + 1 + len(results)]
    assert all(line.pop("kind") == "result" for line in logged), logged
    assert logged == results, (logged, results)
    print(run["benchmark"], "run line and", len(results), "results as --json printed them")
PY
pass "trellis-bench --log-dir: bench.jsonl has each invocation's run line and the --json results, after a cut line"

# The input pipeline alone: one JSON line per thread count; --data is required.
make_learnable_dataset "$work/data"
"$BENCH" data --data "$work/data/folder" --image-size 32 --batch-size 16 --threads 1,2 --iters 3 --json >"$work/data.out" ||
    { cat "$work/data.out"; fail "trellis-bench data"; }
"$PYTHON3" - "$work/data.out" <<'PY' || { cat "$work/data.out"; fail "trellis-bench data JSON"; }
import sys
from trellis_studies.report.jsonl import records_of
lines = records_of(sys.argv[1])
assert [r["threads"] for r in lines] == [1, 2] and all(r["images_per_sec"] > 0 for r in lines), lines
assert all(r["pixels"] == "floats" for r in lines), lines
PY
"$BENCH" data --data "$work/data/folder" --image-size 32 --batch-size 16 --threads 1 --iters 3 --pixels bytes --json \
    >"$work/bytes.out" || { cat "$work/bytes.out"; fail "trellis-bench data --pixels bytes"; }
grep -q '"pixels":"bytes"' "$work/bytes.out" || fail "--pixels bytes: $(cat "$work/bytes.out")"
"$BENCH" data >"$work/nodata.out" 2>&1
[ $? -eq 2 ] && grep -q "needs --data" "$work/nodata.out" || { cat "$work/nodata.out"; fail "data without --data"; }
pass "trellis-bench data: images/sec per thread count (JSON), floats or bytes; --data is required"

# Refusals that every rank meets alike come from rank 0 alone, every rank exiting 2: a size
# that is no whole number of float32 values (refused, not measured as the size below it) and
# an algorithm that this number of ranks cannot run.
# refused_once WHAT TEXT ARGS...: 3 ranks of trellis-bench ARGS; one line in all, rank 0's, with TEXT.
refused_once() {
    local what=$1 text=$2 pid status
    shift 2
    launch_ranks 3 "$work/refused.out" "$BENCH" "$@"
    for pid in "${rank_pids[@]}"; do
        wait "$pid"
        status=$?
        [ $status -eq 2 ] || { cat "$work/refused.out".*; fail "$what: a rank's exit status is $status, not 2"; }
    done
    [ "$(cat "$work/refused.out".* | wc -l)" -eq 1 ] && grep -qF -- "$text" "$work/refused.out.0" ||
        { head "$work/refused.out".*; fail "$what: wanted one line in all, rank 0's, with '$text'"; }
}
refused_once "allreduce --sizes 1001" "--sizes: 1001 bytes is no whole number of float32 values (allreduce moves them, 4 bytes each): give 1000 or 1004" \
    allreduce --sizes 1001 --iters 1
refused_once "ps --sizes 2" "give 4" ps --sizes 2 --iters 1
refused_once "halving-doubling on 3 ranks" "halving-doubling allreduce needs a power-of-two number of ranks, not 3" \
    allreduce --allreduce-algorithm halving-doubling --sizes 4K --iters 1
pass "sizes that are no whole float32 values and algorithms the rank count cannot run: one line, from rank 0, exit 2"

# p2p bandwidth has three significant digits, even for 8 bytes over TCP; --help names every benchmark.
launch_ranks 2 "$work/small.out" "$BENCH" p2p --sizes 8 --iters 5 --transport tcp
wait_ranks "$work/small.out" "trellis-bench p2p --sizes 8"
awk '$1 == 8 { b = $3; sub(/^[0.]+/, "", b); sub(/\./, "", b); digits = length(b) } END { exit !(digits >= 3) }' \
    "$work/small.out.0" || { cat "$work/small.out.0"; fail "p2p bandwidth of 8 bytes without three significant digits"; }
"$BENCH" --help | head -n 1 | grep -qF "usage: trellis-bench p2p|allreduce|ps|data [options]" ||
    fail "--help's usage line: $("$BENCH" --help | head -n 1)"
pass "p2p bandwidth of 8 bytes in three significant digits; --help's usage names data"

# The step's secret is in the ranks' environment only: no record, log or output of theirs holds it.
written=$(grep -rlF "$TRELLIS_SECRET" "$work" 2>/dev/null)
[ -z "$written" ] || fail "the step's secret was written to $written"
pass "the step's secret is in none of the files the runs wrote"
