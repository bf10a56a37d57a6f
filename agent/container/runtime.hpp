// A container runtime as the agent uses it: start a long-lived container for a step, whose
// namespaces the tasks then join (join.hpp), and stop it. OCI bundles run through runc,
// .sif images through Singularity or Apptainer; both behind this interface.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>

#include "agent/container/container_spec.hpp"
#include "agent/container/image_policy.hpp"

namespace trellis::agent {

struct RuntimeError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class ContainerRuntime {
public:
    virtual ~ContainerRuntime() = default;
    virtual std::string name() const = 0;
    // Starts the container and returns the pid of a process inside it. `state` is a folder
    // the runtime may keep files in until stop(). Throws RuntimeError.
    virtual pid_t start(const ContainerSpec& spec, const std::filesystem::path& state) = 0;
    // Stops and removes it; no error when it is already gone.
    virtual void stop(const std::string& id, const Identity& user, const std::filesystem::path& state) = 0;
};

// configured: [container] runtime (auto | oci | singularity | apptainer); auto follows the
// image: an OCI bundle takes runc, a .sif file whichever of apptainer and singularity is
// installed. Throws RuntimeError naming what is missing.
std::unique_ptr<ContainerRuntime> make_runtime(const std::string& configured, ImageKind kind);
// By name, as recorded in a container's state: for stopping it later.
std::unique_ptr<ContainerRuntime> runtime_named(const std::string& name);

}  // namespace trellis::agent
