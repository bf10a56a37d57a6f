// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/bucketed_allreduce.hpp"

#include <algorithm>
#include <chrono>

#include "trainer/comm/gradient_buckets.hpp"

namespace trellis::comm {

BucketedAllreduce::BucketedAllreduce(Transport& transport, std::span<float> gradients, std::size_t bucket_bytes,
                                     WireFormat format, AllreduceAlgorithm algorithm)
    : transport_(transport),
      allreduce_(make_allreduce(transport, algorithm, format)),
      gradients_(gradients),
      ready_from_(gradients.size()) {
    // At least 1024 values a bucket: smaller messages cost more in latency than they overlap.
    buckets_ = gradient_buckets(gradients.size(), std::max<std::size_t>(bucket_bytes / sizeof(float), 1024));
    thread_ = std::thread([this] { run(); });
}

BucketedAllreduce::~BucketedAllreduce() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
}

void BucketedAllreduce::ready_from(std::size_t offset) {
    {
        std::lock_guard lock(mutex_);
        ready_from_ = std::min(ready_from_, offset);
    }
    changed_.notify_all();
}

void BucketedAllreduce::run() {
    std::unique_lock lock(mutex_);
    while (true) {
        changed_.wait(lock, [&] {
            return stopping_ || (next_bucket_ < buckets_.size() && buckets_[next_bucket_].first >= ready_from_);
        });
        if (stopping_) return;
        auto [begin, end] = buckets_[next_bucket_++];
        lock.unlock();
        auto start = std::chrono::steady_clock::now();
        std::exception_ptr failure;
        try {
            allreduce_->sum(gradients_.subspan(begin, end - begin));
        } catch (...) {
            failure = std::current_exception();
        }
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        lock.lock();
        stats_.seconds += seconds;
        stats_.bytes += (end - begin) * sizeof(float);
        if (failure && !failure_) failure_ = failure;
        ++done_buckets_;
        changed_.notify_all();
        if (failure_) return;  // the transport is down: finish() rethrows
    }
}

CommStats BucketedAllreduce::finish() {
    ready_from(0);
    auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return done_buckets_ == buckets_.size() || failure_; });
    if (failure_) std::rethrow_exception(failure_);
    auto stats = stats_;
    stats.wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Reset for the next step.
    stats_ = {};
    next_bucket_ = done_buckets_ = 0;
    ready_from_ = gradients_.size();
    lock.unlock();
    const float scale = 1.0f / float(transport_.size());
    for (auto& g : gradients_) g *= scale;
    return stats;
}

}  // namespace trellis::comm
