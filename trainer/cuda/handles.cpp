// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/handles.hpp"

#include "trainer/cuda/check.hpp"

namespace trellis::cuda {

Stream make_stream(unsigned flags) {
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, flags), "cudaStreamCreate");
    return Stream(stream);
}

Event make_event(unsigned flags) {
    cudaEvent_t event = nullptr;
    check(cudaEventCreateWithFlags(&event, flags), "cudaEventCreate");
    return Event(event);
}

}  // namespace trellis::cuda
