// SPDX-License-Identifier: Apache-2.0
// Owned CUDA and NCCL handles: each releases its object when it goes, so that an error part
// way through setting up leaks nothing. Declared in the order they are made, released in
// reverse.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <type_traits>

namespace trellis::cuda {

template <typename Handle, auto release>
struct HandleRelease {
    void operator()(Handle handle) const {
        if (handle) release(handle);
    }
};

template <typename Handle, auto release>
using Owned = std::unique_ptr<std::remove_pointer_t<Handle>, HandleRelease<Handle, release>>;

using Stream = Owned<cudaStream_t, cudaStreamDestroy>;
using Event = Owned<cudaEvent_t, cudaEventDestroy>;
void release_nccl_comm(ncclComm_t comm);  // nccl_library.hpp
using NcclComm = Owned<ncclComm_t, release_nccl_comm>;

// New handles; they throw CudaError naming what failed.
Stream make_stream(unsigned flags);
Event make_event(unsigned flags = cudaEventDefault);

}  // namespace trellis::cuda
