#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Distributed trellis-train under a real Slurm: 2 nodes x 2 tasks with --mpi=pmix (PMIx
# wireup), with --mpi=none (Slurm wireup: SLURM_* variables, the step's first node from
# libslurm, a TCP rendezvous there), and with the plain-environment wireup; with shared memory
# inside each node; then kill -9 of one rank mid-run, over TCP and over shared memory: the
# others stop within 10 s naming it; Ctrl-C under srun -X (one SIGINT: a checkpoint, exit 75);
# the batch example's requeue after a USR1, and its stop without a requeue after
# scancel -s INT. The pmix run's metrics.jsonl names its nodes and rank 0's binding. A campaign
# of tiny runs (trellis-campaign): submitted, one run cancelled and started again alone by a
# second submit, then trellis-report's figures of it. Skips (77) like slurm_test.sh.
set -u
. "$(dirname "$0")/harness.sh"
[ -x "$build/trellis-train" ] || { echo "SKIP: trellis-train is not built (configure --without-trainer)"; exit 77; }
train=$build/trellis-train
python=${PYTHON3:-python3}
# A oneDNN that dies making convolutions on this CPU (Debian 13's 3.7.2 on some AMD EPYC
# machines) has trellis-train refuse every run with one line: the suite skips with that line.
. "$here/../train/onednn_fault.sh"
if refusal=$(onednn_fault_refusal "$train"); then
    echo "SKIP: the trainer is refused on this CPU: $refusal"
    exit 77
fi

make_cluster_dir trellis-slurm-train
start_cluster
short=(--model resnet8 --batch-size 8 --steps 6 --threads 1 --display-every 3 --comm-timeout 30)

# train NAME SRUN-ARGS... -- TRAIN-ARGS...: 2 nodes x 2 tasks; output of task t in NAME.t
train_step() {
    local name=$1
    shift
    timeout 120 srun -N2 --ntasks-per-node=2 --trellis-bind=closest -o "$dir/$name.%t" "$@"
}

# The default transport is auto: shared memory inside each node, TCP between them (no RDMA
# device here), the reason on the strategy line.
check_run() {  # NAME WIREUP STATUS [TRANSPORT [ALGORITHM]]
    local name=$1 wireup=$2 rc=$3 transport=${4:-shm+tcp} algorithm=${5:-hierarchical}
    if [ "$rc" -ne 0 ]; then
        fail "$name: srun exit status $rc: $(tail -n 3 "$dir/$name".*)"
        return
    fi
    grep -q "Strategy: *allreduce over $transport, 4 ranks (\(auto: no RDMA device with an active port; \)\?wireup $wireup.* reduced by $algorithm" "$dir/$name.0" ||
        { fail "$name: rank 0 does not report 4 ranks over $transport and $wireup, $algorithm: $(head -n 8 "$dir/$name.0")"; return; }
    grep -q "^total images/sec" "$dir/$name.0" || { fail "$name: training did not finish"; return; }
    pass "$name: 4 ranks on n1 and n2, wireup $wireup, $algorithm allreduce over $transport, training finished"
}

train_step pmix --mpi=pmix "$train" "${short[@]}" --log-dir "$dir/pmix-log"
check_run pmix pmix $?
# Its run record says where the ranks ran (2 nodes of 2, rank 0 on n1) and the binding the
# plugin gave rank 0: each variable it lists in TRELLIS_BINDING_SET that the record keeps.
PYTHONPATH="${TRELLIS_STUDIES_PYTHON:-$here/../../studies}" "$python" - "$dir/pmix-log/metrics.jsonl" <<'PY' && pass "pmix: the run record has 2 nodes x 2 ranks, rank 0 on n1, and the plugin's binding" ||
import sys
from trellis_studies.report.jsonl import records_of
run = records_of(sys.argv[1], "run")[0]
assert (run["nodes"], run["ranks_per_node"], run["hostname"], run["transport"]) == (2, 2, "n1", "shm+tcp"), run
binding = run["binding"]
kept = ("CUDA_VISIBLE_DEVICES", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "UCX_NET_DEVICES", "OMP_NUM_THREADS")
listed = [name for name in binding["TRELLIS_BINDING_SET"].split(",") if name.startswith("TRELLIS_") or name in kept]
assert "TRELLIS_CPUS" in listed and all(name in binding for name in listed), binding
print("binding:", binding)
PY
    fail "pmix: the run record's placement or binding: $(head -n 1 "$dir/pmix-log/metrics.jsonl")"
