#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Containers under a real Slurm (tests/slurm/cluster), every step submitted by the cluster's
# unprivileged user: srun --trellis-image runs each task in the step's container on both
# nodes with its binding, as the user (their uid and groups, no root inside), in the job's
# cgroups, with PMIx across nodes; no process runs as root with the image as its root, and
# nothing of the container outlives its tasks (normal end, scancel, kill -9 of srun or of
# slurmstepd). Then what a hostile user may try: a mount over the container's own files, a
# link swapped under a mount source, writing into the image, changeable or privileged entries
# in an image, stalling another user's start, ',' in a source, a forged log line; and `:ro`
# for submounts, an image that cannot be used with trellis `optional` in plugstack.conf, the
# TaskProlog, a .sif image through the Apptainer TEST DOUBLE. Skips (77) without
# root, Slurm, munge or user namespaces.
set -u
. "$(dirname "$0")/harness.sh"
[ -x "$build/tests/slurm/pmix_exchange" ] || { echo "SKIP: the PMIx probe was not built (configure found no PMIx: apt-get install libpmix-dev; make check builds it)"; exit 77; }
fixtures=${TRELLIS_FIXTURES:?}/topology
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the test cluster needs root"; exit 77; }
[ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -gt 0 ] ||
    { echo "SKIP: user namespaces are off (user.max_user_namespaces = 0): no container can be made"; exit 77; }

make_cluster_dir trellis-slurm-container
"$here/../container/make_bundle" "$dir/bundle" "$build/tests/slurm/pmix_exchange" >/dev/null || exit $?
"$here/../container/make_bundle" "$dir/other-bundle" >/dev/null || exit $?
mkdir -p "$dir/shared" && echo "from the host" >"$dir/shared/note"
# .sif images through the Apptainer TEST DOUBLE (Apptainer is not a Debian package).
mkdir -p "$dir/bin" "$dir/double" && chmod 1777 "$dir/double" && touch "$dir/image.sif"
ln -s "$here/../container/apptainer-test-double" "$dir/bin/apptainer"
. "$here/../container/apptainer_double_left.sh"
cat >"$dir/trellis.toml" <<TOML
[binding]
policy = "closest"
[container]
allowed_images = ["$dir/bundle", "$dir/*.sif"]
allowed_mounts = ["$dir/shared"]
agent = "$build/trellis-agent"
apptainer = "$dir/bin/apptainer"
TOML
start_cluster "n2=$fixtures/two-level-switch-8gpu.xml"
uid=$(id -u "$job_user")
chown "$job_user" "$dir/shared"
# A supplementary group of the user's, which the container must keep.
groupadd -f trellistest-extra && usermod -a -G trellistest-extra "$job_user"
install -m 0640 -g trellistest-extra /dev/null "$dir/shared/group-only" && echo "group readable" >"$dir/shared/group-only"
image=(--trellis-image="$dir/bundle")
touch "$dir/t0"
sleep 1
# The processes that have the image as their root (inside a container), as "PID UID".
# This image's marker, by device and inode: another test run's containers do not count.
marker=$(stat -c %d:%i "$dir/bundle/rootfs/trellis-image-marker")
helpers() { pgrep -f "trellis-agent prepare .*--config $dir/trellis.toml"; }
in_image() {
    for p in /proc/[0-9]*; do
        [ "$(stat -L -c %d:%i "$p/root/trellis-image-marker" 2>/dev/null)" = "$marker" ] && echo "${p#/proc/} $(stat -c %u "$p")"
    done 2>/dev/null
}
nothing_left() {  # WHAT: no process in an image, no helper of trellis's
    local left
    for _ in $(seq 1 50); do
        left="$(in_image)$(helpers)"
        [ -z "$left" ] && { pass "$1: nothing of the container left"; return; }
        sleep 0.2
    done
    fail "$1: left behind: $left"
}

# 1. The command runs in the image on both nodes, with each task's binding.
as_user_srun inside -N2 -n4 --ntasks-per-node=2 "${image[@]}" --trellis-mounts="$dir/shared:/shared:ro" \
    sh -c 'echo "$SLURMD_NODENAME local=$TRELLIS_LOCAL_RANK $(cat /trellis-image-marker) $(cat /shared/note) $(grep Cpus_allowed_list /proc/self/status | tr -d "\t")"'
