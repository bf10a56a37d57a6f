// SPDX-License-Identifier: Apache-2.0
// The run's clock across resumes: the training time of every segment so far (a segment is one
// process, from its first step; a requeued job's time in the queue is not training), and the
// segment this process is. The time-to-accuracy table and metrics.jsonl's train_seconds read
// it, so that a resumed run reports the times of the whole run.
#pragma once

#include <chrono>
#include <optional>

namespace trellis::train {

class RunClock {
public:
    // What the checkpoint recorded: the seconds and segments before this one.
    void resume(double seconds_before, int segments_before) {
        before_ = seconds_before;
        segment_ = segments_before + 1;
    }
    // This segment's first step (or the evaluation a signal abandoned, redone before it).
    void start() { started_ = std::chrono::steady_clock::now(); }
    // The training time so far, evaluations and saves included (a user waits for them too).
    double seconds() const {
        if (!started_) return before_;
        return before_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - *started_).count();
    }
    // 1 for a run's first process, 2 after its first resume, and so on.
    int segment() const { return segment_; }

private:
    double before_ = 0;
    int segment_ = 1;
    std::optional<std::chrono::steady_clock::time_point> started_;
};

}  // namespace trellis::train
