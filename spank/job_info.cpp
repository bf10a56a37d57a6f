// What slurmstepd knows of the node and the job, shared by the entry points.
#include <unistd.h>

#include <cstdlib>

#include "spank/contexts.hpp"

namespace trellis::spank {

std::string job_env(spank_t sp, const char* name) {
    char buf[4096];
    return spank_getenv(sp, name, buf, sizeof buf) == ESPANK_SUCCESS ? buf : "";
}

// slurmd names itself in its environment, which slurmstepd inherits.
std::string node_name() {
    if (const char* name = std::getenv("SLURMD_NODENAME"); name && *name) return name;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return host;
}

}  // namespace trellis::spank
