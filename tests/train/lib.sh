# Shared by the trainer's end-to-end tests: paths, a scratch folder removed on exit, the
# generated dataset, and failure reporting.
set -u
TRAIN="$TRELLIS_BUILD/trellis-train"
MAKE_DATASET="$TRELLIS_BUILD/tests/data/make_dataset"
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
import json, sys
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:  # a line cut short by kill -9
        continue
    if r["kind"] == "train" and "loss" in r:
        print(r["step"], repr(r["loss"]))' "$1"
}