rc=$?
cat "$dir/inside.out"
[ $rc -eq 0 ] || fail "srun in the image: status $rc: $(tail -n 5 "$dir/inside.err")"
[ "$(grep -c 'inside a trellis test image from the host' "$dir/inside.out")" -eq 4 ] &&
    pass "4 tasks on n1 and n2 ran in the image and see the mount" || fail "not every task ran in the image"
grep -q "^n1 local=1 .*Cpus_allowed_list:" "$dir/inside.out" && pass "the binding reaches the tasks inside" ||
    fail "no binding inside"
# The job's folder is not in the image: the step says so once, and how to keep it.
[ "$(grep -c "the working directory $dir/user is not in the image .*: tasks start in /" "$dir/inside.err")" -eq 1 ] &&
    pass "tasks that start in / are told so, once per step" || fail "no word on the working directory: $(cat "$dir/inside.err")"
# A GPU step: its tasks see the GPUs Slurm gave it, numbered as inside their cgroup, and the
# container has exactly those GPUs' device files (by minor number: n2's are not in PCI order).
as_user_srun gpus -N1 -w n2 -n2 --gres=gpu:2 --trellis-verbose "${image[@]}" sh -c \
    'echo "$SLURMD_NODENAME local=$TRELLIS_LOCAL_RANK gpus=$CUDA_VISIBLE_DEVICES devices=$(ls /dev | grep "^nvidia[0-9]" | tr "\n" " ")"'
cat "$dir/gpus.out"
grep -q "^n2 local=0 gpus=0 devices=nvidia0 nvidia1 $" "$dir/gpus.out" &&
    grep -q "^n2 local=1 gpus=1 devices=nvidia0 nvidia1 $" "$dir/gpus.out" &&
    pass "a GPU step in the image: its GPUs as its cgroup numbers them, their device files bound in" ||
    fail "GPU step in the image: $(cat "$dir/gpus.out" "$dir/gpus.err")"
grep -q "^container: the tasks run in ${image[0]#--trellis-image=}$" "$dir/gpus.err" &&
    pass "the verbose report names the image" || fail "verbose report without the image: $(cat "$dir/gpus.err")"
nothing_left "after a normal end"

# Eight tasks of one node join the one container made for the step.
as_user_srun eight -N1 -n8 -O -w n1 "${image[@]}" sh -c 'cat /trellis-image-marker'
[ "$(grep -c "inside a trellis test image" "$dir/eight.out")" -eq 8 ] &&
    pass "8 tasks on n1 share the step's container" || fail "8 tasks: $(cat "$dir/eight.out" "$dir/eight.err")"

# 2. A PMIx client inside the container exchanges keys across both nodes.
as_user_srun pmix -N2 -n4 --mpi=pmix "${image[@]}" /usr/local/bin/pmix_exchange
[ "$(grep -c 'sees: rank 0 on n1; rank 1 on n1; rank 2 on n2; rank 3 on n2' "$dir/pmix.out")" -eq 4 ] &&
    pass "PMIx exchange across n1 and n2 from inside the container" ||
    fail "pmix in the container: $(tail -n 5 "$dir/pmix.out" "$dir/pmix.err")"

# 3. Inside, the user is themselves: their uid and gid, their supplementary group still
# working (it shows as nogroup: only the user's own ids are mapped), no capabilities, in the
# job's cgroups; /tmp is the container's own and writable.
as_user_srun who -N1 -n1 -w n1 "${image[@]}" --trellis-mounts="$dir/shared:/shared" sh -c \
    'echo "uid=$(id -u) gid=$(id -g) caps=$(grep CapEff /proc/self/status | tr -d "\t") $(grep NoNewPrivs /proc/self/status | tr -d "\t") group-file=$(cat /shared/group-only)"; cat /proc/self/cgroup; touch /tmp/x && stat -c "tmp=%a" /tmp'
cat "$dir/who.out"
grep -q "^uid=$uid gid=$(id -g "$job_user") caps=CapEff:0000000000000000 NoNewPrivs:1 group-file=group readable$" "$dir/who.out" &&
    pass "the user inside is $job_user (uid $uid), with their supplementary group, no capabilities, no new privileges" ||
    fail "user inside: $(cat "$dir/who.out" "$dir/who.err")"
if grep -q "devices" /proc/self/cgroup; then
    grep -q "devices:/slurm_n1/uid_$uid/job_[0-9]*/step_0/task_0" "$dir/who.out" &&
        grep -q "cpuset:/slurm_n1/uid_$uid/job_[0-9]*/step_0" "$dir/who.out" &&
        grep -q "freezer:/slurm_n1/uid_$uid/job_[0-9]*/step_0" "$dir/who.out" &&
        pass "the container's task is in the job's cgroups (devices, cpuset, freezer: Slurm's limits and tracking)" ||
        fail "cgroups inside: $(grep -E "devices|cpuset|freezer" "$dir/who.out")"
