#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
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
    local whole_final resumed_final
    whole_final=$(grep "^Accuracy" "$work/whole.out" | tail -n 1)
    resumed_final=$(grep "^Accuracy" "$work/$1-resume.out" | tail -n 1)
    [ "$whole_final" = "$resumed_final" ] || fail "$1: final evaluation differs: $whole_final / $resumed_final"
    pass "$1: resumed at step $resumed_from, losses of steps $((resumed_from + 1))-$steps and the final evaluation identical"
}

# stopped_by SIGNAL NAME [OPTION...]: a run logging to $work/NAME gets SIGNAL at step 12, saves a
# checkpoint and exits 75. A shell starts a background job with SIGINT ignored; env gives the
# trainer the default a terminal's foreground program has.
stopped_by() {
    local signal=$1 name=$2 status
    shift 2
    env --default-signal=INT "$TRAIN" "${common[@]}" "$@" --log-dir "$work/$name" --checkpoint-dir "$work/$name-ckpt" \
        >"$work/$name.out" 2>&1 &
    pid=$!
    wait_for_step "$work/$name/metrics.jsonl" 12
    kill -"$signal" $pid
    wait $pid
    status=$?
    [ $status -eq 75 ] || { cat "$work/$name.out"; fail "SIG$signal: exit status $status (expected 75)"; }
    grep -q "checkpoint saved" "$work/$name.out" || { cat "$work/$name.out"; fail "SIG$signal: no checkpoint saved"; }
}

# SIGTERM: the trainer saves and exits 75 (stopped early, to be resumed). It evaluates every
# 10 steps, so that the first segment reaches levels of the time-to-accuracy table (top-5 0.50
# of 10 classes at the latest).
stopped_by TERM term --eval-every 10
"$TRAIN" "${common[@]}" --eval-every 10 --log-dir "$work/term" --checkpoint-dir "$work/term-ckpt" --resume \
    >"$work/term-resume.out" 2>&1 || { cat "$work/term-resume.out"; fail "resume after SIGTERM failed"; }
check_same_losses term

# The resumed run's time-to-accuracy table keeps what the first segment reached, at its step
# and seconds; metrics.jsonl's records say their segment, and train_seconds runs on across it.
"$PYTHON3" - "$work/term/metrics.jsonl" "$work/term-resume.out" <<'PY' || fail "SIGTERM: the history did not survive the resume"
import re, sys
from trellis_studies.report.jsonl import records_of
records = records_of(sys.argv[1])
first = [r for r in records if r["kind"] == "time_to_accuracy" and r.get("segment") == 1]
if not first:
    sys.exit("the first segment reached no level (or its records have no segment 1)")
table = {}
for line in open(sys.argv[2]):
    cells = re.match(r"  (0\.\d\d) +(.+?s \(step \d+\)|-) +(.+?s \(step \d+\)|-)$", line.rstrip())
    if cells:
        table[("top5", float(cells[1]))], table[("top1", float(cells[1]))] = cells[2], cells[3]
for r in first:
    metric = "top5" if "top5_level" in r else "top1"
    level = r[metric + "_level"]
    expected = "%.1f s (step %d)" % (r["seconds"], r["step"])
    if table.get((metric, level)) != expected:
        sys.exit("%s %.2f: the first segment reached it %s, the final table says %s" % (metric, level, expected, table.get((metric, level))))
print("first segment's levels in the final table:", ", ".join("%s %.2f at step %d" % ("top5" if "top5_level" in r else "top1", r.get("top5_level", r.get("top1_level")), r["step"]) for r in first))
segments = [r.get("segment") for r in records if r["kind"] == "train"]
if sorted(set(segments)) != [1, 2]:
    sys.exit("train records' segments: %s (expected 1 and 2)" % sorted(set(map(str, segments))))
