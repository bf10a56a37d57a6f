// The namespaces a task joins to enter a container, taken from a process that is in it:
// user first (its owner has every right inside, which joining the others takes), then
// mount, ipc and uts; only those that differ from the caller's.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace trellis::agent {

// (descriptor, CLONE_NEW*) pairs, close-on-exec, in joining order. Throws ContainerError
// when one cannot be opened.
std::vector<std::pair<int, int>> open_namespaces(pid_t pid);

// "user", "mount", "ipc" or "uts", for messages.
const char* namespace_name(int kind);

}  // namespace trellis::agent
