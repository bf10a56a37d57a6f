// SPDX-License-Identifier: Apache-2.0
// Where the data layer sends its warnings (a skipped sample, a truncated shard). A function
// rather than a stream so that tests can collect the lines and the trainer can prefix them
// with its rank.
#pragma once

#include <functional>
#include <string>

namespace trellis::data {

using WarningSink = std::function<void(const std::string& line)>;

// Writes "trellis-train: warning: LINE\n" to stderr with one write, so that lines from
// several worker threads do not interleave.
void warn_on_stderr(const std::string& line);

// The sink to use when a configuration leaves it empty.
inline const WarningSink& or_stderr(const WarningSink& sink) {
    static const WarningSink fallback = warn_on_stderr;
    return sink ? sink : fallback;
}

}  // namespace trellis::data
