// SPDX-License-Identifier: Apache-2.0
// Running the programs an import is made of besides skopeo (umoci, find, mksquashfs) as the
// calling user, through the agent's one run(): by absolute path, with a fixed environment
// (nothing of the caller's but PATH, USER, LOGNAME, HOME, and TMPDIR inside the cache), stdout
// read as it comes, stderr kept for the error message.
#pragma once

#include <string>
#include <vector>

#include "agent/command.hpp"

namespace trellis::agent {

// Runs `argv` with TMPDIR `tmpdir`. With `as_namespace_root`, in a user namespace of its own
// where the caller is root: it may read any file the caller owns, even mode 000 ones, which
// mksquashfs would otherwise pack as empty. Throws ImageImportError when it cannot start; a
// failing program is a status.
Finished run_tool(std::vector<std::string> argv, const std::string& tmpdir, bool as_namespace_root = false);

// The environment a tool of the import gets: the helper's, with TMPDIR when given.
std::vector<std::string> tool_environment(const std::string& tmpdir);

// Says in the child why a user namespace could not be made (not strerror's words for ENOSPC,
// which would read as a full disk); `what` says which.
void say_no_user_namespace(const char* what);

// Throws ImageImportError naming the configuration key unless `program` is an absolute path
// to an executable file.
void require_tool(const std::string& program, const char* key);

}  // namespace trellis::agent
