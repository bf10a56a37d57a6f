// SPDX-License-Identifier: Apache-2.0
// The one exception type of the data pipeline. Its message already names where the problem
// is (a file, "shard:offset", a byte offset) and what was expected, so callers print it as is.
// The pipeline treats a DataError from one sample as "bad sample" (skip or, when strict, stop);
// anything else thrown while loading a sample is a bug or an exhausted resource and stops it.
#pragma once

#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace trellis::data {

struct DataError : Error {
    using Error::Error;
    const char* topic() const override { return "data"; }
};

// What --data names is not a dataset of its kind: a missing folder or file, or a folder without
// the expected layout. Found before the first step and the user's to fix, it is a usage error
// (exit 2) like any other bad option value; a damaged file that is there stays a DataError.
struct DataSpecError : UsageError {
    using UsageError::UsageError;
    const char* topic() const override { return "data"; }
};

}  // namespace trellis::data
