#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The binding on a GPU cluster as real ones run (tests/slurm/cluster): gres/gpu, task/cgroup
# with ConstrainDevices, jobs submitted by an unprivileged user. n1 looks like a 4-GPU node
# sharing two HCAs, n2 like the 8-GPU node whose device minors are rotated against PCI order.
# For every Slurm GPU option, each task's GPUs are checked against what its device cgroup
# lets it open and how CUDA would number them there (gpu_oracle.py), not against trellis's
# own plan. Skips (77) without root, Slurm or munge; the checks that need the cgroup devices
# controller skip with that reason where it is missing.
set -u
. "$(dirname "$0")/harness.sh"
fixtures=${TRELLIS_FIXTURES:?}/topology topo=$build/trellis-topo
python=${PYTHON3:-python3}

make_cluster_dir trellis-gpu
# Typed GPUs (gpu:a100:N) for typed requests; untyped ones take them as well.
export TRELLIS_CLUSTER_GPU_TYPE=a100
start_cluster "n1=$fixtures/shared-hca-4gpu.xml" "n2=$fixtures/two-level-switch-8gpu.xml"
if [ -f "$dir/no-device-cgroup" ]; then
    echo "SKIP: $(cat "$dir/no-device-cgroup")"
    exit 77
fi
cp "$here/task_probe.py" "$dir/probe.py" && chmod 644 "$dir/probe.py"
probe=("$python" "$dir/probe.py")
runs=0
# gpu_run NAME SRUN-OPTIONS...: the probe in every task, as the job user; output in $dir/NAME.out.
# The nodes have this machine's CPUs (2 here): steps with more tasks overcommit them (-O).
gpu_run() {
    local name=$1
    shift
    runs=$((runs + 1))
    as_user_srun "$name" "$@" "${probe[@]}" || fail "$name: srun $*: status $?: $(tail -n 5 "$dir/$name.err")"
}
# oracle NAME DESCRIPTION [ORACLE-FLAGS]: the tasks' GPUs against the truth
oracle() {
    local name=$1 what=$2
    shift 2
    if out=$("$python" "$here/gpu_oracle.py" "$dir" "$topo" "$dir/$name.out" "$@"); then
        pass "$what: $out"
    else
        fail "$what:"$'\n'"$out"
    fi
}
# The options that bind GPUs changed between Slurm versions: a row for an option this
# cluster's srun lacks says so and is not run (any Slurm the cluster script starts will do).
# since VERSION WHAT: whether this Slurm is VERSION or later; if not, says WHAT it lacks.
since() {
    at_least "$1" && return 0
    echo "not in Slurm $slurm_version: $2 ($1+)"
    return 1
}
# gpu_batch NAME SBATCH-OPTIONS...: a batch job whose script runs the probe with a plain srun,
# which takes its GPU options from what sbatch hands it; output as gpu_run's.
gpu_batch() {
    local name=$1
    shift
    runs=$((runs + 1))
    rm -f "$dir/user/$name".task-* "$dir/user/$name".errors-*
    as_user sbatch --wait -o "$dir/user/$name.batch" "$@" \
        --wrap "srun -o $dir/user/$name.task-%t -e $dir/user/$name.errors-%t ${probe[*]}" >/dev/null 2>"$dir/$name.err" ||
        fail "$name: sbatch $*: status $?: $(tail -n 5 "$dir/$name.err" "$dir/user/$name.batch" 2>/dev/null)"
    cat "$dir/user/$name".task-* >"$dir/$name.out" 2>/dev/null
    cat "$dir/user/$name.batch" "$dir/user/$name".errors-* >>"$dir/$name.err" 2>/dev/null
}
# gpu_alloc NAME SALLOC-OPTIONS...: the same from salloc, which runs a plain srun as a user's
# interactive session would (salloc runs the command it is given: no terminal here).
gpu_alloc() {
    local name=$1
    shift
    runs=$((runs + 1))
    inside=(salloc "$@")
    as_user_srun "$name" "${probe[@]}" || fail "$name: salloc $*: status $?: $(tail -n 5 "$dir/$name.err")"
    inside=()
}
field() {  # NAME PYTHON-EXPRESSION over the list `tasks`: prints its value
    "$python" -c "import json,sys; tasks=[json.loads(l) for l in open(sys.argv[1])]; print($2)" "$dir/$1.out"
}

