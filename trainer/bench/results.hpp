// SPDX-License-Identifier: Apache-2.0
// Where a benchmark's results go besides its table: with --json, one JSON object per result on
// stdout; with --log-dir DIR, the same objects appended to DIR/bench.jsonl ("kind": "result"
// added), after one "run" line that describes the invocation, for trellis-report. Each result
// is built once, as a JSON object, for both. Only rank 0 writes.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "trainer/bench/bench_options.hpp"
#include "trainer/comm/transport.hpp"

namespace trellis::bench {

class Results {
public:
    // Opens DIR/bench.jsonl on rank 0 when --log-dir was given (creating DIR); throws
    // std::runtime_error naming the file when it cannot be written.
    Results(const BenchOptions& options, int rank);

    // The run line, once, before the first result: the transport (null for the data
    // benchmark, which has none) and the allreduce schedule chosen ("" for the others).
    void begin(const comm::Transport* transport, const std::string& algorithm);
    // One result, its fields in the order --json prints them.
    void add(const nlohmann::ordered_json& result);
    // Whether the table is printed (no --json).
    bool table() const { return !options_.json; }

private:
    const BenchOptions& options_;
    bool rank0_;
    std::ofstream log_;
};

// `value` rounded to `decimals` places as the table prints it (printf's "%.*f"): a JSON
// number without the noise digits of the measurement.
double rounded(double value, int decimals);

}  // namespace trellis::bench
