# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests under the real Slurm cluster (tests/slurm/cluster): a cluster folder
# removed at exit, the cluster started with the built plugin (a test that cannot run here
# exits with the cluster's skip status 77), and the ok/FAIL reporting.
#   make_cluster_dir NAME        $dir, world-readable (images and users' jobs read it)
#   start_cluster [NODE=XML ...] starts it, exports SLURM_CONF, enters $dir
#   as_user CMD...               runs CMD as the cluster's unprivileged job user ($job_user),
#                                in $dir/user (theirs), with a time limit
#   as_user_srun NAME ARGS...    srun ARGS as that user, each task's output in a file of its
#                                own (long lines from tasks writing at once would interleave
#                                on one stream), all of them then in $dir/NAME.out, srun's
#                                and the tasks' messages in $dir/NAME.err; returns srun's status
# Set `cleanup` to a command to run at exit before the cluster folder goes.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${TRELLIS_BUILD:?}
# TRELLIS_PLUGIN: an installed plugin (a Debian package's) rather than the build tree's.
plugin=${TRELLIS_PLUGIN:-$build/spank/.libs/spank_trellis.so}
# An installed plugin has no trellis-topo beside it: the build tree's is the cluster's.
[ -z "${TRELLIS_PLUGIN:-}" ] || export TRELLIS_CLUSTER_TOPO=${TRELLIS_CLUSTER_TOPO:-$build/trellis-topo}
failures=0
# at_least VERSION: whether the cluster's Slurm (slurm_version, set by start_cluster from srun
# --version, which needs its SLURM_CONF) is VERSION or later, for rows that differ by version.
at_least() { printf '%s\n%s\n' "$1" "$slurm_version" | sort -V -C; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

make_cluster_dir() {
    dir=$(mktemp -d "/tmp/$1.XXXXXX")
    chmod 755 "$dir"
    # On failure the daemons' logs go to the test's log before the folder goes.
    trap '[ $failures -eq 0 ] || tail -n 15 "$dir"/log/*.log; "$here/cluster" stop "$dir"; eval "${cleanup:-:}"; rm -rf "$dir"' EXIT
}

start_cluster() {
    "$here/cluster" start "$dir" "$plugin" "$@"
    local status=$?
    [ $status -eq 0 ] || exit $status
    export SLURM_CONF=$dir/slurm.conf
    slurm_version=$(srun --version | awk '{print $2}')
    job_user=$("$here/cluster" user)
    cd "$dir" || exit 1
}

as_user() {  # the time limit is $user_timeout seconds (default 120)
    (cd "$dir/user" && timeout "${user_timeout:-120}" runuser -u "$job_user" -- env SLURM_CONF="$SLURM_CONF" "$@")
}

# as_user_srun NAME SRUN-ARGS...: srun as the job user, each task's output and errors gathered
# into $dir/NAME.out and .err; inside the allocation of the command in the array `inside`
# (salloc and its options) when it is set.
inside=()
as_user_srun() {
    local name=$1 status
    shift
    rm -f "$dir/user/$name".task-* "$dir/user/$name".errors-*
    as_user "${inside[@]}" srun -o "$dir/user/$name.task-%t" -e "$dir/user/$name.errors-%t" "$@" 2>"$dir/$name.err"
    status=$?
    cat "$dir/user/$name".task-* >"$dir/$name.out" 2>/dev/null
    cat "$dir/user/$name".errors-* >>"$dir/$name.err" 2>/dev/null
    return $status
}