# 1. Each Slurm GPU option: the GPUs a task is told of are those it may open, numbered as
#    CUDA numbers them inside its cgroup.
gpu_run gres -N1 -w n2 -n2 --gres=gpu:2
oracle gres "--gres=gpu:2, 2 tasks on n2" --gpus 1
gpu_run gres_n1 -N1 -w n1 -n1 --gres=gpu:3
oracle gres_n1 "--gres=gpu:3, 1 task on n1" --gpus 3
gpu_run gpus_per_task -N1 -w n2 -n2 --gpus-per-task=2
oracle gpus_per_task "--gpus-per-task=2 (Slurm binds per task)" --gpus 2
gpu_run gpus_total -N2 --ntasks-per-node=2 --gpus=6
oracle gpus_total "--gpus=6 over n1 and n2"
gpu_run exclusive -w n2 -n2 --exclusive --gres=gpu:8
oracle exclusive "--exclusive --gres=gpu:8, 2 tasks" --gpus 4
gpu_run no_gpus -N2 --ntasks-per-node=1
oracle no_gpus "a step that asked for no GPU gets none" --no-gpus

echo "Slurm $slurm_version"
# distinct NAME WHAT: no two tasks share a GPU.
distinct() {
    [ "$(field "$1" 'len({t["env"].get("TRELLIS_GPU") for t in tasks}) == len(tasks)')" = True ] &&
        pass "$2: each task its own GPU" || fail "$2: tasks share GPUs: $(field "$1" '[t["env"].get("TRELLIS_GPU") for t in tasks]')"
}
# slurm_decides NAME WHAT: Slurm's own GPU binding, which trellis leaves to Slurm with a warning.
slurm_decides() {
    grep -q "GPU visibility is left to Slurm" "$dir/$1.err" && pass "$2: warned" || fail "$2: no warning"
    [ "$(field "$1" '{t["env"].get("CUDA_DEVICE_ORDER") for t in tasks}')" = "{None}" ] &&
        pass "$2: visibility left to Slurm" || fail "$2: trellis set CUDA variables"
}

# 1b. Slurm's per-task GPU binding, as each version spells it (slurm/gpu_binding.hpp): each
#     task can open only its own GPU, which is CUDA 0 for it; with allow-task-sharing every
#     task opens the step's GPUs and keeps the step's numbers.
gpu_run gpu_bind_per_task -N1 -w n2 -n2 --gres=gpu:2 --gpu-bind=per_task:1
oracle gpu_bind_per_task "--gpu-bind=per_task:1" --gpus 1
# Slurm 22.05 binds nothing for a typed count, 23.11 per task: right either way.
gpu_run typed_per_task -N1 -w n2 -n2 --gpus-per-task=a100:1
oracle typed_per_task "--gpus-per-task=a100:1 (Slurm $slurm_version)" --gpus 1
distinct typed_per_task "--gpus-per-task=a100:1"
if since 23.02 "--tres-per-task"; then
    gpu_run tres_per_task -N1 -w n2 -n2 --tres-per-task=gres/gpu:1
    oracle tres_per_task "--tres-per-task=gres/gpu:1" --gpus 1
    gpu_run tres_per_task_typed -N1 -w n2 -n2 --tres-per-task=gres/gpu:a100:1
    oracle tres_per_task_typed "--tres-per-task=gres/gpu:a100:1" --gpus 1
    # Since 23.11 -c joins tres_per_task as cpu=N: the GPU count among several TRES. (Asking
    # for cpu=1 in --tres-per-task itself is refused by 24.11's scheduler here: "Requested node
    # configuration is not available".)
    gpu_run tres_per_task_cpus -N1 -w n2 -n2 --cpus-per-task=1 --tres-per-task=gres/gpu=1
    oracle tres_per_task_cpus "--cpus-per-task=1 --tres-per-task=gres/gpu=1" --gpus 1
