// SPDX-License-Identifier: Apache-2.0
// Starting a helper program (the agent from the plugin, Apptainer from the agent): as the
// job's user when asked, from /, with a fixed minimal environment, by absolute path and with
// none of the caller's other descriptors, so that nothing of root's or slurmstepd's reaches
// it and nothing of the user's reaches root.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
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

// A helper program and how it is started. Every helper the agent and the plugin run (the
// agent, Apptainer, skopeo, umoci, mksquashfs, squashfuse, fuse-overlayfs, ldconfig) is
// started through start() or run(), the one place that forks them.
struct Command {
    std::vector<std::string> argv;  // argv[0]: the program's absolute path
    // Its whole environment; empty: user_environment() of the user it runs as.
    std::vector<std::string> env;
    ChildStdio stdio;              // start() only: run() connects its own
    const Identity* as = nullptr;  // become this user first
    // A session of its own, so that it and its children are signalled together; else it
    // stays in the caller's process group and a terminal's Ctrl-C reaches it too.
    bool own_session = true;
    bool die_with_parent = false;  // killed when its starter ends (a FUSE daemon)
    std::vector<int> keep;         // descriptors it keeps, at their numbers (4 and above)
    int fd3 = -1;                  // a descriptor it gets as its fd 3
    int program = -1;              // exec this descriptor (opened before a chroot), not argv[0]
    // Run in the child after its descriptors are set and it became `as`, before it execs:
    // namespaces, mounts, a chroot. Each returns false with errno set after saying on stderr
    // what failed; the child then exits 126.
    std::function<bool()> setup;
    // After setup: the child forks once more, waits for the fork and exits with its status;
    // the fork runs `setup_in_fork` and execs. For the first process of a PID namespace that
    // `setup` made.
    std::function<bool()> setup_in_fork;

    // run() only:
    std::string input;                   // its stdin (a memory file: /dev/stdin can be opened); "": /dev/null
    std::size_t output_limit = 1 << 20;  // stdout kept up to this
    std::function<void(const std::string& line)> on_line;  // each stdout line as it comes
};

// Starts `command` from /, with no signal blocked or handled, nothing of the caller's but its
// stdio (and `keep`, fd3), and returns its pid. Throws std::runtime_error when it cannot fork.
// A child that cannot be set up exits 126, one that cannot exec 127, with the reason on its
// stderr.
pid_t start(const Command& command);

struct Finished {
    int status = 0;          // the exit status; 128+N for a signal N
    std::string out;         // stdout, up to Command::output_limit
    bool truncated = false;  // stdout went past output_limit
    std::string err;         // stderr: its last 4 KiB, without trailing newlines
};

// Starts `command`, reads its stdout as it comes (stderr goes to a memory file, so that
// neither stream can block the other) and waits for it. Throws std::runtime_error when it
// cannot start; a program that fails is a status.
Finished run(const Command& command);

// A wait status as a number: the exit status, or 128+N for a signal N.
int exit_status(int wait_status);
// Waits for `pid` (through EINTR) and returns exit_status() of it.
int wait_for(pid_t pid);

// The same as start() with only argv, stdio and the user.
pid_t spawn(const std::vector<std::string>& argv, const ChildStdio& stdio, const Identity* as = nullptr);

// PATH (a fixed system one), HOME, USER and LOGNAME of `uid`: all a helper is given of the
// caller's environment.
std::vector<std::string> user_environment(uid_t uid);

// In a child process: become `user` for good (real, effective and saved ids). From root, its
// supplementary groups come from the group database; from slurmstepd's user_init, which has
// already taken the job's user's groups and effective ids, those are kept. Returns false
// with errno set on failure.
bool become(const Identity& user);

// The full path of a program found in the fixed system PATH (or in `path`, a PATH of the
// caller's), or "" when there is none.
std::string find_program(const std::string& name, const std::string& path = "");

// At most `limit` bytes from `fd` (to its end or the limit): a helper's output is read with a
// bound.
std::string read_bounded(int fd, std::size_t limit = 1 << 20);
// A helper's message from the memory file its stderr went to: from the start, at most 4 KiB,
// without the trailing newlines.
std::string read_message(int memfd);

}  // namespace trellis::agent
