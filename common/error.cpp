// SPDX-License-Identifier: Apache-2.0
#include "common/error.hpp"

#include <cstdio>

namespace trellis {

int exit_status(const std::exception& error) {
    auto* known = dynamic_cast<const Error*>(&error);
    return known ? known->exit_status() : 1;
}

int report_error(const std::string& prefix, const std::exception& error, const std::string& hint) {
    auto* known = dynamic_cast<const Error*>(&error);
    const char* topic = known ? known->topic() : nullptr;
    std::fprintf(stderr, "%s%s%s%s%s\n", prefix.c_str(), topic ? topic : "", topic ? ": " : "", error.what(),
                 hint.c_str());
    return exit_status(error);
}

}  // namespace trellis