fi
if since 23.11 "--tres-bind"; then
    gpu_run tres_bind_per_task -N1 -w n2 -n2 --gres=gpu:2 --tres-bind=gres/gpu:per_task:1
    oracle tres_bind_per_task "--tres-bind=gres/gpu:per_task:1" --gpus 1
    for bind in map_gpu:1,0 map:1,0 mask_gpu:0x2,0x1 mask:0x2,0x1; do
        name=tres_bind_${bind%%:*}
        gpu_run "$name" -N1 -w n2 -n2 --gres=gpu:2 --tres-bind=gres/gpu:$bind
        oracle "$name" "--tres-bind=gres/gpu:$bind" --gpus 1
    done
    for bind in single:1 closest none; do
        name=tres_bind_${bind%%:*}
        gpu_run "$name" -N1 -w n2 -n2 --gres=gpu:2 --tres-bind=gres/gpu:$bind --trellis-verbose
        slurm_decides "$name" "--tres-bind=gres/gpu:$bind"
    done
fi
if since 23.11.4 "--gres-flags=allow-task-sharing"; then
    gpu_run task_sharing -N1 -w n2 -n2 --gpus-per-task=1 --gres-flags=allow-task-sharing
    oracle task_sharing "--gpus-per-task=1 --gres-flags=allow-task-sharing" --gpus 1
    distinct task_sharing "allow-task-sharing"
fi
# A step of one task on a node: slurmstepd ignored --tres-bind there until Slurm 25.11, which
# binds it as it binds several: the task may open one GPU of the step's two, not both. trellis
# tells it of one either way, the binding's first.
one_task_gpus=2
at_least 25.11 && one_task_gpus=1
gpu_run tres_bind_one_task -N1 -w n2 -n1 --gres=gpu:2 --gpu-bind=per_task:1
oracle tres_bind_one_task "--gpu-bind=per_task:1, 1 task and 2 GPUs on n2 (Slurm $slurm_version lets it open $one_task_gpus)" \
    --gpus 1 --allowed $one_task_gpus
gpu_run gpus_per_node -N1 -w n2 -n2 --gpus-per-node=2
oracle gpus_per_node "--gpus-per-node=2, 2 tasks on n2" --gpus 1
# Since 26.05 srun refuses --gres=gpu:N beside --gpus-per-node, which earlier Slurms took
# together: the refusal is Slurm's, and nothing of the step runs.
if since 26.05 "--gres=gpu:N with --gpus-per-node refused"; then
    runs=$((runs + 1))
    if as_user_srun gres_and_gpus_per_node -N1 -w n2 -n1 --gres=gpu:2 --gpus-per-node=2 "${probe[@]}"; then
        fail "--gres=gpu:2 --gpus-per-node=2: Slurm $slurm_version ran the step"
    elif [ -s "$dir/gres_and_gpus_per_node.out" ]; then
        fail "--gres=gpu:2 --gpus-per-node=2: a task ran: $(head -c 300 "$dir/gres_and_gpus_per_node.out")"
    elif ! refusal=$(grep -m 1 "mutually exclusive" "$dir/gres_and_gpus_per_node.err"); then
        fail "--gres=gpu:2 --gpus-per-node=2: failed, but not as refused: $(tail -n 3 "$dir/gres_and_gpus_per_node.err")"
    else
        pass "--gres=gpu:2 --gpus-per-node=2: refused by srun: $refusal"
    fi
fi

