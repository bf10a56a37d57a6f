// SPDX-License-Identifier: Apache-2.0
// Which cdiVersion a spec must declare. Each version of the CDI specification added fields;
// a spec that uses a field must declare at least the version that introduced it, and a
// version this code does not know is refused rather than guessed at.
#pragma once

#include <string>

#include "agent/container/cdi/spec.hpp"

namespace trellis::agent::cdi {

// Throws UsageError naming `origin` when `text` is not a version of the specification
// (the released ones, 0.1.0 to 1.1.0).
SpecVersion parse_spec_version(const std::string& text, const std::string& origin);

// The lowest version whose fields `spec` uses, with the feature that needs it ("" for 0.3.0).
struct RequiredVersion {
    SpecVersion version;
    std::string because;
};
RequiredVersion required_version(const Spec& spec);

}  // namespace trellis::agent::cdi
