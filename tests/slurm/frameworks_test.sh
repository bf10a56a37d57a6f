#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The users' own programs under plain srun, wired up by the plugin with no wrapper script:
# a PyTorch DistributedDataParallel training (Debian's python3-torch, gloo, init_method
# 'env://') on 2 nodes x 2 tasks whose ranks must end with identical parameters; an Open MPI
# program (--mpi=pmix) exchanging data across both nodes under the plugin's binding; the
# wireup's rules (the user's values win, none turns it off, the batch step gets nothing) and
# TF_CONFIG in TensorFlow's documented format (TensorFlow itself is not a Debian package, so
# no TensorFlow program runs here). Jobs run as the cluster's unprivileged user.
set -u
. "$(dirname "$0")/harness.sh"
python=${PYTHON3:-python3}
fixture=${TRELLIS_FIXTURES:?}/topology/two-level-switch-8gpu.xml

make_cluster_dir trellis-frameworks
start_cluster "n2=$fixture"
cp "$here/task_probe.py" "$here/frameworks/ddp_train.py" "$dir/" && chmod 644 "$dir"/*.py
field() {  # NAME PYTHON-EXPRESSION over the list `tasks` (task_probe.py lines)
    "$python" -c "import json,sys; tasks=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]; print($2)" \
        "$dir/$1.out"
}

# 1. PyTorch DDP, started by srun alone.
if "$python" -c 'import torch.distributed' 2>/dev/null; then
    # Four PyTorch imports on two busy cores (make -j check) can take minutes. PyTorch 2.4 and
    # later rendezvous over libuv by default, and Debian 13's 2.6 is built without it
    # ("use_libuv was requested but PyTorch was build without libuv support"): USE_LIBUV=0, as
    # its users must set (PyTorch 1.13, Debian 12's, ignores it).
    started=$(date +%s)
    USE_LIBUV=0 user_timeout=400 as_user_srun ddp -N2 --ntasks-per-node=2 "$python" "$dir/ddp_train.py" ||
        fail "DDP under srun: status $?: $(tail -n 8 "$dir/ddp.err")"
    if [ "$(field ddp 'len(tasks) == 4 and sorted(t["rank"] for t in tasks) == [0, 1, 2, 3] and
            {t["node"] for t in tasks} == {"n1", "n2"} and len({t["digest"] for t in tasks}) == 1')" = True ]; then
        pass "PyTorch DDP (gloo, env://) on 2 nodes x 2 tasks: all 4 ranks joined, identical parameters after 5 steps ($(($(date +%s) - started)) s)"
    else
        fail "DDP: $(cat "$dir/ddp.out" "$dir/ddp.err")"
    fi
else
    echo "SKIP (in this test): PyTorch is not installed (apt-get install python3-torch)"
fi

# 2. Open MPI over PMIx, under the plugin's binding. The ranks' TCP traffic stays on the
#    loopback device: all "nodes" are this machine.
if command -v mpicc >/dev/null; then
    mpicc -O2 -o "$dir/mpi_exchange" "$here/frameworks/mpi_exchange.c" && chmod 755 "$dir/mpi_exchange"
    mpi_step() {
        OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo \
            as_user_srun mpi -N2 --ntasks-per-node=2 --mpi=pmix "$dir/mpi_exchange"
    }
    # Open MPI 4.1 (Debian 12's) now and then takes a TCP connect still in progress, or one
    # the loaded loopback answered with EAGAIN, for a failure and its rank crashes
    # (open-mpi/ompi#10734, #11508): those errors of its wireup, and only they, are retried
    # once, and said so.
    mpi_step || { grep -q -E "Error: +(Operation now in progress \(115\)|Resource temporarily unavailable \(11\))" "$dir/mpi.err" &&
        echo "Open MPI's TCP connect taken for a failure (ompi#10734): the step runs once more" && mpi_step; } ||
        fail "MPI under srun: status $?: $(tail -n 8 "$dir/mpi.err")"
    if [ "$(grep -c 'of 4 on n[12]: sum 6, left neighbour on n' "$dir/mpi.out")" -eq 4 ] &&
        grep -q 'rank 0 of 4 on n1: sum 6, left neighbour on n2' "$dir/mpi.out" &&
        grep -q 'rank 1 of 4 on n1: .*CPUs \([0-9,-]*\), TRELLIS_CPUS \1$' "$dir/mpi.out"; then
        pass "Open MPI (--mpi=pmix): allreduce and a ring across n1 and n2, CPUs as the plugin bound them"
    else
        fail "MPI: $(cat "$dir/mpi.out" "$dir/mpi.err")"
    fi
    cat "$dir/mpi.out"
else
    echo "SKIP (in this test): no mpicc (apt-get install libopenmpi-dev)"
fi

# 3. The wireup's variables and rules.
probe=("$python" "$dir/task_probe.py")
as_user_srun wired -N2 --ntasks-per-node=2 "${probe[@]}" || fail "wired: $(cat "$dir/wired.err")"
expect='sorted((t["rank"], t["env"]["RANK"], t["env"]["WORLD_SIZE"], t["env"]["LOCAL_RANK"], t["env"]["LOCAL_WORLD_SIZE"],
         t["env"]["NODE_RANK"], t["env"]["GROUP_RANK"], t["env"]["MASTER_ADDR"]) for t in tasks)'
want="[(0, '0', '4', '0', '2', '0', '0', '127.0.0.1'), (1, '1', '4', '1', '2', '0', '0', '127.0.0.1'), (2, '2', '4', '0', '2', '1', '1', '127.0.0.1'), (3, '3', '4', '1', '2', '1', '1', '127.0.0.1')]"
[ "$(field wired "$expect")" = "$want" ] && pass "RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR (n1's NodeAddr)" ||
    fail "wired: $(field wired "$expect")"
[ "$(field wired 'len({t["env"]["MASTER_PORT"] for t in tasks})')" = 1 ] && pass "one MASTER_PORT for the step" ||
    fail "wired: MASTER_PORT differs between tasks"
as_user_srun next -N2 --ntasks-per-node=2 "${probe[@]}"
[ "$(field next 'tasks[0]["env"]["MASTER_PORT"]')" != "$(field wired 'tasks[0]["env"]["MASTER_PORT"]')" ] &&
    pass "the next step meets at another port" || fail "two steps got the same MASTER_PORT"
MASTER_PORT=4242 MASTER_ADDR=10.9.9.9 as_user_srun user_set -N1 -n1 "${probe[@]}"
[ "$(field user_set '(tasks[0]["env"]["MASTER_PORT"], tasks[0]["env"]["MASTER_ADDR"], tasks[0]["env"]["RANK"])')" = \
    "('4242', '10.9.9.9', '0')" ] && pass "values the user set win" || fail "user_set: $(cat "$dir/user_set.out")"
as_user_srun none -N1 -n1 --trellis-wireup=none "${probe[@]}"
[ "$(field none '[k for k in ("RANK", "MASTER_ADDR", "WORLD_SIZE") if k in tasks[0]["env"]]')" = "[]" ] &&
    pass "--trellis-wireup=none exports none of them" || fail "none: $(cat "$dir/none.out")"
TRELLIS_WIREUP=tf:chief:ps=1 as_user_srun tf -N2 --ntasks-per-node=2 "${probe[@]}"
"$python" - "$dir/tf.out" <<'PY' && pass "TF_CONFIG: chief, ps and workers in TensorFlow's format, one port per task" || fail "TF_CONFIG: $(cat "$dir/tf.out" "$dir/tf.err")"
import json, sys
tasks = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
configs = {t["rank"]: json.loads(t["env"]["TF_CONFIG"]) for t in tasks}
cluster = configs[0]["cluster"]
ok = len(configs) == 4 and all(c["cluster"] == cluster for c in configs.values())
ok = ok and set(cluster) == {"chief", "ps", "worker"} and len(cluster["chief"]) == 1 and len(cluster["ps"]) == 1
ok = ok and len(cluster["worker"]) == 2
addresses = cluster["chief"] + cluster["ps"] + cluster["worker"]
ok = ok and len(set(addresses)) == 4 and all(a.rsplit(":", 1)[1].isdigit() for a in addresses)
roles = [(configs[r]["task"]["type"], configs[r]["task"]["index"]) for r in range(4)]
ok = ok and roles == [("chief", 0), ("ps", 0), ("worker", 0), ("worker", 1)]
print(configs[2])
sys.exit(0 if ok else 1)
PY
as_user srun -N1 -n1 --trellis-wireup=tf:ps=9 true >"$dir/tf_bad.out" 2>&1 && fail "tf:ps=9 on 1 task accepted" ||
    { grep -q "leave no worker" "$dir/tf_bad.out" && pass "a TF_CONFIG with no worker fails the step, naming why" ||
        fail "tf_bad: $(cat "$dir/tf_bad.out")"; }
as_user srun -N1 -n1 --trellis-wireup=pytorch true >"$dir/bad_wireup.out" 2>&1 && fail "--trellis-wireup=pytorch accepted" ||
    { grep -q "accepted: none, torch" "$dir/bad_wireup.out" && pass "a bad --trellis-wireup stops srun, saying what is accepted" ||
        fail "bad_wireup: $(cat "$dir/bad_wireup.out")"; }
# The batch script is not a task of a step: it gets no RANK; the step it starts does.
cat >"$dir/user/batch.sh" <<JOB
#!/bin/bash
echo "batch RANK=\${RANK:-unset}"
srun -n1 bash -c 'echo "step RANK=\$RANK WORLD_SIZE=\$WORLD_SIZE"'
JOB
chmod 755 "$dir/user/batch.sh"
job=$(as_user sbatch --parsable -N1 -o "$dir/user/batch.out" "$dir/user/batch.sh")
for _ in $(seq 120); do [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break; sleep 0.25; done
grep -q "batch RANK=unset" "$dir/user/batch.out" && grep -q "step RANK=0 WORLD_SIZE=1" "$dir/user/batch.out" &&
    pass "the batch step gets no wireup, its steps do" || fail "batch: $(cat "$dir/user/batch.out")"

echo "$failures failures"
[ "$failures" -eq 0 ]
