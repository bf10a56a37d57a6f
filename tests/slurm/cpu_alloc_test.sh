#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The plugin keeps each task within the CPUs Slurm allocated, under both task plugins sites
# run: task/cgroup (a cpuset per step, which hwloc sees) and task/affinity alone (no cgroups:
# hwloc sees the whole node, so the plan takes the step's cores from Slurm). Two 1-CPU jobs
# side by side on n1 (this machine's real topology) and two --exact steps of one job must each
# stay within the CPUs `scontrol show job -d` names for them, and so apart from each other.
# Needs two CPUs; skips (77) without root, Slurm or munge.
set -u
. "$(dirname "$0")/harness.sh"
python=${PYTHON3:-python3}
[ "$(nproc)" -ge 2 ] || { echo "SKIP: one CPU: nothing to keep apart"; exit 77; }
# Each task says its job, step, CPUs, trellis's binding, and the CPUs Slurm allocated the job
# (`scontrol show job -d`), asked while the job runs: Slurm forgets a job MinJobAge seconds after
# it ends.
show='echo "$SLURM_JOB_ID $SLURM_STEP_ID $(grep Cpus_allowed_list /proc/self/status | cut -f2) ${TRELLIS_CPUS:-unbound}'\
' $(scontrol show job -d $SLURM_JOB_ID | grep -o "CPU_IDs=[0-9,-]*" | head -n 1 | cut -d= -f2)"'

# check WHAT FILE: each line "job step cpus trellis_cpus allocated" bound as trellis says,
# within its job's allocated CPUs, and the two lines' CPUs disjoint
check() {
    local what=$1 file=$2
    [ "$(wc -l <"$file")" -eq 2 ] || { fail "$what: two tasks wanted: $(cat "$file")"; return; }
    if out=$("$python" - "$file" <<'PY'
import sys
def cpus(text):
    out = set()
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out
lines = [line.split() for line in open(sys.argv[1])]
bound = [cpus(line[2]) for line in lines]
ok = True
for line, cpu_set in zip(lines, bound):
    allocated = line[4] if len(line) > 4 else ""
    if not allocated or not cpu_set or cpu_set != cpus(line[3]) or not cpu_set <= cpus(allocated):
        print(f"job {line[0]} bound to {line[2]} (trellis {line[3]}), Slurm allocated {allocated}")
        ok = False
if bound[0] & bound[1]:
    print("the two share CPUs: " + " and ".join(line[2] for line in lines))
    ok = False
sys.exit(0 if ok else 1)
PY
    ); then
        pass "$what: $(cut -d" " -f3 "$file" | tr "\n" " ")within Slurm's allocation, apart"
    else
        fail "$what: $out"
    fi
}

for tasks in cgroup affinity; do
    make_cluster_dir "trellis-cpus-$tasks"
    TRELLIS_CLUSTER_TASKS=$tasks start_cluster
    echo "== TaskPlugin=$(grep -o 'TaskPlugin=.*' "$dir/slurm.conf" | cut -d= -f2)"
    # Two jobs side by side, the first still running when the second starts: it holds its CPU
    # until the second has ended (60 s at most).
    as_user srun -w n1 -n1 bash -c "$show"' >"$0"; for _ in $(seq 600); do [ -e "$1" ] && break; sleep 0.1; done' \
        "$dir/user/first.out" "$dir/user/second.done" 2>"$dir/first.err" &
    for _ in $(seq 600); do [ -s "$dir/user/first.out" ] && break; sleep 0.1; done
    [ -s "$dir/user/first.out" ] || fail "$tasks: the first job did not start within 60 s: $(cat "$dir/first.err")"
    as_user srun -w n1 -n1 bash -c "$show" >"$dir/second.out" 2>"$dir/second.err"
    touch "$dir/user/second.done"
    wait
    cat "$dir/user/first.out" "$dir/second.out" >"$dir/jobs.out" 2>/dev/null
    check "$tasks: two 1-CPU jobs on n1" "$dir/jobs.out"
    # Two --exact steps of one 2-CPU job.
    cat >"$dir/user/exact.sh" <<JOB
#!/bin/bash
srun --exact -n1 bash -c '$show; sleep 2' &
srun --exact -n1 bash -c '$show; sleep 2' &
wait
JOB
    chmod 755 "$dir/user/exact.sh"
    job=$(as_user sbatch --parsable -w n1 -n2 -o "$dir/user/exact.out" "$dir/user/exact.sh")
    for _ in $(seq 120); do [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break; sleep 0.25; done
    check "$tasks: two --exact steps of one job" "$dir/user/exact.out"
    cd / && "$here/cluster" stop "$dir"
    rm -rf "$dir"
done
trap - EXIT
echo "$failures failures"
[ "$failures" -eq 0 ]
