#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The plugin under a real Slurm: a two-node cluster on this machine (tests/slurm/cluster),
# n1 with this machine's real topology (CPU binding checked on real CPUs) and n2 looking like
# the 8-GPU fixture. Skips (77) where the cluster cannot run: not root, no Slurm, no munge.
set -u
. "$(dirname "$0")/harness.sh"
fixtures=${TRELLIS_FIXTURES:?}/topology topo=$build/trellis-topo
python=${PYTHON3:-python3}
fixture=$fixtures/two-level-switch-8gpu.xml

make_cluster_dir trellis-slurm
start_cluster "n2=$fixture"
checks=0
# run NAME CMD...: runs as the cluster's unprivileged job user with a time limit, output in
# $dir/NAME.out/.err, status in $rc
run() {
    local name=$1
    shift
    checks=$((checks + 1))
    as_user "$@" >"$dir/$name.out" 2>"$dir/$name.err"
    rc=$?
}
# run_tasks NAME srun SRUN-ARGS...: as run, each task's output and errors in files of their own,
# gathered into $dir/NAME.out and .err. Slurm forwards output in pieces of at most 1024 bytes, so two tasks' long
# lines (the task report) could interleave on srun's own output.
run_tasks() {
    local name=$1
    shift
    rm -f "$dir/user/$name".task-* "$dir/user/$name".errors-*
    run "$name" "$1" -o "$dir/user/$name.task-%t" -e "$dir/user/$name.errors-%t" "${@:2}"
    cat "$dir/user/$name".task-* >"$dir/$name.out" 2>/dev/null
    cat "$dir/user/$name".errors-* >>"$dir/$name.err" 2>/dev/null
}
expect_ok() { [ "$rc" -eq 0 ] || fail "$1: exit status $rc: $(tail -n 5 "$dir/$1.err")"; }
expect_in() { grep -qF -- "$3" "$dir/$1.$2" && pass "$1" || fail "$1: $2 lacks '$3': $(tail -n 8 "$dir/$1.$2")"; }
expect_refused() {
    [ "$rc" -ne 0 ] || fail "$1: accepted, wanted a refusal"
    expect_in "$1" err "$2"
}

# What each task sees, one JSON object per line.
task_report='import json,os; print(json.dumps({"node": os.environ.get("SLURMD_NODENAME"),
  "local": int(os.environ["SLURM_LOCALID"]), "env": {k: v for k, v in os.environ.items()
  if k.startswith(("TRELLIS_", "CUDA_", "NCCL_", "UCX_", "ROCR_", "OMP_", "OMPI_MCA_btl")) and k != "TRELLIS_SECRET"},
  "cpus": [l.split()[1] for l in open("/proc/self/status") if l.startswith("Cpus_allowed_list")][0]}))'

# 1. Each task's environment equals trellis-topo's plan for its node (n2: fixture with all
#    8 GPUs of its gres, n1: live).
run_tasks env_n1 srun -N1 -w n1 -n2 "$python" -c "$task_report"
expect_ok env_n1
run_tasks env_n2 srun -N1 -w n2 -n2 --gres=gpu:8 "$python" -c "$task_report"
expect_ok env_n2
cat "$dir/env_n1.out" "$dir/env_n2.out" >"$dir/env_matches_plan.out"
"$topo" plan --tasks 2 --xml "$fixture" --json >"$dir/plan-n2.json"
"$topo" plan --tasks 2 --json >"$dir/plan-n1.json"
"$python" - "$dir" <<'PY' && pass "env equals trellis-topo plan on n1 and n2" || fail "env differs from the plan"
import json, os, sys
d = sys.argv[1]
exported = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NCCL_IB_HCA", "UCX_NET_DEVICES", "NCCL_SOCKET_IFNAME"}
plans = {n: json.load(open(f"{d}/plan-{n}.json")) for n in ("n1", "n2")}
tasks = [json.loads(l) for l in open(f"{d}/env_matches_plan.out")]
ok = len(tasks) == 4
for t in tasks:
    plan_env = plans[t["node"]]["tasks"][t["local"]]["env"]
    want = {k: v for k, v in plan_env.items() if k.startswith("TRELLIS_") or k in exported}
    want["TRELLIS_BINDING_SET"] = ",".join(sorted(want))
    want.update({"TRELLIS_LOCAL_RANK": str(t["local"]), "TRELLIS_LOCAL_SIZE": "2"})
    # What the plugin set: leave out what srun carried over from this test's own environment.
    got = {k: v for k, v in t["env"].items()
           if (k in want or k.startswith("TRELLIS_")) and k != "TRELLIS_WIREUP_SET" and os.environ.get(k) != v}
    if got != want:
        ok = False
        print(f"{t['node']} task {t['local']}: got {got}\nwant {want}")
