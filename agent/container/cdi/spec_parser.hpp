// SPDX-License-Identifier: Apache-2.0
// Reads one CDI spec file's text (JSON or YAML) into a Spec, strictly: an unknown field, a
// value of the wrong type, a missing required field, a bad kind or device name, or a
// cdiVersion lower than the fields used need is a UsageError naming the file, line and field.
#pragma once

#include <string>

#include "agent/container/cdi/spec.hpp"

namespace trellis::agent::cdi {

Spec parse_spec(const std::string& text, const std::string& origin);

// "vendor.com/class": vendor a DNS-like name, class a name; both of letters, digits, '_', '.', '-'.
bool is_valid_kind(const std::string& kind);
// A device name: letters, digits, '_', '.', ':' and '-', starting and ending with a letter or digit.
bool is_valid_device_name(const std::string& name);

}  // namespace trellis::agent::cdi
