// SPDX-License-Identifier: Apache-2.0
// The failure notice a rank passes on over its links' control connections (tcp_transport.hpp):
// "RANK|HOST|WHAT", the rank that failed, its node, and what happened. Only ranks of the step
// can send one (their links proved the step's secret), yet a notice is still read as text from
// elsewhere: it names a rank of the job, and what is printed of it is plain text.
#pragma once

#include <optional>
#include <string>

namespace trellis::comm {

struct FailureNotice {
    int culprit = -1;
    std::string host, reason;
};

std::string notice_text(const FailureNotice& notice);
// The notice in `text` from a job of `size` ranks; none when it is malformed or names no rank of
// the job. Control characters become '?'.
std::optional<FailureNotice> parse_notice(std::string text, int size);

}  // namespace trellis::comm
