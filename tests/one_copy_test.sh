#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Each concept of the agent written once: fails when a second copy appears, naming its lines.
#   helpers are forked in agent/command.cpp only (ranks, the user's own programs, in
#     agent/launch/rank_launcher.cpp), and a wait status is decoded there
#   skopeo is run from agent/image/skopeo.cpp only (the one registry client)
#   mounts are made in agent/container/rootfs.cpp only (the root-making unit)
#   one type named Fd, in agent/files.hpp; a mode printed by agent/files.cpp only
#   Slurm's files (SLURM_CONF, mpi.conf) read in slurm/ only
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src" || exit 99
failures=0

# `pattern` in the C++ sources of `folders` outside comments, in files other than `allowed`.
copies() {  # PATTERN "ALLOWED FILES" FOLDERS...
    local pattern=$1 allowed=$2
    shift 2
    grep -rnE --include='*.cpp' --include='*.hpp' "$pattern" "$@" | grep -vE '^[^:]+:[0-9]+:\s*//' |
        while IFS=: read -r file line text; do
            case " $allowed " in *" $file "*) ;; *) echo "$file:$line:$text" ;; esac
        done
}

check() {  # WHAT PATTERN "ALLOWED FILES" FOLDERS...
    local what=$1 found
    shift
    found=$(copies "$@")
    if [ -n "$found" ]; then
        echo "FAIL: $what; also here:"
        echo "$found" | head -n 10 | sed 's/^/    /'
        failures=$((failures + 1))
    else
        echo "ok: $what"
    fi
}

code="agent spank slurm common config"
check "helpers are forked and exec'd by agent/command.cpp's start() only" \
    '\b(v?fork|posix_spawnp?|clone3?|execv[pe]*|execl[pe]*|fexecve|popen|system)\s*\(' \
    "agent/command.cpp agent/launch/rank_launcher.cpp" $code
check "a wait status is decoded by agent/command.cpp's exit_status() only" 'W(EXITSTATUS|TERMSIG)\b' \
    "agent/command.cpp" $code
check "skopeo is run from agent/image/skopeo.cpp only" '\.skopeo\b' "agent/image/skopeo.cpp agent/image/skopeo.hpp" \
    agent spank
check "mounts are made in agent/container/rootfs.cpp only" '::mount\(|SYS_mount_setattr|::umount2?\(|SYS_pivot_root' \
    "agent/container/rootfs.cpp" $code
check "a mode is printed by agent/files.cpp's mode_text() only" '%0?4o' "agent/files.cpp" $code
check "SLURM_CONF is read by slurm/slurm_config.cpp only" 'getenv\("SLURM_CONF"\)' "slurm/slurm_config.cpp" \
    agent spank common config
check "mpi.conf is read in slurm/ only" '"mpi\.conf"' "slurm/slurm_config.cpp" agent spank common config

fd_types=$(grep -rnE --include='*.cpp' --include='*.hpp' '\b(class|struct)\s+Fd\b' agent spank)
if [ "$(echo "$fd_types" | grep -c .)" -eq 1 ] && echo "$fd_types" | grep -q '^agent/files.hpp:'; then
    echo "ok: one type named Fd (agent/files.hpp)"
else
    echo "FAIL: the types named Fd are:"
    echo "$fd_types" | sed 's/^/    /'
    failures=$((failures + 1))
fi

[ $failures -eq 0 ] || exit 1
