// SPDX-License-Identifier: Apache-2.0
// The gradient allreduce over NCCL: the flat f32 gradients are cut into buckets from the end,
// and each bucket is averaged (ncclAvg) on a communication stream as soon as the backward
// pass on the compute stream has moved past it, so that reduction overlaps the rest of it.
#pragma once

#include <nccl.h>

#include <utility>
#include <vector>

#include "trainer/gpu/accelerator.hpp"
#include "trainer/cuda/context.hpp"
#include "trainer/cuda/handles.hpp"
#include "trainer/cuda/nccl_library.hpp"

namespace trellis::cuda {

class NcclAllreduce : public gpu::DeviceAllreduce {
public:
    NcclAllreduce(CudaContext& context, const comm::Identity& identity,
                  const gpu::Accelerator::ShareFromRank0& from_rank0, std::size_t bucket_bytes,
                  const std::vector<std::string>& library_folders);
    ~NcclAllreduce() override;

    void ready_from(std::size_t offset) override;
    comm::CommStats finish() override;

private:
    void launch(std::size_t bucket);

    CudaContext& context_;
    const NcclLibrary& nccl_;
    int ranks_;
    // Made in this order and released in reverse; the destructor first waits for the stream.
    Stream stream_;
    NcclComm comm_;
    Event ready_;
    // Timing events of this step and the last: finish() reports the last step's time, whose
    // events have completed, so that the host never waits for the allreduce itself.
    Event started_[2], done_[2];
    int current_ = 0;
    bool timed_before_ = false;
    std::vector<std::pair<std::size_t, std::size_t>> buckets_;  // [begin, end), last first
    std::size_t next_bucket_ = 0;
    bool started_step_ = false;
};

}  // namespace trellis::cuda
