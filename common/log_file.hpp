// SPDX-License-Identifier: Apache-2.0
// A JSON-lines log in a --log-dir folder, opened for appending: trellis-train's metrics.jsonl
// and trellis-bench's bench.jsonl, which a resumed run or a second invocation continue.
#pragma once

#include <fstream>
#include <string>

namespace trellis {

// Creates `folder` if missing and opens folder/name for appending. A process killed mid-line
// (kill -9) leaves a partial last line: the next record then starts on a fresh line, so that
// it stays parseable. Throws std::runtime_error naming the path when it cannot be written.
std::ofstream open_log_file(const std::string& folder, const std::string& name);

}  // namespace trellis