fi
grep -q "^tmp=1777$" "$dir/who.out" && pass "/tmp inside: the container's own, 1777, writable (the image's is 0755)" ||
    fail "/tmp in the container: $(cat "$dir/who.out")"
# While a step runs: only the user's tasks have the image as their root, none of root's.
as_user srun -N1 -n2 -w n1 "${image[@]}" sleep 8 >/dev/null 2>&1 &
step=$!
# Up to 30 s for both tasks to be set up: a loaded machine (two CI runs side by side) took more than 10.
for _ in $(seq 1 300); do [ "$(in_image | wc -l)" -ge 2 ] && break; sleep 0.1; done
seen=$(in_image)
echo "processes in the image: $(echo "$seen" | tr '\n' ',')"
[ "$(echo "$seen" | grep -c " $uid$")" -ge 2 ] && ! echo "$seen" | grep -qv " $uid$" &&
    pass "only $job_user's tasks run in the image, no process of root's" || fail "processes in the image: $seen"
wait $step

# 4. Refusals: nothing starts, the message says why.
refused() {  # NAME EXPECTED SRUN-ARGS...
    local name=$1 expected=$2
    shift 2
    as_user_srun "$name" -N2 -n2 "$@" sh -c 'echo STARTED'
    local rc=$?
    if [ $rc -ne 0 ] && ! grep -q STARTED "$dir/$name.out" && grep -q -- "$expected" "$dir/$name.err"; then
        pass "$name: refused: $(grep -m1 -- "$expected" "$dir/$name.err")"
    else
        fail "$name: status $rc, output $(cat "$dir/$name.out"), errors $(cat "$dir/$name.err")"
    fi
}
refused image_not_allowed "is not allowed on this cluster" --trellis-image="$dir/other-bundle"
refused mount_not_allowed "is not under an allowed prefix" "${image[@]}" --trellis-mounts=/etc:/host-etc
refused missing_image "does not exist" --trellis-image="$dir/no-such-bundle"
refused bad_mount_syntax "accepted: SRC:DST" "${image[@]}" --trellis-mounts=relative:/x
refused missing_destination "the image has no /nowhere" "${image[@]}" --trellis-mounts="$dir/shared:/nowhere"
TRELLIS_IMAGE="$dir/other-bundle" refused image_from_environment "is not allowed on this cluster"

# The user's mount over the container's own files (the process it was entered through,
# /dev) is refused before anything runs.
cat >"$dir/shared/init" <<'SH'
#!/bin/sh
cat /proc/self/cgroup > /shared/where
SH
chmod 755 "$dir/shared/init"
refused h1_pause "not accepted" "${image[@]}" --trellis-mounts="$dir/shared:/shared,$dir/shared/init:/dev/.trellis-pause"
refused h1_dev "not accepted" "${image[@]}" --trellis-mounts="$dir/shared:/dev"
refused h1_proc "not accepted" "${image[@]}" --trellis-mounts="$dir/shared:/proc/self"
[ ! -e "$dir/shared/where" ] && pass "the user's program never ran as the container's init" ||
    fail "the user's program ran as the container's init: $(cat "$dir/shared/where")"

# A link swapped under a mount source while the step starts never gives a mount of a
# folder the user cannot reach (the container is made with the user's own rights).
mkdir -p "$dir/secret" "$dir/shared/d" && echo "root's secret" >"$dir/secret/file" && chmod 0700 "$dir/secret"
echo "the user's own" >"$dir/shared/d/file" && chown -R "$job_user" "$dir/shared/d"
chmod 0644 "$dir/secret/file"
as_user sh -c "while [ ! -e $dir/shared/stop ]; do mv -T $dir/shared/d $dir/shared/d.real && ln -s $dir/secret $dir/shared/d; sleep 0.02; rm -f $dir/shared/d && mv -T $dir/shared/d.real $dir/shared/d; sleep 0.02; done" &
swapper=$!
leaks=0 ran=0
for i in $(seq 1 20); do
    as_user srun -N1 -n1 -w n1 "${image[@]}" --trellis-mounts="$dir/shared/d:/shared" cat /shared/file \
        >"$dir/h2.out" 2>/dev/null && ran=$((ran + 1))
    grep -q "root's secret" "$dir/h2.out" && leaks=$((leaks + 1))
