#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The accuracy gate: trellis-train on a real dataset (Fashion-MNIST, Debian's
# dataset-fashion-mnist) must reach PyTorch's top-1 on the same recipe, so that a change that
# costs accuracy fails make check. PyTorch's side is a table of its seeds
# (tests/train/fashion_mnist_reference.tsv, written by fashion_mnist_reference.py, which names the
# recipe); trellis trains that recipe here on 3 seeds in one process, on 2 ranks with the
# allreduce and on 2 workers with a parameter server, at the same global batch, and
# accuracy_verdict.py judges each group against PyTorch's mean and spread.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/onednn_fault.sh"
here=$(cd "$(dirname "$0")" && pwd)
data=/usr/share/datasets/fashion-mnist
table=$here/fashion_mnist_reference.tsv
[ -e "$data/train-images-idx3-ubyte.gz" ] || { echo "SKIP: $data is not installed (apt-get install dataset-fashion-mnist)"; exit 77; }
if refusal=$(onednn_fault_refusal "$TRAIN"); then
    echo "SKIP: the trainer is refused on this CPU: $refusal"
    exit 77
fi
read -r -a recipe < <(sed -n 's/^# trellis-train //p' "$table")
[ ${#recipe[@]} -gt 0 ] || fail "$table names no recipe (a line '# trellis-train OPTIONS')"
steps=$(sed -nE 's/.*--steps ([0-9]+).*/\1/p' <<<"${recipe[*]}")
batch=$(sed -nE 's/.*--batch-size ([0-9]+).*/\1/p' <<<"${recipe[*]}")
common=(--data "idx:$data" "${recipe[@]}" --eval-every "$steps" --data-threads 1 --display-every 100000)
began=$SECONDS

# train NAME SEED RANKS TRAIN-ARGS...: one run, its metrics in $work/NAME/metrics.jsonl.
train() {
    local name=$1 seed=$2 ranks=$3
    shift 3
    if [ "$ranks" -eq 1 ]; then
        "$TRAIN" "${common[@]}" --seed "$seed" --log-dir "$work/$name" "$@" >"$work/$name.out" 2>&1 ||
            { cat "$work/$name.out"; fail "$name failed"; }
    else
        launch_ranks "$ranks" "$work/$name.out" "$TRAIN" "${common[@]}" --seed "$seed" --log-dir "$work/$name" "$@"
        wait_ranks "$work/$name.out" "$name"
    fi
}
for seed in 1 2 3; do train "local$seed" $seed 1 --threads 2; done
train allreduce 1 2 --batch-size $((batch / 2)) --threads 1 --strategy allreduce
train ps 1 3 --batch-size $((batch / 2)) --threads 1 --strategy ps --ps-servers 1

"$PYTHON3" "$here/accuracy_verdict.py" "$table" "one process=$work/local1/metrics.jsonl,$work/local2/metrics.jsonl,$work/local3/metrics.jsonl" \
    "allreduce, 2 ranks=$work/allreduce/metrics.jsonl" "parameter server, 2 workers=$work/ps/metrics.jsonl" \
    >"$work/verdict" 2>&1
status=$?
cat "$work/verdict"
[ $status -eq 0 ] || fail "trellis-train's top-1 on Fashion-MNIST is below PyTorch's on the same recipe (above)"
pass "Fashion-MNIST top-1 at PyTorch's on the recipe of $table, 5 runs in $((SECONDS - began)) s"
