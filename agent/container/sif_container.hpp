// SPDX-License-Identifier: Apache-2.0
// A .sif image's container, entered by the calling process as the job's user: Apptainer
// (or Singularity) runs the image in its user-namespace mode with trellis-pause as the
// command, the process running it is found among the descendants of the Apptainer this
// function started (never from a record Apptainer keeps in the user's home), and its
// namespaces are joined. Apptainer keeps running (its FUSE mount of the image lives in its
// processes) until the caller stops it with stop_apptainer.
#pragma once

#include "agent/container/container_spec.hpp"

namespace trellis::agent {

// The command line given to Apptainer: exec --userns --contain --no-home --cleanenv, each bind.
std::vector<std::string> apptainer_command(const ContainerSpec& spec);

// Returns Apptainer's pid (its session's leader). Throws ContainerError naming what failed
// (with Apptainer's own message when it stopped).
pid_t enter_sif_container(const ContainerSpec& spec);
// Stops the Apptainer that enter_sif_container started: SIGTERM, which it answers by ending
// its container and unmounting the image, then, after at most 3 s, SIGKILL to whatever is
// left of its session (a FUSE helper in a process group of its own outlives a group kill).
void stop_apptainer(pid_t apptainer);

}  // namespace trellis::agent