done
touch "$dir/shared/stop"
wait $swapper
[ $leaks -eq 0 ] && pass "20 steps under a link-swapping loop ($ran of them started): the secret never read" ||
    fail "root's folder was reached $leaks times"

# Nothing was written into the image by any step so far (user mounts, PMIx's folders).
written=$(find "$dir/bundle/rootfs" -newer "$dir/t0")
[ -z "$written" ] && pass "the image is unchanged after every step" || fail "written into the image: $written"
# ... and an image store mounted read-only serves PMIx steps and mounts as well.
mount --bind "$dir/bundle" "$dir/bundle" && mount -o remount,bind,ro "$dir/bundle"
as_user_srun readonly -N2 -n2 --mpi=pmix "${image[@]}" --trellis-mounts="$dir/shared:/shared:ro" /usr/local/bin/pmix_exchange
umount "$dir/bundle"
[ "$(grep -c 'sees: rank 0 on n1; rank 1 on n2' "$dir/readonly.out")" -eq 2 ] &&
    pass "a read-only image: PMIx across both nodes and a mount work" ||
    fail "read-only image: $(tail -n 5 "$dir/readonly.out" "$dir/readonly.err")"

# An image with a folder writable by everyone, or a device file, is refused naming it.
chmod 1777 "$dir/bundle/rootfs/tmp"
refused m4_writable "rootfs/tmp is writable by everyone" "${image[@]}"
chmod 0755 "$dir/bundle/rootfs/tmp"
mknod "$dir/bundle/rootfs/work/zero" c 1 5
refused m4_device "rootfs/work/zero is a device file" "${image[@]}"
rm -f "$dir/bundle/rootfs/work/zero"
cp "$dir/bundle/rootfs/bin/busybox" "$dir/bundle/rootfs/work/su" && chmod 4755 "$dir/bundle/rootfs/work/su"
refused m4_setuid "rootfs/work/su is setuid" "${image[@]}"
rm -f "$dir/bundle/rootfs/work/su"

# A .sif step: the tasks join the container of the Apptainer the agent started, which runs
# until the step ends and not after.
rm -f "$dir/double/pids"
as_user_srun sif -N1 -n2 -w n1 --trellis-image="$dir/image.sif" sh -c 'cat /mnt/trellis-sif-marker; id -u'
[ "$(grep -c "inside the sif test double" "$dir/sif.out")" -eq 2 ] && [ "$(grep -cx "$uid" "$dir/sif.out")" -eq 2 ] &&
    pass "a .sif step: both tasks in the (test double's) container, as $job_user" ||
    fail "sif step: $(cat "$dir/sif.out" "$dir/sif.err")"
sleep 1
left=$(apptainer_double_left "$dir/double") || fail "the Apptainer test double recorded no process"
[ -z "$left" ] && pass "after the .sif step: Apptainer, its helper and its container are gone" ||
    { as_user kill -9 $left; fail "after the .sif step, still running: pids $left"; }

# One user's container start stalls (their Apptainer hangs until the test lets it go, 20 s at
# most); another user's container step on the same node at the same moment does not wait for it.
id trellistest2 >/dev/null 2>&1 || useradd -M -s /bin/sh trellistest2
touch "$dir/double/stall-$job_user"
as_user srun -N1 -n1 -w n1 --trellis-image="$dir/image.sif" cat /mnt/trellis-sif-marker >"$dir/m5-first.out" 2>&1 &
first=$!
sleep 1
start=$(date +%s)
(cd /tmp && timeout 60 runuser -u trellistest2 -- env SLURM_CONF="$SLURM_CONF" srun -N1 -n1 -w n1 -O "${image[@]}" cat /trellis-image-marker) >"$dir/m5-second.out" 2>&1
second_took=$(($(date +%s) - start))
rm -f "$dir/double/stall-$job_user"
wait $first
grep -q "inside the sif test double" "$dir/m5-first.out" && grep -q "inside a trellis test image" "$dir/m5-second.out" &&
    [ $second_took -le 10 ] && pass "a second user's step ran in ${second_took} s while the first user's start stalled" ||
    fail "a second user's step behind the first user's stalled start: $(cat "$dir/m5-first.out" "$dir/m5-second.out") (second took ${second_took} s)"

