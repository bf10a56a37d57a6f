#!/bin/bash
# Resuming gives the same losses as an uninterrupted run (--deterministic): after SIGTERM
# (checkpoint saved on the way out) and after kill -9 (the last periodic checkpoint).
. "$(dirname "$0")/lib.sh"
make_learnable_dataset "$work/data"
# Long enough (about ten seconds with one thread) that the signals land mid-run.
steps=120
common=(--model resnet20 --image-size 32 --batch-size 32 --data "$work/data/folder" --steps $steps --lr 0.4
        --deterministic --threads 1 --display-every $steps)

"$TRAIN" "${common[@]}" --log-dir "$work/whole" >"$work/whole.out" 2>&1 || fail "uninterrupted run failed"
losses_of "$work/whole/metrics.jsonl" >"$work/whole.txt"
[ "$(wc -l <"$work/whole.txt")" -eq $steps ] || fail "uninterrupted run logged $(wc -l <"$work/whole.txt") steps, not $steps"

# wait_for_step LOG N: until the run has logged step N
wait_for_step() {
    for _ in $(seq 1 600); do
        [ -f "$1" ] && [ "$(grep -c '"kind":"train"' "$1" 2>/dev/null)" -ge "$2" ] && return 0
        sleep 0.1
    done
    fail "the run never reached step $2"
}

check_same_losses() {  # NAME: the resumed run's losses equal the uninterrupted run's
    # The resumed run repeats the steps after its checkpoint: its records (the last) count.
    losses_of "$work/$1/metrics.jsonl" | awk '{last[$1] = $2} END {for (s in last) print s, last[s]}' |
        sort -n >"$work/$1.txt"
    local resumed_from; resumed_from=$(head -n 1 "$work/$1-resume.out" | sed -n 's/.* at step \([0-9]*\).*/\1/p')
    [ -n "$resumed_from" ] && [ "$resumed_from" -gt 0 ] || { cat "$work/$1-resume.out"; fail "$1: did not resume"; }
    awk -v from="$resumed_from" '$1 > from' "$work/whole.txt" >"$work/expected.txt"
    awk -v from="$resumed_from" '$1 > from' "$work/$1.txt" >"$work/got.txt"
    [ -s "$work/got.txt" ] || fail "$1: no steps after $resumed_from"
    diff "$work/expected.txt" "$work/got.txt" || fail "$1: losses after resuming at step $resumed_from differ"
    # Evaluation uses the running batch-norm statistics: they must have been restored too.
    [ "$(grep "^Accuracy" "$work/whole.out")" = "$(grep "^Accuracy" "$work/$1-resume.out")" ] ||
        fail "$1: final evaluation differs: $(grep "^Accuracy" "$work/whole.out") / $(grep "^Accuracy" "$work/$1-resume.out")"
    pass "$1: resumed at step $resumed_from, losses of steps $((resumed_from + 1))-$steps and the final evaluation identical"
}

# SIGTERM: the trainer saves and exits 75 (stopped early, to be resumed).
"$TRAIN" "${common[@]}" --log-dir "$work/term" --checkpoint-dir "$work/term-ckpt" >"$work/term.out" 2>&1 &
pid=$!
wait_for_step "$work/term/metrics.jsonl" 12
kill -TERM $pid
wait $pid
status=$?
[ $status -eq 75 ] || { cat "$work/term.out"; fail "SIGTERM: exit status $status (expected 75)"; }
grep -q "checkpoint saved" "$work/term.out" || { cat "$work/term.out"; fail "SIGTERM: no checkpoint saved"; }
"$TRAIN" "${common[@]}" --log-dir "$work/term" --checkpoint-dir "$work/term-ckpt" --resume >"$work/term-resume.out" 2>&1 ||
    { cat "$work/term-resume.out"; fail "resume after SIGTERM failed"; }
check_same_losses term

# SIGINT (Ctrl-C; scancel -s INT) is a stop like SIGTERM: a checkpoint and exit 75, and the
# last line and metrics.jsonl name the signal. A shell starts a background job with SIGINT
# ignored; env gives the trainer the default a terminal's foreground program has.
env --default-signal=INT "$TRAIN" "${common[@]}" --log-dir "$work/int" --checkpoint-dir "$work/int-ckpt" \
    >"$work/int.out" 2>&1 &
