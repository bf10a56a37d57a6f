// Moving the calling process into a running container: the namespaces listed (mount first
// among them) of the process `pid`, then the working directory. Called in the task's own
// process just before it execs (the plugin's task_init_privileged, the agent's launch), as
// root, single-threaded; the exec that follows finds the command in the image.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace trellis::agent {

// Throws std::runtime_error naming the namespace that could not be joined.
void join_container(pid_t pid, const std::vector<std::string>& namespaces, const std::string& cwd);

}  // namespace trellis::agent