# The process the container is taken from is the plugin's own unreaped child, and
# what it offers is checked: a prepare that says "ready" without having made a container
# (still in the host's namespaces, as a hijacked one could) is refused, and the task does
# not run.
printf '#!/bin/sh\necho ready\ncat >/dev/null\n' >"$dir/hostile-agent" && chmod 755 "$dir/hostile-agent"
cp "$dir/trellis.toml" "$dir/trellis.toml.good"
sed -i "s|^agent = .*|agent = \"$dir/hostile-agent\"|" "$dir/trellis.toml"
refused m1_hostile "does not belong to uid $uid" "${image[@]}"
cp "$dir/trellis.toml.good" "$dir/trellis.toml"

# A source whose resolved path holds ',' is refused (a runtime's list would split it).
mkdir -p "$dir/shared/x,y" && ln -sfn "$dir/shared/x,y" "$dir/shared/l"
refused l1_comma "would split" "${image[@]}" --trellis-mounts="$dir/shared/l:/shared"
# A newline in an image path is refused, and forges no line in slurmd's log.
refused l3_newline "control character" --trellis-image="$(printf '/x\nerror: slurmstepd: forged')"
# The same value straight to the node, past srun's check: Slurm hands slurmstepd the options
# as _SLURM_SPANK_OPTION_* variables, which a user can set themselves.
as_user env "_SLURM_SPANK_OPTION_trellis_trellis_image=$(printf '/x\nerror: slurmstepd: forged')" \
    srun -N1 -n1 -w n1 sh -c 'echo STARTED' >"$dir/l3_node.out" 2>"$dir/l3_node.err"
rc=$?
[ $rc -ne 0 ] && ! grep -q STARTED "$dir/l3_node.out" && grep -q "control character" "$dir/l3_node.err" &&
    pass "the value reaching slurmstepd is refused there, and the task does not run" ||
    fail "a newline in an image path, on the node: status $rc, $(cat "$dir/l3_node.out" "$dir/l3_node.err")"
[ "$(cat "$dir"/log/slurmd-*.log | grep -c 'forged')" -eq 0 ] &&
    pass "no forged line in slurmd's log" || fail "a forged line reached slurmd's log"
# ':ro' holds for the mounts beneath the source too.
mkdir -p "$dir/shared/sub" && mount -t tmpfs -o mode=1777 none "$dir/shared/sub"
as_user_srun l9 -N1 -n1 -w n1 "${image[@]}" --trellis-mounts="$dir/shared:/shared:ro" sh -c \
    'touch /shared/sub/x 2>/dev/null && echo WROTE; touch /shared/y 2>/dev/null && echo WROTE-TOP; echo done'
umount "$dir/shared/sub"
grep -q "^done$" "$dir/l9.out" && ! grep -q WROTE "$dir/l9.out" && pass "':ro' holds for a submount of the source" ||
    fail "':ro' for a submount of the source: $(cat "$dir/l9.out" "$dir/l9.err")"

# trellis `optional` in plugstack.conf: an image that cannot be used still stops the task;
# it never runs on the host instead. Then the same with a configuration that cannot be read.
sed -i 's/^required /optional /' "$dir/plugstack.conf"
as_user_srun optional_refused -N1 -n1 -w n1 --trellis-image="$dir/other-bundle" sh -c 'echo STARTED'
rc=$?
[ $rc -ne 0 ] && ! grep -q STARTED "$dir/optional_refused.out" &&
    pass "optional plugin, refused image: srun fails ($rc) and the program did not run" ||
    fail "optional plugin, refused image: status $rc, $(cat "$dir/optional_refused.out" "$dir/optional_refused.err")"
cp "$dir/trellis.toml" "$dir/trellis.toml.good"
echo "[container" >>"$dir/trellis.toml"
as_user_srun optional_broken -N1 -n1 -w n1 "${image[@]}" sh -c 'echo STARTED'
rc=$?
cp "$dir/trellis.toml.good" "$dir/trellis.toml"
[ $rc -ne 0 ] && ! grep -q STARTED "$dir/optional_broken.out" &&
    pass "optional plugin, unreadable configuration, an image asked for: the program did not run ($rc)" ||
    fail "optional plugin, broken configuration: status $rc, $(cat "$dir/optional_broken.out" "$dir/optional_broken.err")"
sed -i 's/^optional /required /' "$dir/plugstack.conf"
nothing_left "after the refusals"