# 1c. sbatch's GPU options, then a plain srun in the batch script: 22.05 hands them on as
#     SLURM_GPUS_PER_TASK and SLURM_GPU_BIND, 23.11 as SLURM_TRES_PER_TASK and SLURM_TRES_BIND.
gpu_batch batch_per_task -N1 -w n2 -n2 --gpus-per-task=1
oracle batch_per_task "sbatch --gpus-per-task=1, then srun" --gpus 1
gpu_batch batch_gpu_bind -N1 -w n2 -n2 --gres=gpu:2 --gpu-bind=per_task:1
oracle batch_gpu_bind "sbatch --gpu-bind=per_task:1, then srun" --gpus 1
gpu_batch batch_map -N1 -w n2 -n2 --gres=gpu:2 --gpu-bind=map_gpu:1,0
oracle batch_map "sbatch --gpu-bind=map_gpu:1,0, then srun" --gpus 1
gpu_batch batch_typed -N1 -w n2 -n2 --gpus-per-task=a100:1
oracle batch_typed "sbatch --gpus-per-task=a100:1, then srun" --gpus 1
if since 23.02 "sbatch --tres-per-task"; then
    gpu_batch batch_tres_per_task -N1 -w n2 -n2 --tres-per-task=gres/gpu:1
    oracle batch_tres_per_task "sbatch --tres-per-task=gres/gpu:1, then srun" --gpus 1
    gpu_batch batch_tres_per_task_typed -N1 -w n2 -n2 --cpus-per-task=1 --tres-per-task=gres/gpu:a100:1
    oracle batch_tres_per_task_typed "sbatch --cpus-per-task=1 --tres-per-task=gres/gpu:a100:1, then srun" --gpus 1
fi
if since 23.11 "sbatch --tres-bind"; then
    gpu_batch batch_tres_bind -N1 -w n2 -n2 --gres=gpu:2 --tres-bind=gres/gpu:per_task:1
    oracle batch_tres_bind "sbatch --tres-bind=gres/gpu:per_task:1, then srun" --gpus 1
    for bind in map:1,0 mask:0x2,0x1; do
        name=batch_tres_bind_${bind%%:*}
        gpu_batch "$name" -N1 -w n2 -n2 --gres=gpu:2 --tres-bind=gres/gpu:$bind
        oracle "$name" "sbatch --tres-bind=gres/gpu:$bind, then srun" --gpus 1
    done
    gpu_batch batch_tres_bind_single -N1 -w n2 -n2 --gres=gpu:2 --tres-bind=gres/gpu:single:1 --trellis-verbose
    slurm_decides batch_tres_bind_single "sbatch --tres-bind=gres/gpu:single:1, then srun"
fi

# 1d. The same from salloc, then srun: Slurm hands salloc's GPU options on as sbatch's. What
#     salloc hands on does not depend on the cgroup version: the cgroup v2 guest (the GPU
#     options only, each step slow under TCG) leaves these rows out.
if [ "${TRELLIS_GPU_MATRIX_ONLY:-0}" != 1 ]; then
    gpu_alloc alloc_per_task -N1 -w n2 -n2 --gpus-per-task=1
    oracle alloc_per_task "salloc --gpus-per-task=1, then srun" --gpus 1
    gpu_alloc alloc_map -N1 -w n2 -n2 --gres=gpu:2 --gpu-bind=map_gpu:1,0
    oracle alloc_map "salloc --gpu-bind=map_gpu:1,0, then srun" --gpus 1
    gpu_alloc alloc_gres -N1 -w n1 -n1 --gres=gpu:3
    oracle alloc_gres "salloc --gres=gpu:3, then srun" --gpus 3
fi

# 2. Two jobs on one node: the second gets other GPUs, and each task sees its own. The first
# holds its GPUs until the second has ended (60 s at most).
as_user srun -N1 -w n2 -n1 --gres=gpu:3 bash -c '"$0" "$1" >"$2"; for _ in $(seq 600); do [ -e "$3" ] && break; sleep 0.1; done' \
    "${probe[@]}" "$dir/user/first.out" "$dir/user/second.done" 2>"$dir/first.err" &
first=$!
for _ in $(seq 80); do [ -s "$dir/user/first.out" ] && break; sleep 0.1; done
gpu_run second -N1 -w n2 -n1 --gres=gpu:3
touch "$dir/user/second.done"
wait $first
cp "$dir/user/first.out" "$dir/first.out"
oracle first "the first of two jobs on n2" --gpus 3
oracle second "the second of two jobs on n2" --gpus 3
"$python" - "$dir/first.out" "$dir/second.out" <<'PY' && pass "the two jobs' GPUs are disjoint" || fail "two jobs share GPUs"
import json, sys
a, b = ({int(g) for g in json.loads(open(f).readline())["env"]["TRELLIS_GPU"].split(",")} for f in sys.argv[1:])
print(a, b)
sys.exit(0 if a and b and not a & b else 1)
PY