# The first segment's records up to its checkpoint (its "stop" record comes after the save).
last_of_first = max(r["train_seconds"] for r in records if r.get("segment") == 1 and r["kind"] != "stop")
first_of_second = min(r["train_seconds"] for r in records if r.get("segment") == 2)
if first_of_second < last_of_first:
    sys.exit("train_seconds went back from %.3f to %.3f at the resume" % (last_of_first, first_of_second))
PY
pass "SIGTERM: the resumed table keeps the first segment's steps and seconds; segment and train_seconds carry on"

# SIGINT (Ctrl-C; scancel -s INT) is a stop like SIGTERM: a checkpoint and exit 75, and the
# last line and metrics.jsonl name the signal; the stop record has the peak memory, as a
# finished run's last train record does.
stopped_by INT int
tail -n 1 "$work/int.out" | grep -q "^stopped by SIGINT at step [0-9]* of $steps: exit status 75" ||
    fail "SIGINT: the last line does not name the signal: $(tail -n 1 "$work/int.out")"
tail -n 1 "$work/int/metrics.jsonl" | grep -q '"kind":"stop","peak_rss_bytes":[1-9][0-9]\{6,\},.*"signal":"SIGINT"' ||
    fail "SIGINT: metrics.jsonl's last record does not name the signal and the peak memory: $(tail -n 1 "$work/int/metrics.jsonl")"
pass "SIGINT: checkpoint saved, exit 75, the last line and metrics.jsonl say SIGINT (and the peak memory)"

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

# An evaluation abandoned on a signal is redone first when the run resumes. With an evaluation
# after every step, a signal during a step reaches the evaluation that follows it; one that
# lands after an evaluation's last batch is taken at the next step's start instead, with
# nothing abandoned (correct, and not this case): the run is tried again, up to 4 times.
small=(--model resnet8 --eval-every 1 --checkpoint-dir "$work/eval-ckpt")
for attempt in 1 2 3 4; do
    rm -rf "$work/eval" "$work/eval-ckpt"
    "$TRAIN" "${common[@]}" "${small[@]}" --log-dir "$work/eval" >"$work/eval.out" 2>&1 &
    pid=$!
    wait_for_step "$work/eval/metrics.jsonl" 3
    kill -TERM $pid
    wait $pid
    status=$?
    abandoned=$(sed -n 's/^evaluation of step \([0-9]*\) abandoned.*/\1/p' "$work/eval.out")
    [ $status -ne 75 ] || [ -n "$abandoned" ] && break
    echo "attempt $attempt: the signal came after an evaluation's last batch: $(grep '^received' "$work/eval.out")"
done
[ $status -eq 75 ] && [ -n "$abandoned" ] ||
    { cat "$work/eval.out"; fail "a signal before an evaluation: exit status $status, no evaluation abandoned"; }
"$TRAIN" "${common[@]}" "${small[@]}" --steps $((abandoned + 1)) --log-dir "$work/eval" --resume \
    >"$work/eval-resume.out" 2>&1 || { cat "$work/eval-resume.out"; fail "resume after an abandoned evaluation failed"; }
grep -q "redoing the evaluation of step $abandoned" "$work/eval-resume.out" ||
    { cat "$work/eval-resume.out"; fail "the evaluation of step $abandoned abandoned on SIGTERM was not redone"; }
grep -q "\"kind\":\"eval\".*\"segment\":2,\"step\":$abandoned," "$work/eval/metrics.jsonl" ||
    fail "metrics.jsonl has no evaluation of step $abandoned in segment 2"
pass "the evaluation of step $abandoned, abandoned on SIGTERM, is redone on resuming"

# A checkpoint written before the history was recorded (the same file without its fields)
# still resumes, saying that the times before it are not known.
mkdir "$work/old-ckpt"
newest=$(ls "$work/eval-ckpt" | sort -t- -k2 -n | tail -n 1)
"$PYTHON3" - "$work/eval-ckpt/$newest" "$work/old-ckpt/$newest" <<'PY' || fail "could not write an old-format checkpoint"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
magic = b"TRELLIS-CHECKPOINT 1\n"
length = struct.unpack_from("<Q", data, len(magic))[0]
header = json.loads(data[len(magic) + 8:len(magic) + 8 + length])
for key in ("train_seconds", "segment", "levels", "pending_eval"):
    header.pop(key, None)
