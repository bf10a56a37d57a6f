// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/failure_notice.hpp"

#include <charconv>

namespace trellis::comm {

std::string notice_text(const FailureNotice& notice) {
    return std::to_string(notice.culprit) + "|" + notice.host + "|" + notice.reason;
}

std::optional<FailureNotice> parse_notice(std::string text, int size) {
    // Printed as it came: no notice may forge lines in a log or move a terminal's cursor.
    for (char& c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    auto first = text.find('|');
    auto second = first == std::string::npos ? first : text.find('|', first + 1);
    if (second == std::string::npos) return std::nullopt;
    FailureNotice notice;
    auto [end, error] = std::from_chars(text.data(), text.data() + first, notice.culprit);
    if (error != std::errc() || end != text.data() + first || notice.culprit < 0 || notice.culprit >= size)
        return std::nullopt;
    notice.host = text.substr(first + 1, second - first - 1);
    notice.reason = text.substr(second + 1);
    return notice;
}

}  // namespace trellis::comm
