// The one exception type of the data pipeline. Its message already names where the problem
// is (a file, "shard:offset", a byte offset) and what was expected, so callers print it as is.
// The pipeline treats a DataError from one sample as "bad sample" (skip or, when strict, stop);
// anything else thrown while loading a sample is a bug or an exhausted resource and stops it.
#pragma once

#include <stdexcept>
#include <string>

namespace trellis::data {

struct DataError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace trellis::data
