// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/warning.hpp"

#include <unistd.h>

#include <cerrno>

namespace trellis::data {

void warn_on_stderr(const std::string& line) {
    std::string text = "trellis-train: warning: " + line + "\n";
    // One write(2) per line: stdio's stderr is unbuffered and would split the line.
    const char* data = text.data();
    std::size_t left = text.size();
    while (left > 0) {
        ssize_t written = ::write(STDERR_FILENO, data, left);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) return;  // nowhere else to report a failing stderr
        data += written;
        left -= static_cast<std::size_t>(written);
    }
}

}  // namespace trellis::data
