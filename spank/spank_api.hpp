// SPDX-License-Identifier: Apache-2.0
// Slurm's spank.h is a C header; this is the one place it is included.
#pragma once

extern "C" {
#include <slurm/slurm_version.h>
#include <slurm/spank.h>
}
