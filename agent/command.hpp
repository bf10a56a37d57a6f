// Running a helper program to completion (runc, singularity, the agent itself from the
// plugin): its output captured, a time limit so that nothing hangs slurmstepd, and
// optionally as another user, so that nothing a user controls runs as root.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace trellis::agent {

struct Identity {
    uid_t uid;
    gid_t gid;
};

struct CommandResult {
    int status = -1;  // exit status; 128 + N when killed by signal N
    std::string output, errors;
    bool ok() const { return status == 0; }
    // "runc: exit status 1: <last line of errors>"
    std::string describe(const std::string& what) const;
};

// Runs argv[0] (looked up in PATH) with stdin from /dev/null. Throws std::runtime_error
// when it cannot be started or does not finish within `limit` (it is killed then).
CommandResult run_command(const std::vector<std::string>& argv, std::optional<Identity> as = std::nullopt,
                          std::chrono::seconds limit = std::chrono::seconds(60));

// The full path of a program found in PATH, or "" when there is none.
std::string find_program(const std::string& name);

// `path` with every link resolved, as `user` resolves it: a root caller must not reach
// through folders the user cannot. Throws std::runtime_error with the reason.
std::string canonical_path_as(const Identity& user, const std::string& path);

// In a child process: become `user` (its supplementary groups from the group database),
// unless this process already is that user. Returns false with errno set on failure.
bool become(const Identity& user);

}  // namespace trellis::agent
