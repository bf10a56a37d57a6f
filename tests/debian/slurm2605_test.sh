#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Slurm suites on Slurm 26.05, in a Debian unstable (sid) root (tests/debian/slurm_release.sh).
exec "$(dirname "$0")/slurm_release.sh" sid
