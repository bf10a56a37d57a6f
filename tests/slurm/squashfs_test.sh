#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A squashfs image under a real Slurm (tests/slurm/cluster), as the cluster's unprivileged
# user: srun --trellis-image=IMAGE.sqsh runs the tasks of both nodes in it, with the image's
# settings (IMAGE.json beside it) applied by the plugin as launch applies them; writes to /etc
# fail unless --trellis-writable, and the .sqsh never changes; --trellis-entrypoint is refused
# by srun with its reason; no squashfuse process and no mount of the image remain after a
# normal end, scancel, or kill -9 of slurmstepd. Skips (77) without root, Slurm, munge, user
# namespaces, /dev/fuse or squashfuse.
set -u
. "$(dirname "$0")/harness.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the test cluster needs root"; exit 77; }
[ "$(cat /proc/sys/user/max_user_namespaces 2>/dev/null || echo 0)" -gt 0 ] || { echo "SKIP: no user namespaces"; exit 77; }
for tool in mksquashfs squashfuse fuse-overlayfs busybox; do
    command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (scripts/install-deps)"; exit 77; }
done
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }

make_cluster_dir trellis-slurm-squashfs
rootfs=$dir/rootfs
mkdir -p "$rootfs"/{bin,etc,work,proc,sys,dev,tmp,var/tmp} "$dir/images" "$dir/shared"
cp "$(command -v busybox)" "$rootfs/bin/busybox"
for applet in sh cat env pwd echo sleep true; do ln -s busybox "$rootfs/bin/$applet"; done
echo "from the image" >"$rootfs/etc/greeting"
unshare -r mksquashfs "$rootfs" "$dir/images/app.sqsh" -all-root -noappend -quiet >/dev/null || { echo "FAIL: mksquashfs"; exit 1; }
cat >"$dir/images/app.json" <<'JSON'
{"config": {"Env": ["PATH=/bin", "FROM_IMAGE=yes", "KEEP_ME=image", "SLURM_JOB_ID=image", "TRELLIS_LOCAL_RANK=image"],
            "WorkingDir": "/work", "Entrypoint": ["/bin/echo", "entrypoint-ran"]}}
JSON
chmod 644 "$dir/images/"*
cat >"$dir/trellis.toml" <<TOML
[binding]
policy = "none"
[container]
allowed_images = ["$dir/images/*.sqsh"]
allowed_mounts = ["$dir/shared"]
agent = "$build/trellis-agent"
TOML
start_cluster
chown "$job_user" "$dir/shared"
hash=$(sha256sum <"$dir/images/app.sqsh")
image=(--trellis-image="$dir/images/app.sqsh")
# This test's FUSE daemons (other tests may run as the same user): those reading its images.
daemons() {
    for p in $(pgrep -u "$job_user" -x squashfuse) $(pgrep -u "$job_user" -x fuse-overlayfs); do
        ls -l /proc/$p/fd 2>/dev/null | grep -q "$dir/images" && echo $p
        grep -qs "$dir/images" /proc/$p/cmdline && echo $p
    done | sort -u
}
leftovers() {  # WHAT: no squashfuse of this image's, no mount of it, waiting up to 10 s
    for _ in $(seq 1 50); do
        [ -z "$(daemons)" ] && ! grep -qs "$dir/images" /proc/[0-9]*/mountinfo &&
            { pass "$1: no squashfuse process and no mount left"; return; }
        sleep 0.2
    done
    fail "$1: left: $(daemons) $(grep -ls "$dir/images" /proc/[0-9]*/mountinfo | head -3)"
}

# Both nodes, the image's settings: its file read, WorkingDir, Env over the job's but not over
# SLURM_* or TRELLIS_*, --trellis-env keeping the job's value.
as_user_srun read -N2 -n2 "${image[@]}" sh -c 'echo "$SLURMD_NODENAME $(cat /etc/greeting) pwd=$(pwd) from=$FROM_IMAGE keep=$KEEP_ME job=$SLURM_JOB_ID local=$TRELLIS_LOCAL_RANK"'
rc=$?
[ $rc -eq 0 ] && [ "$(grep -c "from the image pwd=/work from=yes keep=image job=[0-9]* local=0$" "$dir/read.out")" -eq 2 ] &&
    grep -q "^n1 " "$dir/read.out" && grep -q "^n2 " "$dir/read.out" &&
    pass "srun: both nodes run in the squashfs image, in its WorkingDir, with its Env under Slurm's and trellis's" ||
    fail "srun in the squashfs image: status $rc: $(cat "$dir/read.out" "$dir/read.err")"