# The administrator's TaskProlog, which Slurm runs after the task has joined the
# container, is found there at its host path. This one lies where the image has no folder
# (under /etc), so the image's /etc is covered by a tmpfs of the container's with its
# entries bound back in: the image stays untouched and its /etc still shows.
touch "$dir/t1"
sleep 1
prolog_dir=$(mktemp -d /etc/trellis-test-prolog.XXXXXX)
chmod 755 "$prolog_dir"
cleanup="rm -rf $prolog_dir"
printf '#!/bin/sh\necho "export TRELLIS_TASK_PROLOG=ran"\n' >"$prolog_dir/taskprolog.sh"
chmod 755 "$prolog_dir/taskprolog.sh"
cp "$dir/slurm.conf" "$dir/slurm.conf.before-prolog"
echo "TaskProlog=$prolog_dir/taskprolog.sh" >>"$dir/slurm.conf"
scontrol reconfigure && sleep 2
as_user_srun prolog -N1 -n1 -w n1 "${image[@]}" sh -c 'echo "prolog=$TRELLIS_TASK_PROLOG"; head -n 1 /etc/passwd'
cp "$dir/slurm.conf.before-prolog" "$dir/slurm.conf"
scontrol reconfigure && sleep 2
# Slurm 24.11's slurmstepd runs the TaskProlog through itself, re-executed as run_command's
# launcher (src/common/run_command.c, run_command_launcher), after the task has joined the
# container, where neither that binary nor its libraries are: the prolog fails with 127.
# Making slurmstepd run inside users' images is not done (a known limitation on 24.11, in
# spank_trellis(8)); 22.05 runs the script itself and must pass.
if grep -qx "prolog=ran" "$dir/prolog.out" && grep -qx "root:x:0:0:root:/root:/bin/sh" "$dir/prolog.out" &&
    [ -z "$(find "$dir/bundle/rootfs" -newer "$dir/t1")" ]; then
    pass "the TaskProlog ran in the container; the image's /etc still shows and the image is unchanged"
elif at_least 24.11 && grep -q 'TaskProlog failed status=127' "$dir/prolog.err"; then
    echo "known limitation: the TaskProlog: Slurm $slurm_version runs the TaskProlog through slurmstepd, which a container step's image lacks (status 127)"
else
    fail "the TaskProlog in the container: $(cat "$dir/prolog.out" "$dir/prolog.err")"
fi

# 5. scancel and kill -9 of srun: nothing of the container but the tasks themselves, and
# nothing at all once Slurm has ended them (a killed srun leaves them running, as it would
# natively, until the job is cancelled).
for how in scancel kill; do
    as_user srun -N2 -n2 --job-name="container-$how" "${image[@]}" sleep 300 >/dev/null 2>&1 &
    srun_pid=$!
    for _ in $(seq 1 100); do [ "$(in_image | wc -l)" -ge 2 ] && break; sleep 0.1; done
    [ "$(in_image | wc -l)" -ge 2 ] || fail "$how: the tasks did not start in the image"
    if [ $how = kill ]; then
        kill -9 $srun_pid
        sleep 1
        [ -z "$(helpers)" ] && [ "$(in_image | wc -l)" -eq 2 ] &&
            pass "after kill -9 of srun: the two tasks are all the container holds" ||
            fail "after kill -9 of srun: $(in_image | tr '\n' ' ')"
    fi
    scancel --name="container-$how"
    wait $srun_pid 2>/dev/null
    nothing_left "after $how"
done

# 6. slurmstepd itself killed: the container holds no process of its own and no state on
# disk, so nothing is left but the step's tasks, which Slurm ends with the job.
as_user srun -N1 -n1 -w n1 --job-name=container-stepd "${image[@]}" sleep 60 >/dev/null 2>&1 &
srun_pid=$!
for _ in $(seq 1 100); do [ "$(in_image | wc -l)" -ge 1 ] && break; sleep 0.1; done
task=$(in_image | awk '{print $1}' | head -n 1)
job=$(squeue -h -n container-stepd -o %i)
if [ -n "$task" ] && [ -n "$job" ]; then
    pkill -9 -f "slurmstepd: \[$job.0\]"
    sleep 1
    others=$(in_image | awk -v t="$task" '$1 != t')
    [ -z "$others" ] && [ -z "$(helpers)" ] &&
        pass "after kill -9 of slurmstepd: only the task itself is in the image, no trellis process or state" ||
        fail "after kill -9 of slurmstepd: $others"
else
    fail "slurmstepd kill: the task did not start"
fi
scancel --name=container-stepd 2>/dev/null
kill -9 $srun_pid "$task" 2>/dev/null
wait $srun_pid 2>/dev/null

echo "container tests: $failures failures"
[ "$failures" -eq 0 ]
