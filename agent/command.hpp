// Starting a helper program (the agent from the plugin, Apptainer from the agent): as the
// job's user when asked, from /, with a fixed minimal environment, by absolute path and with
// none of the caller's other descriptors, so that nothing of root's or slurmstepd's reaches
// it and nothing of the user's reaches root.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace trellis::agent {

struct Identity {
    uid_t uid;
    gid_t gid;
    // cgroup.procs files the child moves itself into before it becomes the user, with root's
    // rights when its caller's saved ids hold them (slurmstepd's user_init): the step's own
    // cgroups, which Slurm tracks, signals and accounts. Computed by the caller, never from
    // anything the user chose.
    std::vector<std::string> join_cgroups = {};
};

struct ChildStdio {
    int in = -1, out = -1, err = -1;  // -1: /dev/null
};

// Forks and execs `argv` (argv[0] an absolute path) with `stdio`, in a session of its own
// (so that it and its children can be signalled together), with the environment
// user_environment() gives for that user, after become(*as) when `as` is given. Returns the child's pid;
// throws std::runtime_error when it cannot fork. A child that cannot become the user or
// exec exits 126 or 127 with the reason on its stderr.
pid_t spawn(const std::vector<std::string>& argv, const ChildStdio& stdio, const Identity* as = nullptr);

// PATH (a fixed system one), HOME, USER and LOGNAME of `uid`: all a helper is given of the
// caller's environment.
std::vector<std::string> user_environment(uid_t uid);

// In a child process: become `user` for good (real, effective and saved ids). From root, its
// supplementary groups come from the group database; from slurmstepd's user_init, which has
// already taken the job's user's groups and effective ids, those are kept. Returns false
// with errno set on failure.
bool become(const Identity& user);

// The full path of a program found in the fixed system PATH, or "" when there is none.
std::string find_program(const std::string& name);

// At most `limit` bytes from `fd` (to its end or the limit): a helper's output is read with a
// bound.
std::string read_bounded(int fd, std::size_t limit = 1 << 20);
// A helper's message from the memory file its stderr went to: from the start, at most 4 KiB,
// without the trailing newlines.
std::string read_message(int memfd);

}  // namespace trellis::agent
