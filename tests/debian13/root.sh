# Sourced by the tests that run in a Debian 13 (trixie) root (tests/gpu/bundle_test.sh,
# tests/debian13/slurm2411_test.sh) and by tests/debian13/root. A root is made once, from the
# network, and kept under /var/cache/trellis for later runs:
#   debian13_root ROOT LOG [PACKAGE...]
#       makes ROOT unless a whole one is there: debootstrap --variant=minbase trixie into a new
#       folder beside it, then apt-get install --no-install-recommends PACKAGE... in it, then a
#       rename into place, so that a half-made root (a test killed, the network gone) is never
#       taken for a whole one; the next call removes what a killed one left. One caller at a
#       time makes it (flock on ROOT.lock); the others wait and share it. The tools' output
#       goes to LOG; on failure its end is printed and the status is 1.
#   debian13_mount ROOT
#       mounts what programs in the root need: /proc, /sys (with this machine's cgroup
#       hierarchies under /sys/fs/cgroup), a /dev of its own (the usual nodes, /dev/fuse, a
#       devpts instance and /dev/shm: device nodes made there, such as the test cluster's
#       /dev/nvidiaN, stay there), tmpfs on /tmp and /run, and this machine's /etc/hosts. Call it only in a mount
#       namespace of its own (unshare --mount --propagation private), so that all of it goes
#       away with the caller and is never seen by the rest of the machine.
debian13_mirror=${TRELLIS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
debian13_complete=.trellis-root-complete

debian13_root() {
    local root=$1 log=$2
    shift 2
    mkdir -p "$(dirname "$root")" || { echo "cannot make $(dirname "$root")"; return 1; }
    (
        flock 9 || { echo "cannot lock $root.lock"; exit 1; }
        debian13_has "$root" "$@" && exit 0
        debian13_make "$root" "$log" "$@"
    ) 9>"$root.lock"
}

# debian13_has ROOT [PACKAGE...]: ROOT is whole and was made with every PACKAGE (a root made
# before a package joined the list is made again).
debian13_has() {
    local root=$1 package packages
    [ -f "$root/$debian13_complete" ] || return 1
    packages=" $(sed -n 's/.*; packages: //p' "$root/$debian13_complete") "
    shift
    for package in "$@"; do
        [[ $packages == *" $package "* ]] || return 1
    done
}

debian13_make() {
    local root=$1 log=$2 new began=$SECONDS
    shift 2
    rm -rf --one-file-system "$root" "$root".new.*
    new=$(mktemp -d "$root.new.XXXXXX") || { echo "cannot make a folder beside $root"; return 1; }
    chmod 755 "$new"
    if ! debootstrap --variant=minbase trixie "$new" "$debian13_mirror" >"$log" 2>&1; then
        tail -n 20 "$log"
        [ -f "$new/debootstrap/debootstrap.log" ] && tail -n 20 "$new/debootstrap/debootstrap.log"
        rm -rf --one-file-system "$new"
        echo "debootstrap of Debian 13 (trixie) into $new failed (its output ends above)"
        return 1
    fi
    echo "ok: debootstrap --variant=minbase trixie in $((SECONDS - began)) s"
    if [ $# -gt 0 ]; then
        # No daemon a package installs (munge, slurmd) is started in the root.
        printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d" && chmod 755 "$new/usr/sbin/policy-rc.d"
        if ! unshare --mount --propagation private bash -c '
                new=$2
                . "$1" && debian13_mount "$new" && shift 2 &&
                chroot "$new" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
                    DEBIAN_FRONTEND=noninteractive sh -c "apt-get update -q && apt-get install -y -q --no-install-recommends $*"
            ' debian13 "${BASH_SOURCE[0]}" "$new" "$@" >>"$log" 2>&1; then
            tail -n 30 "$log"
            rm -rf --one-file-system "$new"
            echo "apt-get install in the Debian 13 root $new failed (its output ends above)"
            return 1
        fi
        rm -f "$new/usr/sbin/policy-rc.d"
        chroot "$new" apt-get clean
    fi
    echo "debootstrap --variant=minbase trixie, $(date -u '+%Y-%m-%d %H:%M UTC'); packages: ${*:-none}" >"$new/$debian13_complete"
    mv "$new" "$root" || { echo "cannot rename $new to $root"; return 1; }
    echo "ok: made the Debian 13 root $root in $((SECONDS - began)) s"
}

debian13_mount() {
    local root=$1 node
    # The root a mount point of its own: in it, `unshare --propagation private` (each test
    # cluster's slurmd) changes the propagation of "/", which must be a mount.
    mount --bind "$root" "$root" &&
        mount -t proc proc "$root/proc" &&
        mount --rbind /sys "$root/sys" &&
        mount -t tmpfs -o mode=755,size=64m tmpfs "$root/dev" &&
        mount -t tmpfs -o mode=1777 tmpfs "$root/tmp" &&
        mount -t tmpfs -o mode=755 tmpfs "$root/run" || { echo "cannot mount $root, /proc, /sys, /dev, /tmp or /run in it"; return 1; }
    for node in null zero full random urandom tty fuse; do
        [ -e "/dev/$node" ] || continue
        touch "$root/dev/$node" && mount --bind "/dev/$node" "$root/dev/$node" || { echo "cannot bind /dev/$node into $root"; return 1; }
    done
    # This machine's name as this machine resolves it (munged and Slurm look it up).
    # A minbase root has no /etc/hosts to bind over: it gets an empty one first.
    if [ -f /etc/hosts ]; then
        [ -e "$root/etc/hosts" ] || : >"$root/etc/hosts"
        mount --bind /etc/hosts "$root/etc/hosts" || { echo "cannot bind /etc/hosts into $root"; return 1; }
    fi
    mkdir -p "$root/dev/pts" "$root/dev/shm" "$root/run/lock"
    mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$root/dev/pts" && ln -s pts/ptmx "$root/dev/ptmx" &&
        mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm" || { echo "cannot mount /dev/pts or /dev/shm in $root"; return 1; }
    ln -s /proc/self/fd "$root/dev/fd" && ln -s /proc/self/fd/0 "$root/dev/stdin" &&
        ln -s /proc/self/fd/1 "$root/dev/stdout" && ln -s /proc/self/fd/2 "$root/dev/stderr"
}

# The Slurm 24.11 root's packages: trellis's build dependencies, Slurm, munge, the peers the
# Slurm suites run (PyTorch 2.6, Open MPI 5 with PMIx 5), the container and packaging tools, and
# matplotlib for trellis-report (train_test draws its campaign's figures).
debian13_slurm_root=/var/cache/trellis/trixie-slurm
debian13_slurm_packages="autoconf automake libtool pkg-config g++ make build-essential python3 libhwloc-dev hwloc
    libpmix-dev libibverbs-dev rdma-core libtomlplusplus-dev libdnnl-dev libturbojpeg0-dev libjpeg62-turbo-dev
    zlib1g-dev nlohmann-json3-dev libslurm-dev catch2 libyaml-dev slurm-wlm slurmd slurmctld slurm-client munge
    python3-torch openmpi-bin libopenmpi-dev time util-linux busybox-static iproute2 procps jq skopeo umoci
    squashfs-tools squashfuse fuse-overlayfs debhelper dpkg-dev ca-certificates python3-matplotlib"

# debian13_enter ROOT COMMAND...: COMMAND with ROOT as its "/", after debian13_mount. Not by
# chroot: a chrooted process may not make a user namespace (the kernel refuses CLONE_NEWUSER
# to it), and the container steps' tasks make theirs. ROOT becomes the root of a mount
# namespace of its own (pivot_root), and this machine's tree is unmounted there.
debian13_enter() {
    local root=$1
    shift
    unshare --mount --propagation private sh -c 'cd "$1" && pivot_root . mnt && umount -l /mnt && shift && exec "$@"' \
        debian13 "$root" "$@"
}
