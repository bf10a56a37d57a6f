// SPDX-License-Identifier: Apache-2.0
// How a step's gradients become the same update on every rank, chosen once per run (gloo's
// Algorithm, one class per path): nothing to do for one process; the host allreduce of
// gradient buckets, overlapped with the backward pass; the same with a GPU, its gradients
// making the round trip through host memory; NCCL on the GPU; or the parameter servers,
// which apply the optimizer themselves.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "trainer/comm/comm_stats.hpp"
#include "trainer/comm/transport.hpp"
#include "trainer/gpu/accelerator.hpp"
#include "trainer/models/model.hpp"
#include "trainer/ps/layout.hpp"
#include "trainer/ps/worker.hpp"
#include "trainer/train/options.hpp"

namespace trellis::train {

// What the step knows when its backward pass is done.
struct StepState {
    std::int64_t step = 0;        // counted from 0, this one
    bool last = false;            // the run's last step
    bool checkpoint_due = false;  // rank 0 saves a checkpoint after it
    bool stop_requested = false;  // this rank received a signal
    double lr = 0;
    double loss = 0;
};

struct Synchronised {
    comm::CommStats comm;
    bool applied = false;  // the update is done (the parameter servers applied it)
    bool stop = false;     // a rank asked to stop: this one stops too, after this step
    double loss = 0;       // the loss to report: the mean over the workers when known
};

class GradientSync {
public:
    virtual ~GradientSync() = default;
    // Called during the backward pass as the gradients become final (empty: nothing overlaps).
    virtual models::Model::GradientsReady overlap() { return {}; }
    virtual Synchronised finish(const StepState& step) = 0;
    // Whether every rank computes and takes part in the step's collectives (not so with
    // parameter servers, which take no part in the workers' sums).
    virtual bool collective() const { return true; }
    // The strategy line of the header, its fields in metrics.jsonl's run record, and the
    // fields each progress line adds.
    virtual std::string strategy() const = 0;
    virtual void describe(nlohmann::json& run) const = 0;
    virtual std::string progress_header() const {
        return "\tcomm time of the gradient allreduce (time waited for it) and its busbw";
    }
    virtual std::string progress(const comm::CommStats& comm, int ranks) const;
};

struct SyncContext {
    const TrainOptions& options;
    const comm::Identity& identity;
    std::string wireup;
    comm::Transport* transport;     // null: a single process
    comm::Allreduce* small_sums;    // sums of a few values over the ranks (null likewise)
    gpu::Accelerator* accelerator;  // null: the CPU
    nn::ParameterStore& parameters;
};

// The path for this run's options. Throws UsageError when it cannot be taken (NCCL without a
// GPU).
std::unique_ptr<GradientSync> make_gradient_sync(const SyncContext& context, const std::string& device_note);

}  // namespace trellis::train