leftovers "after a normal end"
KEEP_ME=job as_user_srun keep -N1 -n1 -w n1 "${image[@]}" --trellis-env=KEEP_ME sh -c 'echo "keep=$KEEP_ME"'
grep -qx "keep=job" "$dir/keep.out" && pass "--trellis-env: the job's value wins" || fail "--trellis-env: $(cat "$dir/keep.out" "$dir/keep.err")"

# --chdir: the job's folder, mounted at its own path.
as_user_srun mounted -N1 -n1 -w n1 --chdir="$dir/shared" "${image[@]}" --trellis-mounts="$dir/shared" pwd
grep -qx "$dir/shared" "$dir/mounted.out" && pass "working directory: the job's, under a mount destination" ||
    fail "working directory under a mount: $(cat "$dir/mounted.out" "$dir/mounted.err")"

# Read-only image, unless --trellis-writable; the .sqsh unchanged either way.
as_user_srun readonly -N1 -n1 -w n1 "${image[@]}" sh -c 'echo x >/etc/written && echo WROTE; echo done'
grep -qx done "$dir/readonly.out" && ! grep -q WROTE "$dir/readonly.out" && grep -q "Read-only file system" "$dir/readonly.err" &&
    pass "writes to /etc fail" || fail "read-only: $(cat "$dir/readonly.out" "$dir/readonly.err")"
as_user_srun writable -N1 -n1 -w n1 "${image[@]}" --trellis-writable sh -c 'echo x >/etc/written && cat /etc/written'
grep -qx x "$dir/writable.out" && pass "--trellis-writable: /etc takes writes" || fail "--trellis-writable: $(cat "$dir/writable.out" "$dir/writable.err")"
[ "$(sha256sum <"$dir/images/app.sqsh")" = "$hash" ] && pass "the .sqsh is unchanged" || fail "the .sqsh changed"
leftovers "after a --trellis-writable step"

# The Entrypoint: srun cannot put it before the command, and says so before launching.
as_user_srun entry -N1 -n1 -w n1 "${image[@]}" --trellis-entrypoint sh -c 'echo STARTED'
rc=$?
[ $rc -ne 0 ] && ! grep -q STARTED "$dir/entry.out" && grep -q "trellis-entrypoint is not offered by srun" "$dir/entry.err" &&
    pass "--trellis-entrypoint: refused by srun with the reason" || fail "--trellis-entrypoint: status $rc $(cat "$dir/entry.err")"
as_user_srun noentry -N1 -n1 -w n1 "${image[@]}" echo command-ran
grep -qx command-ran "$dir/noentry.out" && ! grep -q entrypoint-ran "$dir/noentry.out" &&
    pass "the Entrypoint is ignored by default" || fail "Entrypoint off: $(cat "$dir/noentry.out" "$dir/noentry.err")"

# Signals Slurm sends to a step (srun --signal, scancel -s): the tasks may catch them, and
# the image stays served meanwhile (prepare, a child of slurmstepd, gets them too).
as_user_srun signalled -N1 -n1 -w n1 --job-name=sqsh-signal "${image[@]}" \
    sh -c 'trap "" USR1 TERM; echo started; sleep 3; cat /etc/greeting' &
srun_pid=$!
for _ in $(seq 1 100); do [ -n "$(daemons)" ] && grep -qs started "$dir/user/signalled.task-0" && break; sleep 0.1; done
scancel -s USR1 --name=sqsh-signal && sleep 0.3 && scancel -s TERM --name=sqsh-signal
wait $srun_pid
grep -qx "from the image" "$dir/signalled.out" &&
    pass "SIGUSR1 and SIGTERM to the step: the tasks caught them and still read the image" ||
    fail "signalled step: $(cat "$dir/signalled.out" "$dir/signalled.err")"

