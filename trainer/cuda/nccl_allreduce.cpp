// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/nccl_allreduce.hpp"

#include <algorithm>
#include <exception>
#include <cstring>

#include "trainer/comm/gradient_buckets.hpp"
#include "trainer/cuda/check.hpp"
#include "trainer/cuda/nccl_library.hpp"

namespace trellis::cuda {

NcclAllreduce::NcclAllreduce(CudaContext& context, const comm::Identity& identity,
                             const gpu::Accelerator::ShareFromRank0& from_rank0, std::size_t bucket_bytes,
                             const std::vector<std::string>& library_folders)
    : context_(context), nccl_(nccl(library_folders)), ranks_(identity.size) {
    // Rank 0's unique id reaches every rank as its bytes over the control transport.
    ncclUniqueId id{};
    if (identity.rank == 0) check(nccl_.get_unique_id(&id), "ncclGetUniqueId");
    from_rank0(std::as_writable_bytes(std::span<ncclUniqueId, 1>(&id, 1)));
    stream_ = make_stream(cudaStreamNonBlocking);
    ncclComm_t comm = nullptr;
    check(nccl_.comm_init_rank(&comm, ranks_, id, identity.rank), "ncclCommInitRank");
    comm_.reset(comm);
    context_.watch_nccl([this] {
        ncclResult_t async = ncclSuccess;
        check(nccl_.comm_get_async_error(comm_.get(), &async), "ncclCommGetAsyncError");
        check(async, "the gradient allreduce (a peer failed or left)");
    });
    ready_ = make_event(cudaEventDisableTiming);
    for (int i = 0; i < 2; ++i) {
        started_[i] = make_event();
        done_[i] = make_event();
    }

    buckets_ = comm::gradient_buckets(context_.parameters().learned_elements(), bucket_bytes / sizeof(float));
}

NcclAllreduce::~NcclAllreduce() {
    context_.watch_nccl({});
    // After NCCL's error, or while another error unwinds, waiting for the stream or
    // finalizing could wait for a dead peer forever: abort the communicator instead.
    ncclResult_t async = ncclSuccess;
    if (comm_) nccl_.comm_get_async_error(comm_.get(), &async);
    if (comm_ && (async != ncclSuccess || std::uncaught_exceptions() > 0))
        nccl_.comm_abort(comm_.release());
    else if (stream_)
        cudaStreamSynchronize(stream_.get());
}

void NcclAllreduce::launch(std::size_t bucket) {
    auto [begin, end] = buckets_[bucket];
    float* grads = context_.parameters().grads();
    check(nccl_.all_reduce(grads + begin, grads + begin, end - begin, ncclFloat32, ncclAvg, comm_.get(), stream_.get()),
          "ncclAllReduce of a gradient bucket");
}

void NcclAllreduce::ready_from(std::size_t host_offset) {
    // Buckets wholly at or after `offset` are final on the compute stream. The buckets cut the
    // device's gradients, padding included.
    std::size_t offset = context_.parameters().device_offset(host_offset);
    std::size_t last = next_bucket_;
    while (last < buckets_.size() && buckets_[last].first >= offset) ++last;
    if (last == next_bucket_) return;
    check(cudaEventRecord(ready_.get(), context_.stream()), "cudaEventRecord");
    check(cudaStreamWaitEvent(stream_.get(), ready_.get(), 0), "cudaStreamWaitEvent");
    if (!started_step_) {
        check(cudaEventRecord(started_[current_].get(), stream_.get()), "cudaEventRecord");
        started_step_ = true;
    }
    check(nccl_.group_start(), "ncclGroupStart");
    for (; next_bucket_ < last; ++next_bucket_) launch(next_bucket_);
    check(nccl_.group_end(), "ncclGroupEnd");
}

comm::CommStats NcclAllreduce::finish() {
    ready_from(0);
    check(cudaEventRecord(done_[current_].get(), stream_.get()), "cudaEventRecord");
    // The optimizer, on the compute stream, reads the averaged gradients.
    check(cudaStreamWaitEvent(context_.stream(), done_[current_].get(), 0), "cudaStreamWaitEvent");
    comm::CommStats stats;
    stats.bytes = context_.parameters().learned_elements() * 4;
    int previous = 1 - current_;
    if (timed_before_) {
        // The last step's allreduce finished before this step's loss was read.
        float ms = 0;
        context_.wait(done_[previous].get(), "waiting for the last gradient allreduce");
        check(cudaEventElapsedTime(&ms, started_[previous].get(), done_[previous].get()), "cudaEventElapsedTime");
        stats.seconds = ms / 1e3;
    }
    timed_before_ = true;
    current_ = previous;
    next_bucket_ = 0;
    started_step_ = false;
    return stats;
}

}  // namespace trellis::cuda
