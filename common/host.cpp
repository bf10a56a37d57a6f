#include "common/host.hpp"

#include <unistd.h>

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

std::uint16_t step_port(std::uint16_t base) {
    long job = env_value("SLURM_JOB_ID") ? std::atol(env_value("SLURM_JOB_ID")) : 0;
    long step = env_value("SLURM_STEP_ID") ? std::atol(env_value("SLURM_STEP_ID")) : 0;
    return std::uint16_t(base + (job * 131 + step * 17) % 10000);
}

const char* env_value(const char* name) {
    const char* value = std::getenv(name);
    return value && *value ? value : nullptr;
}

}  // namespace trellis
