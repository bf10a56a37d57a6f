#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A short run on a real dataset: Fashion-MNIST (Debian's dataset-fashion-mnist) with 2 ranks,
# evaluated on its 10,000 test images every 40 steps until top-1 reaches 0.70. The test
# checks that every test image is counted, that the run stopped at the target, and that the
# time-to-accuracy records and table agree with the evaluations.
. "$(dirname "$0")/lib.sh"
data=/usr/share/datasets/fashion-mnist
[ -e "$data/train-images-idx3-ubyte.gz" ] || { echo "SKIP: $data is not installed (apt-get install dataset-fashion-mnist)"; exit 77; }

launch_ranks 2 "$work/out" "$TRAIN" --data "idx:$data" --model resnet8 --image-size 28 --batch-size 32 --lr 0.4 \
    --steps 400 --eval-every 40 --target-accuracy 0.70 --threads 1 --data-threads 1 --display-every 40 \
    --log-dir "$work/log"
wait_ranks "$work/out" "the Fashion-MNIST run"
"$PYTHON3" - "$work/log/metrics.jsonl" <<'PY' || { cat "$work/out.0"; fail "the evaluations and time-to-accuracy records disagree"; }
import sys
from trellis_studies.report.jsonl import records_of
records = records_of(sys.argv[1])
evals = [r for r in records if r["kind"] == "eval"]
times = [r for r in records if r["kind"] == "time_to_accuracy"]
assert all(r["examples"] == 10000 for r in evals), [r["examples"] for r in evals]
last = evals[-1]
assert last["top1"] >= 0.70 and all(r["top1"] < 0.70 for r in evals[:-1]), [r["top1"] for r in evals]
assert last["step"] < 400, "did not stop at the target"
first = next(r for r in times if r.get("top1_level") == 0.7)
assert first["step"] == last["step"] and abs(first["seconds"] - last["seconds"]) < 1e-6, first
print(f"top-1 {last['top1']:.4f} at step {last['step']} after {last['seconds']:.1f} s; "
      f"{len(evals)} evaluations of 10000 images")
PY
grep -q "reached the target 0.7000 at step" "$work/out.0" || fail "no line saying the target stopped the run"
grep -qE "^  0\.70 +[0-9.]+ s \(step [0-9]+\) +[0-9.]+ s \(step [0-9]+\)" "$work/out.0" ||
    { grep -A20 "Time to accuracy" "$work/out.0"; fail "no time-to-accuracy line for 0.70 with both accuracies"; }
pass "Fashion-MNIST, 2 ranks: stopped at top-1 0.70 with all 10,000 test images counted; time to accuracy recorded"
