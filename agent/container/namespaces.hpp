// SPDX-License-Identifier: Apache-2.0
// User namespaces: the one a helper or a container is made in, mapping only the caller's own
// ids; and the namespaces a task joins to enter a container, taken from a process that is in
// it: user first (its owner has every right inside, which joining the others takes), then
// mount, ipc and uts; only those that differ from the caller's.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace trellis::agent {

// A new user namespace (with the CLONE_NEW* of `more`) that maps only the caller's uid and
// gid, to themselves or, with `as_root`, to root: supplementary groups still count (the
// kernel checks them) but show as nogroup inside. Safe in a forked child: returns false with
// errno set.
bool enter_user_namespace(int more, bool as_root);

// (descriptor, CLONE_NEW*) pairs, close-on-exec, in joining order. Throws ContainerError
// when one cannot be opened.
std::vector<std::pair<int, int>> open_namespaces(pid_t pid);

// "user", "mount", "ipc" or "uts", for messages.
const char* namespace_name(int kind);

}  // namespace trellis::agent
