// The containers the agent started, one folder each under the run directory
// (/run/trellis/<id>/): who owns it (the slurmstepd or launcher pid and its start time), the
// runtime, the pid to join and that process's start time, and a `ready` mark written last.
// prepare() is idempotent and safe against tasks calling it at the same moment (one lock for
// the run directory); every call also sweeps containers whose owner has died (slurmstepd
// killed, node crash), so nothing is left behind for long.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "agent/container/container_spec.hpp"
#include "agent/container/runtime.hpp"

namespace trellis::agent {

class ContainerRegistry {
public:
    explicit ContainerRegistry(std::filesystem::path run_dir);

    // The pid to join for spec.id, starting the container when it is not running yet.
    pid_t prepare(const ContainerSpec& spec, ContainerRuntime& runtime, pid_t owner);
    // Stops and forgets the container; nothing to do when there is none.
    void release(const std::string& id);
    // Stops and forgets every container whose owner is gone; returns how many.
    int sweep();

private:
    void remove(const std::string& id);  // with the lock held
    int sweep_locked();

    std::filesystem::path run_dir_;
};

// "pid starttime" of a live process, "" when it does not exist: a pid reused by another
// process does not match.
std::string process_identity(pid_t pid);
// Whether the process exists and is not a zombie.
bool process_running(pid_t pid);

}  // namespace trellis::agent
