// SPDX-License-Identifier: Apache-2.0
// What slurmstepd knows of the node and the job, shared by the entry points.
#include <unistd.h>

#include <cstdlib>

#include "spank/contexts.hpp"

namespace trellis::spank {

std::string job_env(spank_t sp, const char* name) {
    char buf[4096];
    return spank_getenv(sp, name, buf, sizeof buf) == ESPANK_SUCCESS ? buf : "";
}

}  // namespace trellis::spank
