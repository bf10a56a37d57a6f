// OCI bundles through runc. The bundle's own config.json is never used: it is the user's, and
// runc runs as root. The agent writes its own from the bundle's rootfs alone: read-only root,
// the user's uid and gid, no capabilities, no new privileges, the host's network and PIDs
// (so that tasks that join only its mount namespace see a consistent /proc).
#pragma once

#include <nlohmann/json.hpp>

#include "agent/container/runtime.hpp"

namespace trellis::agent {

class OciRuntime : public ContainerRuntime {
public:
    std::string name() const override { return "oci"; }
    pid_t start(const ContainerSpec& spec, const std::filesystem::path& state) override;
    void stop(const std::string& id, const Identity& user, const std::filesystem::path& state) override;
};

// The runtime configuration for a spec (exposed for its unit test).
nlohmann::json oci_config(const ContainerSpec& spec);

}  // namespace trellis::agent