n2 = [t for t in tasks if t["node"] == "n2"]
# Each task's 4 GPUs bring it 4 HCAs of its own; NCCL is left to choose among all of them.
ok = ok and sorted(t["env"].get("UCX_NET_DEVICES") for t in n2) == [
    "mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1", "mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1"]
ok = ok and all("NCCL_IB_HCA" not in t["env"] for t in tasks)
sys.exit(0 if ok else 1)
PY

# 2. Two tasks on the real node get disjoint CPUs, the ones the plan names.
run_tasks disjoint_cpus srun -N1 -n2 -w n1 "$python" -c "$task_report"
expect_ok disjoint_cpus
"$python" - "$dir/disjoint_cpus.out" "$(nproc)" <<'PY' && pass "disjoint CPUs on n1" || fail "CPUs on n1 not disjoint"
import json, sys
tasks = [json.loads(l) for l in open(sys.argv[1])]
def cpus(s):
    out = set()
    for part in s.split(","):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out
sets = [cpus(t["cpus"]) for t in tasks]
ok = len(sets) == 2 and all(sets) and not (sets[0] & sets[1])
ok = ok and all(cpus(t["cpus"]) == cpus(t["env"]["TRELLIS_CPUS"]) for t in tasks)
if int(sys.argv[2]) >= 2:
    ok = ok and all(len(s) < int(sys.argv[2]) for s in sets)
print(tasks)
sys.exit(0 if ok else 1)
PY

# 3. Options and their environment variables.
run_tasks bind_none srun -N1 -n2 -w n2 --trellis-bind=none "$python" -c "$task_report"
expect_ok bind_none
grep -q CUDA_VISIBLE_DEVICES "$dir/bind_none.out" && fail "bind_none: CUDA_VISIBLE_DEVICES set" || pass "--trellis-bind=none exports nothing"
TRELLIS_BIND=none run bind_none_env srun -N1 -n1 -w n2 "$python" -c "$task_report"
grep -q CUDA_VISIBLE_DEVICES "$dir/bind_none_env.out" && fail "TRELLIS_BIND=none: CUDA_VISIBLE_DEVICES set" || pass "TRELLIS_BIND=none"
run_tasks hca_option srun -N1 -n2 -w n2 --trellis-hca=mlx5_3 "$python" -c "$task_report"
expect_ok hca_option
[ "$(grep -c '"NCCL_IB_HCA": "=mlx5_3:1"' "$dir/hca_option.out")" -eq 2 ] && pass "--trellis-hca" || fail "--trellis-hca: $(cat "$dir/hca_option.out")"
TRELLIS_HCA=mlx5_5:1 run hca_env srun -N1 -n1 -w n2 "$python" -c "$task_report"
expect_in hca_env out '"NCCL_IB_HCA": "=mlx5_5:1"'
run verbose srun -N2 -n2 --trellis-verbose true
expect_ok verbose
expect_in verbose err "trellis binding on n2: policy closest, 1 task"
expect_in verbose err "rank  task  GPU  CUDA  HCA       distance  CPUs"
grep -qE '^1 +0 +- +- +mlx5_0:1' "$dir/verbose.err" && pass "the report names each task's global rank" ||
    fail "verbose: n2's row lacks rank 1: $(cat "$dir/verbose.err")"