train_step slurm --mpi=none "$train" "${short[@]}"
check_run slurm slurm $?
port=$("${PYTHON3:-python3}" "$here/../free_port.py")
train_step env --mpi=none bash -c 'TRELLIS_RANK=$SLURM_PROCID TRELLIS_WORLD_SIZE=$SLURM_NTASKS \
    TRELLIS_LOCAL_RANK=$SLURM_LOCALID TRELLIS_MASTER=127.0.0.1:'"$port"' exec "$0" --wireup env "$@"' \
    "$train" "${short[@]}" --transport tcp
# The plain environment knows no Slurm node, only the machine's host name, which n1 and n2
# share here: one node of 4 ranks to trellis, so a flat schedule (over TCP: n1's and n2's
# /dev/shm are apart).
check_run env env $? tcp halving-doubling
# Shared memory between the two ranks of each node, TCP between the nodes.
train_step shm --mpi=pmix "$train" "${short[@]}" --transport shm
check_run shm pmix $? shm+tcp

# kill -9 of rank 2 (on n2) while all four train, over TCP and over shared memory (rank 3
# shares n2 with rank 2: it must see the death through the control connection, its ring
# will never fill).
kill_rank_2() {  # TRANSPORT
    local transport=$1 srun_pid killed_at rc elapsed named t
    rm -f pid.*
    timeout 120 srun -N2 --ntasks-per-node=2 --mpi=pmix -o "$dir/kill-$transport.%t" bash -c \
        'echo $$ >"pid.$SLURM_PROCID"; exec "$0" "$@"' "$train" --model resnet20 --batch-size 8 --steps 100000 \
        --threads 1 --display-every 1 --transport "$transport" &
    srun_pid=$!
    for _ in $(seq 1 600); do grep -q "^3	" "$dir/kill-$transport.0" 2>/dev/null && break; sleep 0.1; done
    if ! grep -q "^3	" "$dir/kill-$transport.0" 2>/dev/null || [ ! -f pid.2 ]; then
        fail "kill ($transport): the 4-rank run did not get going: $(tail -n 3 "$dir"/kill-"$transport".*)"
        kill "$srun_pid"
        return
    fi
    kill -KILL "$(cat pid.2)"
    killed_at=$(date +%s.%N)
    wait "$srun_pid"
    rc=$?
    elapsed=$("$python" -c "import time; print(round(time.time() - $killed_at, 1))")
    named=0
    for t in 0 1 3; do grep -q "stopping: rank 2 " "$dir/kill-$transport.$t" && named=$((named + 1)); done
    if [ "$rc" -eq 0 ]; then fail "kill ($transport): srun exited 0"
    elif ! "$python" -c "import sys; sys.exit(0 if $elapsed < 10 else 1)"; then fail "kill ($transport): the step took $elapsed s to end"
    elif [ $named -ne 3 ]; then fail "kill ($transport): only $named of 3 ranks name rank 2: $(tail -n 2 "$dir"/kill-"$transport".*)"
    else pass "kill -9 of rank 2 over $transport: ranks 0, 1, 3 stopped naming it; the step ended $elapsed s after the kill"; fi
    grep -h "stopping" "$dir"/kill-"$transport".* | head -n 3
}
kill_rank_2 tcp
kill_rank_2 shm

# Ctrl-C under srun -X: srun forwards the one SIGINT to the task at once (plain srun would only
# print the step's status), and trellis-train saves and exits 75, which srun passes on. env
# gives srun the SIGINT that a shell's background job would ignore; timeout signals only srun
# (--foreground), as its default would signal the process group too: a second SIGINT, which
# srun forwards and follows with SIGKILL.
env --default-signal=INT timeout --foreground 120 srun -X -N1 -n1 -w n1 -o "$dir/interrupt.%t" "$train" --model resnet8 \
    --batch-size 8 --steps 100000 --threads 1 --display-every 1 --checkpoint-dir "$dir/interrupt-ckpt" &
