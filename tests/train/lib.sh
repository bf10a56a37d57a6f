# SPDX-License-Identifier: Apache-2.0
# Shared by the trainer's end-to-end tests: paths, a scratch folder removed on exit, the
# generated dataset, and failure reporting.
set -u
# The programs under test: the build tree's under make check, or TRELLIS_BIN's (the bin/ of
# scripts/gpu-bundle's bundle, on the GPU machine, where PYTHON3 is not given either).
if [ -n "${TRELLIS_BIN:-}" ]; then
    TRAIN="$TRELLIS_BIN/trellis-train"
    MAKE_DATASET="$TRELLIS_BIN/make_dataset"
else
    TRAIN="$TRELLIS_BUILD/trellis-train"
    MAKE_DATASET="$TRELLIS_BUILD/tests/data/make_dataset"
fi
: "${PYTHON3:=python3}"
# The tests read the runs' JSON-lines files with trellis_studies.report.jsonl, the one reader
# (a GPU bundle's tests read none, and have no studies/ beside them).
studies=${TRELLIS_STUDIES_PYTHON:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../studies" 2>/dev/null && pwd)}
[ -z "$studies" ] || export PYTHONPATH=$studies${PYTHONPATH:+:$PYTHONPATH}
work=$(mktemp -d /tmp/trellis-train-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok: $*"; }

# make_learnable_dataset DIR: 10 classes of 64x64 JPEGs as a folder tree and TFRecord shards.
make_learnable_dataset() {
    "$MAKE_DATASET" --out "$1" --classes 10 --train-per-class 100 --val-per-class 20 --size 64 --seed 3 --shards 4 \
        >/dev/null || fail "make_dataset failed"
}

# The train losses of a metrics.jsonl, one "step loss" per line.
losses_of() {
    "$PYTHON3" -c '
import sys
from trellis_studies.report.jsonl import records_of
for r in records_of(sys.argv[1], "train"):
    if "loss" in r:
        print(r["step"], repr(float(r["loss"])))' "$1"
}

free_port() { "$PYTHON3" "$(dirname "${BASH_SOURCE[0]}")/../free_port.py"; }

# The step's secret for ranks started here as a launcher would start them: one per test.
TRELLIS_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export TRELLIS_SECRET

# launch_ranks N OUTPREFIX ARGS...: N ranks of a program with the plain-environment wireup on
# this machine, meeting at a free port, in the background; their PIDs in $rank_pids.
launch_ranks() {
    local n=$1 prefix=$2 port
    shift 2
    port=$(free_port)
    rank_pids=()
    for ((r = 0; r < n; r++)); do
        TRELLIS_RANK=$r TRELLIS_WORLD_SIZE=$n TRELLIS_MASTER=127.0.0.1:$port "$@" >"$prefix.$r" 2>&1 &
        rank_pids+=($!)
    done
}

# wait_ranks OUTPREFIX WHAT: every rank of the last launch must succeed; else their output
# and a failure naming WHAT.
wait_ranks() {
    local pid
    for pid in "${rank_pids[@]}"; do wait "$pid" || { cat "$1".*; fail "a rank of $2 failed"; }; done
}

# run_fields METRICS.jsonl FIELD...: the run record's fields, space-separated ("-" when absent).
run_fields() {
    "$PYTHON3" - "$@" <<'PY'
import sys
from trellis_studies.report.jsonl import records_of
run = next(iter(records_of(sys.argv[1], "run")), {})
print(" ".join(str(run.get(field, "-")) for field in sys.argv[2:]))
PY
}

# mean_relative_difference A.jsonl B.jsonl STEPS: of the train losses of two runs.
mean_relative_difference() {
    "$PYTHON3" - "$1" "$2" "$3" <<'PY'
import sys
from trellis_studies.report.jsonl import records_of
def losses(path):
    return {r["step"]: r["loss"] for r in records_of(path, "train") if "loss" in r}
a, b, steps = losses(sys.argv[1]), losses(sys.argv[2]), int(sys.argv[3])
print(sum(abs(a[s] - b[s]) / a[s] for s in range(1, steps + 1)) / steps)
PY
}
