// SPDX-License-Identifier: Apache-2.0
#include "common/host.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace trellis {

std::string host_name() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || !*host) return "localhost";
    return host;
}

std::string node_name() {
    const char* node = env_value("SLURMD_NODENAME");
    return node ? node : host_name();
}

int step_port(unsigned job_id, unsigned step_id, int first, int last) {
    // A multiplicative hash spreads neighbouring job ids apart.
    unsigned long long mixed = (job_id * 2654435761ULL) ^ (step_id * 40503ULL);
    int span = std::max(1, last - first + 1 - 128);
    return first + static_cast<int>(mixed % static_cast<unsigned long long>(span));
}

int step_port(int first, int last) {
    auto id = [](const char* name) {
        const char* text = env_value(name);
        return text ? static_cast<unsigned>(std::strtoul(text, nullptr, 10)) : 0u;
    };
    return step_port(id("SLURM_JOB_ID"), id("SLURM_STEP_ID"), first, last);
}

const char* env_value(const char* name) {
    const char* value = std::getenv(name);
    return value && *value ? value : nullptr;
}

}  // namespace trellis
