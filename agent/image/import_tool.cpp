// SPDX-License-Identifier: Apache-2.0
#include "agent/image/import_tool.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "agent/image/cache.hpp"
#include "agent/container/namespaces.hpp"

namespace trellis::agent {

std::vector<std::string> tool_environment(const std::string& tmpdir) {
    std::vector<std::string> env = user_environment(::getuid());
    if (!tmpdir.empty()) env.push_back("TMPDIR=" + tmpdir);
    return env;
}

void say_no_user_namespace(const char* what) {
    std::fprintf(
        stderr, "cannot make a user namespace%s: %s\n", what,
        errno == ENOSPC ? "the limit of user namespaces is reached (user.max_user_namespaces)" : std::strerror(errno));
}

Finished run_tool(std::vector<std::string> argv, const std::string& tmpdir, bool as_namespace_root) {
    Command tool;
    tool.argv = std::move(argv);
    tool.env = tool_environment(tmpdir);
    tool.own_session = false;
    if (as_namespace_root)
        tool.setup = [] {
            if (enter_user_namespace(0, true)) return true;
            say_no_user_namespace("");
            return false;
        };
    try {
        return run(tool);
    } catch (const std::runtime_error& error) {
        throw ImageImportError("cannot run " + tool.argv[0] + ": " + error.what());
    }
}

void require_tool(const std::string& program, const char* key) {
    if (program.empty() || program[0] != '/' || ::access(program.c_str(), X_OK) != 0)
        throw ImageImportError(std::string("cannot run ") + key + " '" + program + "': " +
                               (program.empty() || program[0] != '/' ? "not an absolute path" : std::strerror(errno)) +
                               " (install it, or set [container] " + key + " in trellis.toml to its absolute path)");
}

}  // namespace trellis::agent