pid=$!
wait_for_step "$work/int/metrics.jsonl" 12
kill -INT $pid
wait $pid
status=$?
[ $status -eq 75 ] || { cat "$work/int.out"; fail "SIGINT: exit status $status (expected 75)"; }
grep -q "checkpoint saved" "$work/int.out" || { cat "$work/int.out"; fail "SIGINT: no checkpoint saved"; }
tail -n 1 "$work/int.out" | grep -q "^stopped by SIGINT at step [0-9]* of $steps: exit status 75" ||
    fail "SIGINT: the last line does not name the signal: $(tail -n 1 "$work/int.out")"
tail -n 1 "$work/int/metrics.jsonl" | grep -q '"kind":"stop".*"signal":"SIGINT"' ||
    fail "SIGINT: metrics.jsonl's last record does not name the signal: $(tail -n 1 "$work/int/metrics.jsonl")"
pass "SIGINT: checkpoint saved, exit 75, the last line and metrics.jsonl say SIGINT"

# A second SIGINT does not wait for the save: exit 130 at once, and the previous checkpoint
# (step 10, of --checkpoint-every) still resumes.
env --default-signal=INT "$TRAIN" "${common[@]}" --log-dir "$work/int2" --checkpoint-dir "$work/int2-ckpt" \
    --checkpoint-every 10 >"$work/int2.out" 2>&1 &
pid=$!
wait_for_step "$work/int2/metrics.jsonl" 12
kill -INT $pid
# Two signals pending at once are one: the second is sent once the first was delivered (a step
# takes about 0.1 s; the save starts after it).
for _ in $(seq 1 100); do
    grep -qE '^(Shd|Sig)Pnd:.*[2367abef]$' /proc/$pid/status 2>/dev/null || break
    sleep 0.001
done
kill -INT $pid
wait $pid
status=$?
[ $status -eq 130 ] || { cat "$work/int2.out"; fail "a second SIGINT: exit status $status (expected 130)"; }
grep -q "second SIGINT: exiting at once" "$work/int2.out" || { cat "$work/int2.out"; fail "a second SIGINT: no word of it"; }
"$TRAIN" "${common[@]}" --steps 11 --checkpoint-dir "$work/int2-ckpt" --resume >"$work/int2-resume.out" 2>&1 &&
    grep -q "resumed from .* at step 10 " "$work/int2-resume.out" ||
    { cat "$work/int2-resume.out"; fail "after a second SIGINT, the previous checkpoint (step 10) does not resume"; }
pass "a second SIGINT: exit 130 at once, the checkpoint of step 10 resumes"

# kill -9: nothing is saved on the way out; the last periodic checkpoint (step 20) is used.
"$TRAIN" "${common[@]}" --log-dir "$work/kill" --checkpoint-dir "$work/kill-ckpt" --checkpoint-every 10 \
    >"$work/kill.out" 2>&1 &
pid=$!
wait_for_step "$work/kill/metrics.jsonl" 25
kill -KILL $pid
wait $pid 2>/dev/null
ls "$work/kill-ckpt"/.checkpoint-* >/dev/null 2>&1 && echo "note: a temporary file was left by the killed run (ignored)"
"$TRAIN" "${common[@]}" --log-dir "$work/kill" --checkpoint-dir "$work/kill-ckpt" --resume >"$work/kill-resume.out" 2>&1 ||
    { cat "$work/kill-resume.out"; fail "resume after kill -9 failed"; }
check_same_losses kill

# A new run (no --resume) must not mix its checkpoints into another run's folder.
"$TRAIN" "${common[@]}" --steps 2 --checkpoint-dir "$work/kill-ckpt" >"$work/mix.out" 2>&1
[ $? -eq 1 ] && grep -q "already holds checkpoints.*--resume" "$work/mix.out" ||
    { cat "$work/mix.out"; fail "a fresh run in a used checkpoint folder was not refused"; }
"$TRAIN" "${common[@]}" --batch-size 8 --checkpoint-dir "$work/kill-ckpt" --resume >"$work/batch.out" 2>&1
[ $? -eq 1 ] && grep -q "global batch is 32, this run has 8" "$work/batch.out" ||
    { cat "$work/batch.out"; fail "resuming with another batch size was not refused"; }
pass "a used checkpoint folder needs --resume; resuming with another batch size is refused"
