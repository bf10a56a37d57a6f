#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every model of tf_cnn_benchmarks' zoo trains, checkpoints and resumes in trellis-train, at
# small sizes (synthetic images at the smallest size the model takes, the Inceptions' 299
# for inception3, 10 classes, batch 2, 4 steps): the header names the model and its own
# image size, metrics.jsonl and the TensorBoard events carry its name, 2 steps then --resume
# to 4 give the losses of 4 steps in one go (dropout's masks included), and a synchronous
# parameter server (2 workers, 1 server, the server holding all of the model's parameters)
# trains it. TRELLIS_ZOO_MODELS names fewer models (distcheck checks alexnet).
. "$(dirname "$0")/../train/lib.sh"
for model in ${TRELLIS_ZOO_MODELS:-alexnet vgg16 googlenet inception3 inception4}; do
    case $model in alexnet) size=67 ;; vgg16) size=32 ;; googlenet) size=193 ;; inception3) size=299 ;; inception4) size=75 ;;
        *) fail "TRELLIS_ZOO_MODELS: unknown model $model (accepted: alexnet vgg16 googlenet inception3 inception4)" ;; esac
    common=(--model "$model" --image-size "$size" --num-classes 10 --batch-size 2 --lr 0.001 --deterministic
            --threads 2 --display-every 1)
    # The 4 steps in one go write no checkpoint: the model's are hundreds of MB.
    "$TRAIN" "${common[@]}" --steps 4 --log-dir "$work/$model-whole" \
        >"$work/$model-whole.out" 2>&1 || { cat "$work/$model-whole.out"; fail "$model: training failed"; }
    case $model in alexnet) own=227 ;; inception*) own=299 ;; *) own=224 ;; esac
    [ "$size" = "$own" ] && expected="${size}x$size images)" || expected="${size}x$size images; the model's own size is $own)"
    grep -q "^Model: *$model (.* classes, $expected" "$work/$model-whole.out" ||
        { head -n 3 "$work/$model-whole.out"; fail "$model: the header does not say '$expected'"; }
    [ "$(run_fields "$work/$model-whole/metrics.jsonl" model)" = "$model" ] || fail "$model: not named in metrics.jsonl"
    grep -aq "$model" "$work/$model-whole"/events.out.tfevents.* || fail "$model: not named in the TensorBoard events"
    losses_of "$work/$model-whole/metrics.jsonl" >"$work/$model-whole.txt"

    "$TRAIN" "${common[@]}" --steps 2 --checkpoint-dir "$work/$model-b" --checkpoint-every 2 --log-dir "$work/$model-first" \
        >"$work/$model-first.out" 2>&1 || { cat "$work/$model-first.out"; fail "$model: the first half failed"; }
    "$TRAIN" "${common[@]}" --steps 4 --checkpoint-dir "$work/$model-b" --resume --log-dir "$work/$model-resumed" \
        >"$work/$model-resumed.out" 2>&1 || { cat "$work/$model-resumed.out"; fail "$model: resuming failed"; }
    grep -q "at step 2" "$work/$model-resumed.out" || { head -n 2 "$work/$model-resumed.out"; fail "$model: did not resume at step 2"; }
    losses_of "$work/$model-resumed/metrics.jsonl" | awk '$1 > 2' >"$work/$model-resumed.txt"
    awk '$1 > 2' "$work/$model-whole.txt" | diff - "$work/$model-resumed.txt" >/dev/null ||
        fail "$model: steps 3-4 after resuming differ: $(paste -d ' ' "$work/$model-whole.txt" "$work/$model-resumed.txt" | tr '\n' ';')"

    launch_ranks 3 "$work/$model-ps.out" "$TRAIN" "${common[@]}" --threads 1 --steps 2 --strategy ps \
        --checkpoint-dir "$work/$model-ps"
    wait_ranks "$work/$model-ps.out" "$model with a parameter server"
    grep -q "parameter server 0 (rank 2" "$work/$model-ps.out.2" || { cat "$work/$model-ps.out.2"; fail "$model: rank 2 did not serve"; }
    ls "$work/$model-ps/server-0/checkpoint-2.trellis" >/dev/null || fail "$model: the server saved no shard"
    pass "$model at ${size}x$size: trains, resumes to the same losses (steps 3-4: $(awk '$1 > 2 {printf "%s ", $2}' "$work/$model-resumed.txt")), serves from a parameter server"
    rm -rf "${work:?}/$model"-*
done
