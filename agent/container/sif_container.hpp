// A .sif image's container, entered by the calling process as the job's user: Apptainer
// (or Singularity) runs the image in its user-namespace mode with trellis-pause as the
// command, the process running it is found among the descendants of the Apptainer this
// function started (never from a record Apptainer keeps in the user's home), its namespaces
// are joined, and Apptainer is then stopped: the caller is the container from then on.
#pragma once

#include "agent/container/container_spec.hpp"

namespace trellis::agent {

// The command line given to Apptainer: exec --contain --no-home --cleanenv, each bind.
std::vector<std::string> apptainer_command(const ContainerSpec& spec);

// Throws ContainerError naming what failed (with Apptainer's own message when it stopped).
void enter_sif_container(const ContainerSpec& spec);

}  // namespace trellis::agent