TRELLIS_VERBOSE=1 run verbose_env srun -N1 -n1 -w n1 true
expect_in verbose_env err "trellis binding on n1"
run bind_verbose srun -N1 -n1 -w n2 --gres=gpu:1 --trellis-bind=closest,verbose true
expect_in bind_verbose err "mlx5_4:1  PIX"

# 4. Bad values stop srun and sbatch before anything runs.
run bad_bind srun -N1 --trellis-bind=nearest touch "$dir/user/launched"
expect_refused bad_bind "'nearest' is not a binding (accepted: closest or none"
TRELLIS_BIND=far run bad_bind_env srun -N1 touch "$dir/user/launched"
expect_refused bad_bind_env "environment TRELLIS_BIND=far"
run bad_hca srun -N1 --trellis-hca=mlx5_0:x touch "$dir/user/launched"
expect_refused bad_hca "accepted: NAME or NAME:PORT"
TRELLIS_VERBOSE=loud run bad_verbose_env srun -N1 touch "$dir/user/launched"
expect_refused bad_verbose_env "accepted: 1, yes, true, on"
run bad_sbatch sbatch --trellis-bind=bogus --wrap "touch $dir/user/launched"
expect_refused bad_sbatch "'bogus' is not a binding"
run bad_salloc salloc -N1 --trellis-bind=bogus touch "$dir/user/launched"
expect_refused bad_salloc "'bogus' is not a binding"
[ ! -e "$dir/user/launched" ] && pass "nothing launched on bad values" || fail "a refused job ran"

# 5. A user error found on the node is held in user_init and shown from task_init.
run missing_hca srun -N1 -n1 -w n2 --trellis-hca=mlx5_9 true
expect_refused missing_hca "HCA 'mlx5_9' is not on n2"

# 6. A bad configuration file fails the step naming file, line and key.
cp "$dir/trellis.toml" "$dir/trellis.toml.good"
printf '[binding]\npolicy = "closest"\nsmt = "maybe"\n' >"$dir/trellis.toml"
run bad_config srun -N1 touch "$dir/user/launched"
expect_refused bad_config "$dir/trellis.toml:3: [binding] key 'smt': must be true or false"
printf '[binding]\nhca_filter = ["mlx5_*"]\n' >"$dir/trellis.toml"
run unknown_key srun -N1 true
expect_refused unknown_key "trellis.toml:2: [binding] key 'hca_filter' is unknown"
run bad_config_sbatch sbatch -N1 --wrap "touch $dir/user/launched"
expect_refused bad_config_sbatch "key 'hca_filter' is unknown"
cp "$dir/trellis.toml.good" "$dir/trellis.toml"
[ ! -e "$dir/user/launched" ] || fail "a job ran with a bad configuration"

# 6b. A configuration that breaks after submission: the batch job fails visibly (its output
#     and exit code), and the node is not drained.
run held_job sbatch --parsable --hold -N1 -w n1 -o "$dir/user/held.out" --wrap "touch $dir/user/launched"
job=$(cat "$dir/held_job.out")
printf '[binding]\nsmt = "maybe"\n' >"$dir/trellis.toml"
scontrol release "$job"
for _ in $(seq 120); do [ -z "$(squeue -h -t PD,R,CG -j "$job" 2>/dev/null)" ] && break; sleep 0.25; done
cp "$dir/trellis.toml.good" "$dir/trellis.toml"
state=$(scontrol show job "$job" 2>/dev/null | grep -oE '(JobState|ExitCode)=[^ ]*' | tr '\n' ' ')
nodes=$(sinfo -h -n n1 -o %t)
if grep -q "trellis.toml:2: \[binding\] key 'smt'" "$dir/user/held.out" 2>/dev/null && [ ! -e "$dir/user/launched" ] &&
    [[ "$state" == *JobState=FAILED* ]] && [[ "$state" != *ExitCode=0:0* ]] && [ "$nodes" = idle ]; then
    pass "a configuration broken after submission fails the batch job visibly ($state), n1 stays $nodes"
else
    fail "broken configuration on the node: job '$state', n1 '$nodes', output: $(cat "$dir/user/held.out" 2>&1)"
