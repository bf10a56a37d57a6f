#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The Slurm suites on Slurm 24.11, in a Debian 13 (trixie) root (tests/debian/slurm_release.sh).
exec "$(dirname "$0")/slurm_release.sh" trixie
