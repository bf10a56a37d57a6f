# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests that run the Apptainer test double (tests/container/apptainer-test-double).
#   apptainer_double_left STATE   prints the pids the double recorded in STATE/pids (its own,
#                                 which becomes the container's process, and its helper's)
#                                 that still run; fails when it recorded none
apptainer_double_left() {
    local pid state
    [ -s "$1/pids" ] || return 1
    for pid in $(cat "$1/pids"); do
        # the state follows the command's name, which may hold spaces, in parentheses
        state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
        [ -n "$state" ] && [ "$state" != Z ] && echo "$pid"
    done
    return 0
}
