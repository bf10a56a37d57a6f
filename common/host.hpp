// Who this process runs on, as the programs and the plugin name it.
#pragma once

#include <cstdint>
#include <string>

namespace trellis {

// The kernel's host name ("localhost" if it has none).
std::string host_name();

// The Slurm node this runs on (SLURMD_NODENAME), else the host name.
std::string node_name();

// A port for a job step's rendezvous, derived from SLURM_JOB_ID and SLURM_STEP_ID so that
// concurrent steps on a node differ: base plus 0..9999. Bases are chosen below Linux's
// ephemeral range (32768 and up), so that no outgoing connection holds the port.
std::uint16_t step_port(std::uint16_t base);

// The variable's value, or nullptr when it is unset or empty.
const char* env_value(const char* name);

}  // namespace trellis
