#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The parameter server on this machine with the plain-environment wireup: the synchronous one
# equals the allreduce (its server never opens the dataset), takes bf16 pushes, and resumes from its checkpoints (the servers' shards beside rank 0's)
# to the same losses; the asynchronous one learns.
. "$(dirname "$0")/lib.sh"
make_learnable_dataset "$work/data"
common=(--model resnet8 --image-size 32 --data "$work/data/folder" --steps 5 --lr 0.05 --deterministic
        --threads 1 --data-threads 1 --display-every 5)

launch_ranks 2 "$work/two.out" "$TRAIN" "${common[@]}" --batch-size 16 --log-dir "$work/two"
wait_ranks "$work/two.out" "the 2-rank allreduce run"

# Synchronous parameter server (2 workers, 1 server) against the 2-rank allreduce: the same
# average of the same gradients, applied by the server: the same losses to float rounding.
# The server (rank 2) is given a dataset that does not exist, as on a node without the
# workers' file systems: servers never open the data.
where_data=(sh -c 'if [ "$TRELLIS_RANK" = 2 ]; then exec "$0" "$@" --data /nonexistent; else exec "$0" "$@"; fi' "$TRAIN")
launch_ranks 3 "$work/ps.out" "${where_data[@]}" "${common[@]}" --batch-size 16 --strategy ps --transport tcp \
    --log-dir "$work/ps"
wait_ranks "$work/ps.out" "the PS run (its server without the dataset)"
fields=$(run_fields "$work/ps/metrics.jsonl" strategy ps_mode transport ranks workers servers ps_servers algorithm nodes ranks_per_node)
[ "$fields" = "ps sync tcp 3 2 1 1  1 3" ] ||
    fail "the run record says '$fields', not synchronous PS over tcp with 2 workers and 1 server, no allreduce, 3 ranks on 1 node"
grep -q "parameter server 0 (rank 2" "$work/ps.out.2" || { cat "$work/ps.out.2"; fail "rank 2 did not serve"; }
ps_difference=$(mean_relative_difference "$work/two/metrics.jsonl" "$work/ps/metrics.jsonl" 5)
"$PYTHON3" -c "import sys; sys.exit(0 if $ps_difference < 1e-4 else 1)" ||
    fail "synchronous PS differs from the allreduce by $ps_difference"
pass "synchronous PS (2 workers + 1 server) equals the 2-rank allreduce ($ps_difference)"

# bf16 pushes (--compress): the workers send half the bytes, the server widens them before
# averaging; the parameters come back in f32. The losses stay within 1% of the f32 pushes'.
launch_ranks 3 "$work/ps-bf16.out" "$TRAIN" "${common[@]}" --batch-size 16 --strategy ps --compress bf16 --log-dir "$work/ps-bf16"
wait_ranks "$work/ps-bf16.out" "the PS run with bf16 pushes"
[ "$(run_fields "$work/ps-bf16/metrics.jsonl" strategy compression)" = "ps bf16" ] ||
    fail "the run record of the PS run with bf16 pushes does not say so"
grep -q "2 workers, 1 server, bf16 pushes" "$work/ps-bf16.out.0" || fail "the strategy line does not name bf16 pushes: $(grep -m1 strategy "$work/ps-bf16.out.0")"
bf16_difference=$(mean_relative_difference "$work/ps/metrics.jsonl" "$work/ps-bf16/metrics.jsonl" 5)
"$PYTHON3" -c "import sys; sys.exit(0 if $bf16_difference < 0.01 else 1)" ||
    fail "bf16 pushes change the parameter server's losses by $bf16_difference"
pass "synchronous PS with bf16 pushes: losses within 1% of f32 pushes ($bf16_difference)"

# Synchronous PS with checkpoints: the servers save their shards (weights and optimizer
# state) beside rank 0's checkpoint; 3 steps, then --resume to 6, give the losses of 6 steps
# in one go.
ps_ckpt=("${common[@]}" --batch-size 16 --strategy ps --checkpoint-every 3)
launch_ranks 3 "$work/psc-full.out" "$TRAIN" "${ps_ckpt[@]}" --steps 6 --checkpoint-dir "$work/psc-a" \
    --log-dir "$work/psc-full"
wait_ranks "$work/psc-full.out" "the checkpointed PS run"
ls "$work/psc-a/server-0/checkpoint-6.trellis" "$work/psc-a/checkpoint-6.trellis" >/dev/null ||
    { ls -R "$work/psc-a"; fail "no server or rank 0 checkpoint at step 6"; }
launch_ranks 3 "$work/psc-first.out" "$TRAIN" "${ps_ckpt[@]}" --steps 3 --checkpoint-dir "$work/psc-b" \
    --log-dir "$work/psc-first"
wait_ranks "$work/psc-first.out" "the first half of the PS run"
launch_ranks 3 "$work/psc-resumed.out" "$TRAIN" "${ps_ckpt[@]}" --steps 6 --checkpoint-dir "$work/psc-b" \
    --resume --log-dir "$work/psc-resumed"
wait_ranks "$work/psc-resumed.out" "the resumed PS run"
grep -q "parameter server 0: resumed its shard from step 3" "$work/psc-resumed.out.2" ||
    { cat "$work/psc-resumed.out.2"; fail "the server did not resume its shard"; }
"$PYTHON3" - "$work/psc-full/metrics.jsonl" "$work/psc-resumed/metrics.jsonl" <<'PY' ||
import sys
from trellis_studies.report.jsonl import records_of
def losses(path):
    return {r["step"]: r["loss"] for r in records_of(path, "train") if "loss" in r}
full, resumed = losses(sys.argv[1]), losses(sys.argv[2])
print("steps 4-6, uninterrupted:", [full[s] for s in (4, 5, 6)], "resumed:", [resumed[s] for s in (4, 5, 6)])
sys.exit(0 if all(full[s] == resumed[s] for s in (4, 5, 6)) else 1)
PY
    fail "the resumed PS run's losses differ from the uninterrupted run's"
pass "synchronous PS checkpoints: servers save their shards, resuming at step 3 repeats steps 4-6 exactly"
out=$("$TRAIN" "${common[@]}" --strategy ps --ps-mode async --checkpoint-dir "$work/x" 2>&1) &&
    fail "async PS with --checkpoint-dir was accepted" || echo "$out" | grep -q "needs --ps-mode sync" ||
    fail "async PS with --checkpoint-dir: $out"

# Asynchronous parameter server, 2 workers and 2 servers, learns the generated dataset.
launch_ranks 4 "$work/async.out" "$TRAIN" --model resnet8 --image-size 32 --data "$work/data/folder" \
    --batch-size 32 --steps 150 --lr 0.4 --threads 1 --display-every 50 --strategy ps --ps-servers 2 --ps-mode async
wait_ranks "$work/async.out" "the async PS run"
top1=$(sed -n 's/^Accuracy @ 1 = \([0-9.]*\).*/\1/p' "$work/async.out.0" | tail -n 1)
"$PYTHON3" -c "import sys; sys.exit(0 if ${top1:-0} >= 0.6 else 1)" || { cat "$work/async.out.0"; fail "async PS top-1 ${top1:-none} < 0.6"; }
pass "asynchronous PS (2 workers, 2 servers) reaches top-1 $top1 >= 0.6 in 150 steps per worker"