# 3. The user's --gpu-bind: a map or mask names each task's GPUs, which trellis follows; the
#    others (single, closest: Slurm's CPU placement decides; none) win, with a warning, and
#    Slurm numbers the GPUs.
gpu_run gpu_bind_map -N1 -w n2 -n2 --gres=gpu:2 --gpu-bind=map_gpu:1,0
oracle gpu_bind_map "--gpu-bind=map_gpu:1,0" --gpus 1
gpu_run gpu_bind_mask -N1 -w n2 -n2 --gres=gpu:2 --gpu-bind=mask_gpu:0x3,0x2
oracle gpu_bind_mask "--gpu-bind=mask_gpu:0x3,0x2"
gpu_run gpu_bind -N1 -w n2 -n2 --gres=gpu:2 --gpu-bind=closest --trellis-verbose
slurm_decides gpu_bind "--gpu-bind=closest"

# TRELLIS_GPU_MATRIX_ONLY=1 stops here, after the GPU options (sections 1 to 3): the cgroup v2
# guest runs them so, its emulated CPUs making every step slow (tests/cgroup2).
if [ "${TRELLIS_GPU_MATRIX_ONLY:-0}" = 1 ]; then
    echo "$runs GPU runs, $failures failures (the GPU options only: TRELLIS_GPU_MATRIX_ONLY)"
    [ "$failures" -eq 0 ]
    exit
fi

# 4. --trellis-gpus=step: every task sees all of the step's GPUs, its own first.
gpu_run shared -w n2 -n4 -O --gres=gpu:4 --trellis-gpus=step
oracle shared "--trellis-gpus=step, 4 tasks" --gpus 1 --shared

# 5. NICs: per task for UCX, one set for NCCL (unset when nothing restricts it), k HCAs for k GPUs.
gpu_run nics -w n2 -n4 -O --gres=gpu:4
[ "$(field nics '[t["env"].get("NCCL_IB_HCA") for t in tasks]')" = "[None, None, None, None]" ] &&
    pass "NCCL_IB_HCA unset when nothing restricts the HCAs" || fail "nics: $(cat "$dir/nics.out")"
[ "$(field nics 'len({t["env"]["UCX_NET_DEVICES"] for t in tasks})')" = 4 ] &&
    pass "UCX_NET_DEVICES: each task its own HCA" || fail "nics: UCX not per task"
gpu_run nics_restricted -w n2 -n4 -O --gres=gpu:4 --trellis-hca=mlx5_0,mlx5_1,mlx5_4
[ "$(field nics_restricted 'sorted({t["env"]["NCCL_IB_HCA"] for t in tasks})')" = "['=mlx5_0:1,mlx5_1:1,mlx5_4:1']" ] &&
    pass "--trellis-hca: the same NCCL_IB_HCA on every task" || fail "nics_restricted: $(cat "$dir/nics_restricted.out")"
gpu_run four_gpu_task -N1 -w n2 -n1 --gres=gpu:4
[ "$(field four_gpu_task 'len(tasks[0]["env"]["UCX_NET_DEVICES"].split(","))')" = 4 ] &&
    pass "a task with 4 GPUs gets 4 HCAs: $(field four_gpu_task 'tasks[0]["env"]["UCX_NET_DEVICES"]')" ||
    fail "four_gpu_task: $(cat "$dir/four_gpu_task.out")"

# 6. The verbose report: node and task numbering, UCX HCAs, NCCL's set.
gpu_run report -N1 -w n2 -n2 --gres=gpu:2 --trellis-verbose
if grep -q "task  GPU  CUDA  HCA" "$dir/report.err" && grep -q "^NCCL: " "$dir/report.err"; then
    pass "verbose report"
