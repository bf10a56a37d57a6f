// Running the programs an import is made of (skopeo, umoci, mksquashfs) as the calling user:
// by absolute path, with a fixed environment (nothing of the caller's but PATH, USER, LOGNAME,
// HOME, and TMPDIR inside the cache), stdout read as it comes, stderr kept for the error
// message.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "agent/container/image_reference.hpp"

namespace trellis::agent {

struct ToolResult {
    int status = 0;          // the exit status; 128+N for a signal N
    std::string out;         // stdout, up to ToolRun::output_limit
    bool truncated = false;  // stdout went past output_limit
    std::string error;       // stderr: its last 4 KiB
};

struct ToolRun {
    std::vector<std::string> argv;  // argv[0]: the program's absolute path
    std::string tmpdir;             // TMPDIR for it
    std::string input;              // its stdin (a memory file, so /dev/stdin can be opened); "": /dev/null
    // Runs it in a user namespace of its own where the caller is root: it may read any file
    // the caller owns, even mode 000 ones, which mksquashfs would otherwise pack as empty.
    bool as_namespace_root = false;
    std::ostream* progress = nullptr;  // when given, stdout lines go there as they come
    std::string progress_prefix;
    std::size_t output_limit = 2 * image_json_limit;
    // HOME for it; "" for the user's. skopeo gets one that does not exist, so that the user's
    // ~/.config/containers (registries.conf, policy.json) never steers the node's pulls:
    // only the site's /etc/containers is read, and credentials are passed by --authfile.
    std::string home;
    // A descriptor it gets as its fd 3 (an archive opened by the check: /dev/fd/3); -1: none.
    int fd3 = -1;
    // When set, it runs in a user and mount namespace of its own where every mount is
    // read-only but these folders: whatever it unpacks cannot write anywhere else.
    std::vector<std::string> writable_only;
};

// Throws ImageImportError when it cannot start (fork, pipe); a failing program is a status.
ToolResult run_tool(const ToolRun& run);

// Throws ImageImportError naming the configuration key unless `program` is an absolute path
// to an executable file.
void require_tool(const std::string& program, const char* key);

}  // namespace trellis::agent