fi
scontrol update nodename=n1 state=resume 2>/dev/null

# 6c. optional in plugstack.conf: with a broken configuration jobs run without the plugin.
cp "$dir/plugstack.conf" "$dir/plugstack.conf.good"
sed -i 's/^required /optional /' "$dir/plugstack.conf"
printf '[binding]\nsmt = "maybe"\n' >"$dir/trellis.toml"
run optional_broken srun -N1 -n1 -w n1 "$python" -c "$task_report"
cp "$dir/trellis.toml.good" "$dir/trellis.toml"
cp "$dir/plugstack.conf.good" "$dir/plugstack.conf"
expect_ok optional_broken
grep -q '"TRELLIS_CPUS"' "$dir/optional_broken.out" && fail "optional with a broken configuration still bound: $(cat "$dir/optional_broken.out")" ||
    pass "optional with a broken configuration: the job ran without trellis"

# 7. Slurm's own --cpu-bind wins, with a warning.
run_tasks cpu_bind srun -N1 -n2 -w n1 --cpu-bind=map_cpu:1,0 --trellis-verbose "$python" -c "$task_report"
expect_ok cpu_bind
expect_in cpu_bind err "srun --cpu-bind was given: Slurm's CPU binding is used instead"
if [ "$(nproc)" -ge 2 ]; then
    grep -q '"local": 0.*"cpus": "1"' "$dir/cpu_bind.out" && pass "map_cpu applied" || fail "cpu_bind: task 0 not on CPU 1: $(cat "$dir/cpu_bind.out")"
fi
run gpu_bind srun -N1 -n1 -w n2 --gpu-bind=closest --trellis-verbose "$python" -c "$task_report"
expect_in gpu_bind err "GPU visibility is left to Slurm"
grep -q CUDA_VISIBLE_DEVICES "$dir/gpu_bind.out" && fail "gpu_bind: trellis set CUDA_VISIBLE_DEVICES" || pass "--gpu-bind wins"