# scancel, then kill -9 of slurmstepd.
as_user srun -N2 -n2 --job-name=sqsh-scancel "${image[@]}" sleep 300 >/dev/null 2>&1 &
srun_pid=$!
for _ in $(seq 1 100); do [ "$(daemons | wc -l)" -ge 2 ] && break; sleep 0.1; done
[ "$(daemons | wc -l)" -ge 2 ] && pass "a squashfuse per node while the step runs" || fail "no squashfuse per node"
# prepare and its squashfuse are in the step's own cgroups, as its tasks are (Slurm tracks,
# signals and accounts the step by them), and prepare cannot be traced by the user.
job=$(squeue -h -n sqsh-scancel -o %i)
stepd=$([ -n "$job" ] && pgrep -f "slurmstepd: \[$job.0\]" | head -n 1)
task=$([ -n "$stepd" ] && pgrep -P "$stepd" -x sleep | head -n 1)
daemon=$(for d in $(daemons); do [ "$(ps -o ppid= -p "$(ps -o ppid= -p $d | tr -d ' ')" | tr -d ' ')" = "$stepd" ] && echo $d; done | head -n 1)
helper=$([ -n "$daemon" ] && ps -o ppid= -p $daemon | tr -d ' ')
if [ -n "$task" ] && [ -n "$helper" ]; then
    # cgroup v1: the freezer (proctrack/cgroup's) and every controller Slurm gives the step;
    # v2: one path, under the step's.
    step_cgroups() { grep -E "^0::|freezer|cpuset" /proc/$1/cgroup | sed -e 's|/task_[0-9]*$||' -e 's|/user/task_[0-9]*$||' -e 's|/slurm$||'; }
    [ "$(step_cgroups $helper)" = "$(step_cgroups $task)" ] && [ "$(step_cgroups $daemon)" = "$(step_cgroups $task)" ] &&
        pass "prepare and squashfuse are in the step's cgroups: $(step_cgroups $helper | tr '\n' ' ')" ||
        fail "cgroups: prepare $(step_cgroups $helper | tr '\n' ' '), squashfuse $(step_cgroups $daemon | tr '\n' ' '), the task $(step_cgroups $task | tr '\n' ' ')"
    grep -q "^TracerPid" /proc/$helper/status && ! as_user cat /proc/$helper/environ >/dev/null 2>&1 &&
        [ "$(stat -c %U /proc/$helper/mem)" = root ] &&
        pass "prepare is undumpable: its /proc files are root's, and the job user cannot read them" ||
        fail "prepare is dumpable: $(stat -c %U /proc/$helper/mem)"
else
    fail "the step's task or prepare was not found (slurmstepd $stepd, task $task, squashfuse $(daemons | tr '\n' ' '))"
fi
scancel --name=sqsh-scancel
wait $srun_pid 2>/dev/null
leftovers "after scancel"
as_user srun -N1 -n1 -w n1 --job-name=sqsh-stepd "${image[@]}" sleep 60 >/dev/null 2>&1 &
srun_pid=$!
for _ in $(seq 1 100); do [ -n "$(daemons)" ] && break; sleep 0.1; done
job=$(squeue -h -n sqsh-stepd -o %i)
stepd=$([ -n "$job" ] && pgrep -f "slurmstepd: \[$job.0\]")
task=$([ -n "$stepd" ] && pgrep -P "$stepd" -x sleep)
if [ -n "$task" ] && [ -n "$(daemons)" ]; then
    kill -9 $stepd
    for _ in $(seq 1 50); do [ -n "$(daemons)" ] || break; sleep 0.2; done
    [ -n "$(daemons)" ] && fail "squashfuse outlived slurmstepd's kill -9" ||
        pass "squashfuse stopped after kill -9 of slurmstepd"
else
    fail "slurmstepd kill: the step did not start"
fi
scancel --name=sqsh-stepd 2>/dev/null
wait $srun_pid 2>/dev/null
# The task, orphaned by slurmstepd, holds the namespace (and its dead mounts) until it ends.
[ -n "$task" ] && kill -9 $task 2>/dev/null
leftovers "after kill -9 of slurmstepd"

echo "squashfs tests: $failures failures"
[ "$failures" -eq 0 ]