text = json.dumps(header).encode()
body = magic + struct.pack("<Q", len(text)) + text + data[len(magic) + 8 + length:-4]
table = []
for n in range(256):  # CRC-32C (Castagnoli), reflected
    c = n
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    table.append(c)
crc = 0xFFFFFFFF
for b in body:
    crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
open(sys.argv[2], "wb").write(body + struct.pack("<I", crc ^ 0xFFFFFFFF))
PY
old_step=${newest//[!0-9]/}
"$TRAIN" "${common[@]}" --model resnet8 --steps $((old_step + 1)) --checkpoint-dir "$work/old-ckpt" --resume \
    >"$work/old.out" 2>&1 || { cat "$work/old.out"; fail "an old-format checkpoint does not resume"; }
grep -q "resumed from .* at step $old_step " "$work/old.out" &&
    grep -q "^times before step $old_step were not recorded" "$work/old.out" ||
    { cat "$work/old.out"; fail "an old-format checkpoint: no resume at step $old_step, or no word that earlier times are unknown"; }
if grep -q "^Time to accuracy" "$work/old.out"; then
    grep -q "^Time to accuracy (wall time from step $old_step, where this run resumed: times before step $old_step were not recorded)" \
        "$work/old.out" || fail "an old-format checkpoint: the table's heading: $(grep "^Time to accuracy" "$work/old.out")"
fi
pass "a checkpoint without the history resumes at step $old_step, saying the times before it were not recorded"

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

# Resumed once more, the run is at its last step: nothing is trained, timed or saved again, and
# metrics.jsonl gets no total of 0 images/sec that a report would take as the run's.
final_checkpoint=$work/kill-ckpt/checkpoint-$steps.trellis
saved=$(stat -c %y "$final_checkpoint") || fail "no checkpoint of step $steps"
"$TRAIN" "${common[@]}" --log-dir "$work/kill" --checkpoint-dir "$work/kill-ckpt" --resume >"$work/again.out" 2>&1 ||
    { cat "$work/again.out"; fail "resuming a finished run failed"; }
grep -q "^nothing left to train: the checkpoint is at step $steps of $steps" "$work/again.out" ||
    { cat "$work/again.out"; fail "a finished run resumed without saying that nothing is left"; }
! grep -q "total images/sec" "$work/again.out" || fail "a finished run resumed printed a total images/sec"
[ "$(stat -c %y "$final_checkpoint")" = "$saved" ] || fail "a finished run resumed wrote its checkpoint again"
"$PYTHON3" - "$work/kill/metrics.jsonl" <<'PY' || fail "a finished run resumed logged a total of 0 images/sec"
import sys
from trellis_studies.report.jsonl import records_of
totals = [r["total_images_per_sec"] for r in records_of(sys.argv[1], "train") if "total_images_per_sec" in r]
sys.exit(0 if totals and totals[-1] > 0 else 1)
PY
pass "a finished run resumed: nothing left to train, no total, no checkpoint written again"

# A new run (no --resume) must not mix its checkpoints into another run's folder.
"$TRAIN" "${common[@]}" --steps 2 --checkpoint-dir "$work/kill-ckpt" >"$work/mix.out" 2>&1
[ $? -eq 1 ] && grep -q "already holds checkpoints.*--resume" "$work/mix.out" ||
    { cat "$work/mix.out"; fail "a fresh run in a used checkpoint folder was not refused"; }
"$TRAIN" "${common[@]}" --batch-size 8 --checkpoint-dir "$work/kill-ckpt" --resume >"$work/batch.out" 2>&1
[ $? -eq 1 ] && grep -q "global batch is 32, this run has 8" "$work/batch.out" ||
    { cat "$work/batch.out"; fail "resuming with another batch size was not refused"; }
pass "a used checkpoint folder needs --resume; resuming with another batch size is refused"