# 8. An sbatch script with #SBATCH --trellis-bind=closest,verbose prints the table.
cat >"$dir/job.sh" <<JOB
#!/bin/bash
#SBATCH --trellis-bind=closest,verbose
#SBATCH -N 2
#SBATCH -n 2
#SBATCH -o $dir/user/job.out
srun bash -c 'echo "task \$SLURM_PROCID on \$SLURMD_NODENAME CUDA=\$CUDA_VISIBLE_DEVICES"'
JOB
run sbatch sbatch --parsable "$dir/job.sh"
expect_ok sbatch
job=$(cat "$dir/sbatch.out")
for _ in $(seq 120); do [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break; sleep 0.25; done
cp "$dir/user/job.out" "$dir/job.out"
expect_in job out "trellis binding on n2: policy closest, 1 task"
expect_in job out "task 1 on n2 CUDA="
grep -q "task 1 on n2 CUDA=$" "$dir/job.out" && pass "a job without GPUs is shown none" || fail "job: $(cat "$dir/job.out")"

# 8a. salloc (an interactive session; without a terminal it runs the command it is given): its
#     trellis options reach the steps srun starts in the allocation, as sbatch's do.
run salloc salloc -N1 -n1 -w n2 --trellis-bind=closest,verbose --trellis-hca=mlx5_3 \
    srun "$python" -c "$task_report"
expect_ok salloc
expect_in salloc err "trellis binding on n2: policy closest, 1 task"
[ "$(grep -c '"NCCL_IB_HCA": "=mlx5_3:1"' "$dir/salloc.out")" -eq 1 ] &&
    pass "salloc's --trellis-hca reaches the step on n2" || fail "salloc: $(cat "$dir/salloc.out" "$dir/salloc.err")"

# 8b. trellis-agent launch under srun says when its ranks share CPUs (Slurm gave the one
#     agent task a single CPU of n1, the real node), once for all the ranks concerned.
run agent_shares srun -N1 -n1 -w n1 "$build/trellis-agent" launch --nproc-per-node 2 -- true
expect_ok agent_shares
expect_in agent_shares err "trellis-agent: ranks 0, 1: 2 tasks share 1 CPUs"
# n1 has no HCA, which matters only to a step on several nodes.
grep -q "no HCA" "$dir/agent_shares.err" && fail "agent_shares: a one-node launch warns of no HCA" ||
    pass "no HCA warning for a one-node launch"

# 9. Memory policy on the real node: preferred by default, bind or none on request.
for choice in default bind preferred none; do
    option=()
    [ $choice = default ] || option=(--trellis-memory=$choice)
    run "memory_$choice" srun -N1 -n1 -w n1 "${option[@]}" "$python" -c \
        'print(open("/proc/self/numa_maps").readline().split()[1])'
    expect_ok "memory_$choice"
done
numa=$(cut -d, -f1 <<<"$("$topo" plan --tasks 1 --json | "$python" -c 'import json,sys; print(json.load(sys.stdin)["tasks"][0]["numa"][0])')")
[ "$(cat "$dir/memory_default.out")" = "prefer:$numa" ] && [ "$(cat "$dir/memory_preferred.out")" = "prefer:$numa" ] &&
    [ "$(cat "$dir/memory_bind.out")" = "bind:$numa" ] && [ "$(cat "$dir/memory_none.out")" = default ] &&
    pass "memory policy: default prefer:$numa, bind, none" ||
    fail "memory policy: $(cat "$dir"/memory_*.out | tr '\n' ' ')"
run bad_memory srun -N1 --trellis-memory=strict true
expect_refused bad_memory "accepted: bind, preferred, none"

# 10. PMIx keys exchanged across both nodes with the plugin loaded.
# (A copy in the cluster folder: the build folder need not be readable by the job user.)
if [ -f "$dir/no-mpi-pmix" ]; then
    echo "skipped: the PMIx exchange: $(cat "$dir/no-mpi-pmix")"
elif [ -x "$build/tests/slurm/pmix_exchange" ]; then
    cp "$build/tests/slurm/pmix_exchange" "$dir/pmix_exchange" && chmod 755 "$dir/pmix_exchange"
    run pmix srun -N2 -n4 --mpi=pmix "$dir/pmix_exchange"
    expect_ok pmix
    [ "$(grep -c 'sees: rank 0 on n1; rank 1 on n1; rank 2 on n2; rank 3 on n2' "$dir/pmix.out")" -eq 4 ] &&
        pass "PMIx exchange across n1 and n2" || fail "pmix: $(cat "$dir/pmix.out" "$dir/pmix.err")"
else
    echo "skipped: the PMIx exchange (its probe was not built: configure found no PMIx)"
fi

# 11. The step's secret: the same in every task of a step on both nodes, under --export=NONE too,
#     a new one for every step (a secret in srun's environment is not passed on), and the name
#     it travels under is not left in the tasks' environment.
secret_report='import os; print(os.environ.get("TRELLIS_SECRET", "-"), os.environ.get("SLURM_TRELLIS_SECRET", "-"))'
run_tasks secret_none srun -N2 -n4 --export=NONE "$(command -v "$python")" -c "$secret_report"
expect_ok secret_none
TRELLIS_SECRET=0123 run_tasks secret_all srun -N2 -n2 "$python" -c "$secret_report"
expect_ok secret_all
"$python" - "$dir" <<'PY' && pass "the step's secret: one per step, in every task, --export=NONE too" || fail "the step's secret: $(cat "$dir"/secret_*.out "$dir"/secret_*.err)"
import re, sys
d = sys.argv[1]
steps = [[line.split() for line in open(f"{d}/{name}.out")] for name in ("secret_none", "secret_all")]
assert [len(tasks) for tasks in steps] == [4, 2], steps
for tasks in steps:
    assert all(re.fullmatch("[0-9a-f]{64}", t[0]) and t[1] == "-" for t in tasks), tasks
    assert len({t[0] for t in tasks}) == 1, tasks
assert steps[0][0][0] != steps[1][0][0]
PY

echo "$checks Slurm runs, $failures failures"
[ "$failures" -eq 0 ]
