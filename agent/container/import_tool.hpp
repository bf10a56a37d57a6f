// Running the programs an import is made of (skopeo, umoci, mksquashfs) as the calling user:
// by absolute path, with a fixed environment (nothing of the caller's but PATH, HOME, USER,
// LOGNAME, and TMPDIR inside the cache, so that a big temporary file lands where the space
// was checked), stdout read as it comes, stderr kept for the error message.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace trellis::agent {

struct ToolResult {
    int status = 0;      // the exit status; 128+N for a signal N
    std::string out;     // stdout (bounded)
    std::string error;   // stderr: its last 4 KiB
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
};

// Throws ImageImportError when it cannot start (fork, pipe); a failing program is a status.
ToolResult run_tool(const ToolRun& run);

// Throws ImageImportError naming the configuration key unless `program` is an absolute path
// to an executable file.
void require_tool(const std::string& program, const char* key);

}  // namespace trellis::agent
