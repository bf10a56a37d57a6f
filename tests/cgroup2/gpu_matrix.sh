#!/bin/bash
# The GPU options that Slurm 23.11 and later hand on in new ways (SLURM_TRES_BIND,
# SLURM_TRES_PER_TASK, --gres-flags=allow-task-sharing; issue 32, the table of its review of
# Slurm 24.11), one row each on the cluster of tests/slurm/cluster, 2 tasks on n2 (the
# node whose device minors are rotated against PCI order). Every task is judged by
# tests/slurm/gpu_oracle.py: CUDA_VISIBLE_DEVICES indexes exactly the devices its cgroup lets
# it open, and TRELLIS_GPU is the GPU it runs on. Prints one "row NAME: ok|FAIL" line per row.
# Run inside the cgroup v2 guest by slurm_v2_test.sh, beside tests/slurm/gpu_test.sh (once
# gpu_test.sh has these rows, this file goes). Skips (77) like the Slurm tests.
set -u
. "$(dirname "$0")/../slurm/harness.sh"
fixtures=${TRELLIS_FIXTURES:?}/topology topo=$build/trellis-topo
python=${PYTHON3:-python3}

make_cluster_dir trellis-gpu-matrix
start=$(date +%s.%N)
start_cluster "n1=$fixtures/shared-hca-4gpu.xml" "n2=$fixtures/two-level-switch-8gpu.xml"
echo "cluster up (slurmctld, slurmd n1 and n2 idle) in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
if [ -f "$dir/no-device-cgroup" ]; then
    echo "SKIP: $(cat "$dir/no-device-cgroup")"
    exit 77
fi
cp "$here/task_probe.py" "$dir/probe.py" && chmod 644 "$dir/probe.py"
probe=("$python" "$dir/probe.py")

# row NAME ORACLE-FLAGS -- SRUN-OPTIONS...: one srun of the probe in 2 tasks on n2, judged
row() {
    local name=$1 flags=() out
    shift
    while [ "$1" != -- ]; do flags+=("$1"); shift; done
    shift
    if ! as_user_srun "$name" -N1 -w n2 -n2 "$@" "${probe[@]}"; then
        fail "row $name: srun $*: status $?: $(tail -n 3 "$dir/$name.err")"
        return
    fi
    judge "$name" "srun $*" "${flags[@]}"
}
judge() {  # NAME WHAT ORACLE-FLAGS...
    local name=$1 what=$2 out
    shift 2
    if out=$("$python" "$here/gpu_oracle.py" "$dir" "$topo" "$dir/$name.out" "$@"); then
        pass "row $name: $what: $out"
    else
        fail "row $name: $what:"$'\n'"$out"
    fi
}

row gres --gpus 1 -- --gres=gpu:2
row gpus_per_task --gpus 1 -- --gpus-per-task=1
row tres_per_task --gpus 1 -- --tres-per-task=gres/gpu:1
row tres_bind_map --gpus 1 -- --gres=gpu:2 --tres-bind=gres/gpu:map_gpu:1,0
# Slurm numbers CUDA_VISIBLE_DEVICES under --gpu-bind (trellis leaves it), but TRELLIS_GPU, the
# HCA and the memory policy must still be those of the GPU the task runs on (gpu_test.sh checks
# only the former).
row gpu_bind_map --gpus 1 --slurm-visibility -- --gres=gpu:2 --gpu-bind=map_gpu:1,0
row task_sharing --gpus 1 -- --gpus-per-task=1 --gres-flags=allow-task-sharing
# sbatch's GPU options reach a plain srun in SLURM_TRES_PER_TASK and SLURM_TRES_BIND.
rm -f "$dir/user/sbatch".task-*
if as_user sbatch --wait -Q -N1 -w n2 -n2 --gpus-per-task=1 -o "$dir/user/sbatch.log" \
    --wrap "srun -o '$dir/user/sbatch.task-%t' ${probe[*]}" >/dev/null 2>"$dir/sbatch.err"; then
    cat "$dir/user/sbatch".task-* >"$dir/sbatch.out" 2>/dev/null
    judge sbatch "sbatch -n2 --gpus-per-task=1, then srun" --gpus 1
else
    fail "row sbatch: status $?: $(tail -n 3 "$dir/sbatch.err" "$dir/user/sbatch.log" 2>/dev/null)"
fi
echo "$failures of 7 rows wrong"
[ "$failures" -eq 0 ]