srun_pid=$!
for _ in $(seq 1 600); do grep -q "^3	" "$dir/interrupt.0" 2>/dev/null && break; sleep 0.1; done
kill -INT $srun_pid
wait $srun_pid
rc=$?
if [ $rc -eq 75 ] && grep -q "received signal 2 (SIGINT)" "$dir/interrupt.0" && grep -q "checkpoint saved" "$dir/interrupt.0" &&
    ls "$dir"/interrupt-ckpt/checkpoint-*.trellis >/dev/null 2>&1; then
    pass "srun -X and one SIGINT: the task saved a checkpoint ($(ls "$dir/interrupt-ckpt")) and srun exited 75"
else
    fail "srun -X and one SIGINT: srun exit status $rc (expected 75): $(tail -n 3 "$dir/interrupt.0")"
fi

# The installed batch example carries on past a time limit: USR1 (what --signal sends before
# the limit; scancel -s USR1 here) makes trellis-train save and exit 75, the script requeues
# the job, and the next run resumes in the same run folder and finishes. The example is run
# as shipped but for its --gres line (n1 has no GPU) and its sizes, which come from its
# variables.
"$build/tests/data/make_dataset" --out "$dir/data" --classes 4 --train-per-class 40 --val-per-class 8 --size 32 \
    --seed 5 >/dev/null
grep -v -- '--gres' "$here/../../etc/sbatch/resnet50-allreduce.sbatch" >"$dir/requeue.sbatch"
# submit_example OUTPUT RUN: the job's id, once its run has logged step 20.
submit_example() {
    local job
    job=$(PATH=$build:$PATH RUN=$2 DATA=$dir/data/folder MODEL=resnet8 BATCH=8 STEPS=400 \
        EXTRA="--image-size 32 --threads 1 --display-every 10" \
        sbatch --parsable -N1 -n1 --ntasks-per-node=1 -w n1 -o "$1" "$dir/requeue.sbatch")
    for _ in $(seq 300); do grep -q '"step": *2[0-9]' "$2/logs/metrics.jsonl" 2>/dev/null && break; sleep 0.1; done
    echo "$job"
}
job=$(submit_example "$dir/requeue.out" "$dir/run")
scancel -s USR1 "$job"
# Slurm holds a requeued job until its old launch credential has expired (BeginTime, 121 s by
# default); the test lets it start at once.
for _ in $(seq 600); do
    current=$(scontrol show job "$job" 2>/dev/null | grep -oE '(JobState|Restarts)=[^ ]*' | tr '\n' ' ')
    [[ "$current" == *COMPLETED* ]] && break
    [[ "$current" == *PENDING*Restarts=1* ]] && scontrol update jobid="$job" starttime=now 2>/dev/null
    sleep 0.2
done
state=$(scontrol show job "$job" 2>/dev/null | grep -oE '(JobState|Restarts)=[^ ]*' | tr '\n' ' ')
if grep -q "received signal 10 (SIGUSR1) at step" "$dir/requeue.out" && grep -q "requeueing job $job" "$dir/requeue.out" &&
    grep -q "resumed from $dir/run/checkpoints at step" "$dir/requeue.out" &&
    grep -q "^total images/sec" "$dir/requeue.out" && [[ "$state" == *JobState=COMPLETED*Restarts=1* ]]; then
    pass "the batch example stopped on USR1 with a checkpoint, requeued itself and resumed to the end ($state)"
else
    fail "requeue example: $state: $(grep -E 'signal|requeue|resumed|total|error' "$dir/requeue.out")"
fi

# scancel -s INT reaches the steps, not the batch script: trellis-train saves and exits 75, and
# the example, which requeues only after its own USR1, stops and says why in the job's output.
job=$(submit_example "$dir/stop.out" "$dir/run-int")
scancel -s INT "$job"
for _ in $(seq 600); do
    state=$(scontrol show job "$job" 2>/dev/null | grep -oE '(JobState|Restarts|ExitCode)=[^ ]*' | tr '\n' ' ')
    [[ "$state" == *JobState=PENDING* || "$state" == *JobState=RUNNING* || "$state" == *COMPLETING* ]] || break
    sleep 0.2
done
if grep -q "received signal 2 (SIGINT) at step" "$dir/stop.out" && grep -q "checkpoint saved" "$dir/stop.out" &&
    grep -q "stopped by SIGINT .*: not requeued" "$dir/stop.out" && [[ "$state" == *Restarts=0*ExitCode=75:0* ]]; then
    pass "scancel -s INT stopped the batch example with a checkpoint, without a requeue, and its output says so ($state)"
