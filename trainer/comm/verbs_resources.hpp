// SPDX-License-Identifier: Apache-2.0
// Owned verbs resources (as gloo's ibverbs::Device owns its context and domain): each handle
// releases its object when it goes, so that an error part way through setting up leaks
// nothing. A transport declares them in the order they are made, and they go in reverse.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

namespace trellis::comm {

template <typename Object, int (*release)(Object*)>
struct VerbsRelease {
    void operator()(Object* object) const {
        if (object) release(object);
    }
};

using VerbsContext = std::unique_ptr<ibv_context, VerbsRelease<ibv_context, ibv_close_device>>;
using ProtectionDomain = std::unique_ptr<ibv_pd, VerbsRelease<ibv_pd, ibv_dealloc_pd>>;
using CompletionQueue = std::unique_ptr<ibv_cq, VerbsRelease<ibv_cq, ibv_destroy_cq>>;
using QueuePair = std::unique_ptr<ibv_qp, VerbsRelease<ibv_qp, ibv_destroy_qp>>;
using MemoryRegion = std::unique_ptr<ibv_mr, VerbsRelease<ibv_mr, ibv_dereg_mr>>;

}  // namespace trellis::comm
