// SPDX-License-Identifier: Apache-2.0
// Who this process runs on, as the programs and the plugin name it.
#pragma once

#include <cstdint>
#include <string>

namespace trellis {

// The kernel's host name ("localhost" if it has none).
std::string host_name();

// The Slurm node this runs on (SLURMD_NODENAME), else the host name.
std::string node_name();

// A port for a job step's rendezvous: a fixed function of the job and step ids within
// FIRST..LAST, so that every node of the step agrees without talking and two steps on one node
// rarely meet. The top 128 ports of the range are never chosen: TensorFlow's tasks take the
// ports just above MASTER_PORT. Ranges are chosen below Linux's ephemeral range (32768 and
// up), so that no outgoing connection holds the port.
int step_port(unsigned job_id, unsigned step_id, int first, int last);
// The same for this process's step (SLURM_JOB_ID and SLURM_STEP_ID; 0 when unset).
int step_port(int first, int last);

// The variable's value, or nullptr when it is unset or empty.
const char* env_value(const char* name);

}  // namespace trellis
