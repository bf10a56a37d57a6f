// SPDX-License-Identifier: Apache-2.0
// Data-parallel gradient averaging: the flat gradient buffer is cut into buckets from its end
// (the last layers' gradients are ready first in the backward pass), and a communication
// thread reduces each bucket with the allreduce as soon as the backward pass has moved
// past it, so that communication overlaps the rest of the backward pass.
#pragma once

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "trainer/comm/allreduce.hpp"
#include "trainer/comm/comm_stats.hpp"

namespace trellis::comm {

class BucketedAllreduce {
public:
    BucketedAllreduce(Transport& transport, std::span<float> gradients, std::size_t bucket_bytes,
                      WireFormat format = WireFormat::f32,
                      AllreduceAlgorithm algorithm = AllreduceAlgorithm::automatic);
    ~BucketedAllreduce();

    // Called during the backward pass: the gradients from `offset` to the end are final.
    void ready_from(std::size_t offset);
    // Waits for every bucket, divides by the number of ranks (the average), and returns the
    // step's figures. Rethrows a communication failure (PeerFailure) of the thread.
    CommStats finish();
    AllreduceAlgorithm algorithm() const { return allreduce_->algorithm(); }

private:
    void run();

    Transport& transport_;
    std::unique_ptr<Allreduce> allreduce_;
    std::span<float> gradients_;
    std::vector<std::pair<std::size_t, std::size_t>> buckets_;  // [begin, end), last first

    std::mutex mutex_;
    std::condition_variable changed_;
    std::size_t ready_from_;       // gradients at and after this offset are final
    std::size_t next_bucket_ = 0;  // the thread's next bucket in buckets_
    std::size_t done_buckets_ = 0;
    bool stopping_ = false;
    std::exception_ptr failure_;
    CommStats stats_;
    std::thread thread_;
};

}  // namespace trellis::comm