else
    fail "verbose report: $(cat "$dir/report.err")"
fi
cat "$dir/report.err"

# 7. A step started inside a task (srun --pty bash, then srun) plans as a fresh step would: the
#    outer task's TRELLIS_HCA is no --trellis-hca, and its TRELLIS_GPU does not linger.
gpu_run fresh -N1 -w n2 -n2 -O --gres=none
runs=$((runs + 1))
rm -f "$dir/user/nested".task-*
as_user srun -N1 -w n2 -n1 --gres=gpu:2 srun --overlap -n2 -O --gres=none -o "$dir/user/nested.task-%t" \
    "${probe[@]}" 2>"$dir/nested.err" || fail "nested: status $?: $(tail -n 5 "$dir/nested.err")"
cat "$dir/user/nested".task-* >"$dir/nested.out" 2>/dev/null
names='("TRELLIS_GPU", "TRELLIS_HCA", "TRELLIS_DISTANCE", "TRELLIS_NUMA", "TRELLIS_CPUS", "TRELLIS_BINDING_SET", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "UCX_NET_DEVICES", "OMP_NUM_THREADS", "OMPI_MCA_btl_openib_if_include")'
binding="sorted((t['local'], sorted((k, v) for k, v in t['env'].items() if k in $names)) for t in tasks)"
if [ "$(field nested "$binding")" = "$(field fresh "$binding")" ]; then
    pass "a step inside a task binds as a fresh one: $(field nested '[t["env"].get("TRELLIS_HCA") for t in tasks]')"
else
    fail "nested step: $(field nested "$binding")"$'\n'"a fresh step: $(field fresh "$binding")"
fi

# 8. trellis-agent launch inside a step, with no --config: the plugin's configuration (the
#    plugstack line's topology_xml= and nvidia_proc=) and the plugin's plan for the same
#    step, each rank its own GPU and HCA in place of the one agent task's.
runs=$((runs + 1))
as_user srun -N1 -w n2 -n1 --gres=gpu:2 "$build/trellis-agent" launch --nproc-per-node 2 -- "${probe[@]}" \
    >"$dir/agent.raw" 2>"$dir/agent.err" || fail "agent: status $?: $(tail -n 5 "$dir/agent.err")"
sed -nE 's/^\[[0-9]+\] (\{.*)/\1/p' "$dir/agent.raw" >"$dir/agent.out"
by_local_rank="sorted((t['env'].get('TRELLIS_LOCAL_RANK'), sorted((k, v) for k, v in t['env'].items() if k in $names)) for t in tasks)"
if [ "$(field agent "$by_local_rank")" = "$(field gres "$by_local_rank")" ] &&
    [ "$(field agent 'len({t["env"].get("TRELLIS_HCA") for t in tasks})')" = 2 ]; then
    pass "agent launch in a step: the plugin's plan, each rank its own GPU and HCA: $(field agent '[(t["env"]["TRELLIS_GPU"], t["env"]["TRELLIS_HCA"]) for t in tasks]')"
else
    fail "agent launch in a step: $(field agent "$by_local_rank")"$'\n'"the plugin's: $(field gres "$by_local_rank")"$'\n'"$(cat "$dir/agent.err")"
fi

# 9. 2 tasks on Slurm's GPUs 0,5,6,7 (one on socket 0, three on socket 1) get 1 and 3: said
#    once per node without --trellis-verbose, since two GPUs sit idle.
gpu_run uneven -w n2 -n2 -O --gres=gpu:4
if [ "$(field uneven 'sorted(len(t["env"]["TRELLIS_GPU"].split(",")) for t in tasks)')" = "[1, 3]" ] &&
    [ "$(grep -c "warning: tasks get 1 and 3 GPUs" "$dir/uneven.err")" -eq 1 ]; then
    pass "1 + 3 GPUs: warned once"
else
    fail "uneven: $(field uneven '[t["env"].get("TRELLIS_GPU") for t in tasks]') $(cat "$dir/uneven.err")"
fi

echo "$runs GPU runs, $failures failures"
[ "$failures" -eq 0 ]