else
    fail "scancel -s INT of the batch example: $state: $(grep -E 'signal|checkpoint|requeue|stopped|error' "$dir/stop.out")"
fi

# A campaign (trellis-campaign) of tiny runs, submitted by the unprivileged user into
# a folder whose name a shell would misread: resnet8 on 1 and 2 nodes, allreduce and a parameter
# server. The four scripts are written with every value quoted and submitted; one run is
# cancelled mid-training; a second submit starts that run again alone (its folder moved aside)
# and skips the others; status reports each run, the cancelled one with Slurm's own words.
# check_report CAMPAIGN: trellis-report's checks of the finished campaign (the figures and tables it draws).
check_report() {
    local report="$dir/user/campaign-report" figure missing=""
    as_user env "TRELLIS_STUDIES_PYTHON=${TRELLIS_STUDIES_PYTHON:-$here/../../studies}" "$build/studies/trellis-report" \
        -o "$report" "$1" >"$dir/report.out" 2>&1 || { fail "report: status $?: $(tail -n 5 "$dir/report.out")"; return; }
    # Four runs of one model on 1 and 2 nodes, allreduce and ps, several ranks each: these four
    # figures have data; the others (no evaluation, no trellis-bench) are skipped by name.
    for figure in scaling ps-vs-allreduce comm-share memory; do
        for suffix in png svg csv; do [ -s "$report/$figure.$suffix" ] || missing+=" $figure.$suffix"; done
    done
    [ -s "$report/index.html" ] || missing+=" index.html"
    grep -q "^figure busbw: skipped" "$dir/report.out" || missing+=" (busbw not skipped)"
    # runs.csv: a row per run, each with the total its last train record wrote, digit for digit.
    local totals
    totals=$("$python" - "$1" "$report/runs.csv" <<'PY'
import csv, json, re, sys
campaign, rows = sys.argv[1], {r["folder"].rstrip("/").rsplit("/", 1)[-1]: r for r in csv.DictReader(open(sys.argv[2]))}
wrong = []
for run in json.load(open(campaign + "/campaign.json"))["runs"]:
    lines = open(f"{campaign}/runs/{run['key']}/log/metrics.jsonl").read().splitlines()
    written = [re.search(r'"total_images_per_sec":([-0-9.e+]+)', l).group(1) for l in lines if "total_images_per_sec" in l][-1]
    if rows.get(run["key"], {}).get("total_images_per_sec") != written:
        wrong.append(f"{run['key']}: {rows.get(run['key'], {}).get('total_images_per_sec')} against {written}")
print(f"{len(rows)} rows" if not wrong and len(rows) == 4 else "; ".join(wrong) or f"{len(rows)} rows")
PY
)
    if [ -z "$missing" ] && [ "$totals" = "4 rows" ]; then
        pass "report of the campaign: scaling, ps-vs-allreduce, comm-share and memory as PNG, SVG and CSV, index.html, runs.csv's 4 totals as the runs wrote them"
    else
        fail "report of the campaign: missing:$missing; runs.csv: $totals"$'\n'"$(cat "$dir/report.out")"
    fi
}
# Until none of the user's jobs is queued or running (squeue keeps finished ones a while).
wait_for_campaign() {
    for _ in $(seq 1500); do
        squeue -h -u "$job_user" -o %T | grep -qvE '^(COMPLETED|CANCELLED|FAILED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY)$' || return 0
        sleep 0.1
    done
}
campaign_test() {
    local campaign="$dir/user/campaign it's; \$(touch pwned)" study="$dir/user/tiny.toml" jobs killed key state
    local command=(env "TRELLIS_STUDIES_PYTHON=${TRELLIS_STUDIES_PYTHON:-$here/../../studies}" "$build/studies/trellis-campaign")
    [ -x "$build/studies/trellis-campaign" ] || { fail "campaign: $build/studies/trellis-campaign is not built"; return; }
    printf '%s\n' '# Tiny runs of a few seconds each.' 'name = "tiny"' '[run]' 'model = "resnet8"' 'batch_size = 8' \
        'steps = 40' 'ranks_per_node = 2' 'threads = 1' 'extra_args = ["--display-every", "10", "--comm-timeout", "30"]' \
        '[matrix]' 'nodes = [1, 2]' 'strategy = ["allreduce", "ps"]' '[slurm]' 'time = "00:05:00"' \
        '[programs]' "train = \"$build/trellis-train\"" >"$study"
    chmod 644 "$study"
    as_user "${command[@]}" submit "$study" --dir "$campaign" >"$dir/campaign-submit.out" 2>&1 ||
        { fail "campaign: the first submit failed: $(tail -n 5 "$dir/campaign-submit.out")"; return; }
    jobs=$(grep -c ": job [0-9]*$" "$dir/campaign-submit.out")
    # The 2-node allreduce run is cancelled once it trains (its metrics.jsonl has a train record).
    key=$("$python" -c 'import json, sys
print(next(r["key"] for r in json.load(open(sys.argv[1] + "/campaign.json"))["runs"]
           if r["settings"]["nodes"] == 2 and r["settings"]["strategy"] == "allreduce"))' "$campaign")
    for _ in $(seq 600); do grep -q '"train"' "$campaign/runs/$key/log/metrics.jsonl" 2>/dev/null && break; sleep 0.1; done
    killed=$(tail -n 1 "$campaign/runs/$key/jobs" 2>/dev/null)
    [ -n "$killed" ] && scancel "$killed"
    wait_for_campaign
    local scripts=0 quoted=0 done=0 run
    for run in "$campaign"/runs/*/; do
        [ -f "$run/run.sbatch" ] && scripts=$((scripts + 1))
        grep -qF -- "--log-dir '$dir/user/campaign it'\"'\"'s; \$(touch pwned)/runs/" "$run/run.sbatch" && quoted=$((quoted + 1))
        [ "$(cat "$run/exit_status" 2>/dev/null)" = 0 ] && grep -q total_images_per_sec "$run/log/metrics.jsonl" && done=$((done + 1))
    done
    if [ "$jobs" -ne 4 ] || [ $scripts -ne 4 ] || [ $quoted -ne 4 ] || [ -e "$dir/user/pwned" ]; then
        fail "campaign: $jobs jobs, $scripts scripts, $quoted with the folder quoted (4 each expected): $(cat "$dir/campaign-submit.out")"
        return
    fi
    if [ $done -ne 3 ] || [ -e "$campaign/runs/$key/exit_status" ]; then
        fail "campaign: $done runs done (3 expected); the cancelled run $key: $(cat "$campaign/runs/$key/exit_status" 2>&1)"
        return
    fi
    as_user "${command[@]}" status "$campaign" >"$dir/campaign-status.out" 2>&1
    state=$(grep "^  $key " "$dir/campaign-status.out")
    if [ "$(grep -c "^  [0-9a-f]\{12\} done " "$dir/campaign-status.out")" -ne 3 ] ||
        ! [[ "$state" == *" failed "*"job $killed: no exit status"*CANCELLED* ]]; then
        fail "campaign: status after the cancel: $(cat "$dir/campaign-status.out")"
        return
    fi
    pass "campaign: 4 runs' scripts written (the folder's name quoted) and submitted by $job_user, 3 done, the cancelled one failed: ${state#*: }"
    as_user "${command[@]}" submit "$study" --dir "$campaign" >"$dir/campaign-resubmit.out" 2>&1 ||
        { fail "campaign: the second submit failed: $(tail -n 5 "$dir/campaign-resubmit.out")"; return; }
    wait_for_campaign
    as_user "${command[@]}" status "$campaign" >"$dir/campaign-status.out" 2>&1
    if ! grep -q "^1 job(s) submitted" "$dir/campaign-resubmit.out" || [ "$(grep -c ", skipped$" "$dir/campaign-resubmit.out")" -ne 3 ] ||
        ! grep -q "^  $key failed (.*): moved aside to $key.failed-1" "$dir/campaign-resubmit.out" ||
        [ ! -f "$campaign/runs/$key.failed-1/run.sbatch" ] || ! grep -q "^4 done$" "$dir/campaign-status.out"; then
        fail "campaign: the second submit: $(cat "$dir/campaign-resubmit.out") then: $(cat "$dir/campaign-status.out")"
        return
    fi
    pass "campaign: the second submit started the cancelled run alone (its folder moved aside) and skipped 3; status: 4 done"
    check_report "$campaign"
}
campaign_test

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
