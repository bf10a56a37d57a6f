// .sif images through Singularity or Apptainer's command line: `instance start` as the job's
// user (never as root), the instance's pid from `instance list --json`, `instance stop`.
#pragma once

#include "agent/container/runtime.hpp"

namespace trellis::agent {

class SingularityRuntime : public ContainerRuntime {
public:
    explicit SingularityRuntime(std::string program) : program_(std::move(program)) {}
    std::string name() const override { return program_; }
    pid_t start(const ContainerSpec& spec, const std::filesystem::path& state) override;
    void stop(const std::string& id, const Identity& user, const std::filesystem::path& state) override;

    // The command line of `instance start` (exposed for its unit test).
    std::vector<std::string> start_command(const ContainerSpec& spec) const;

private:
    std::string program_;
};

}  // namespace trellis::agent
