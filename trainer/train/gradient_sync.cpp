// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/gradient_sync.hpp"

#include <chrono>
#include <cstdio>

#include "common/error.hpp"
#include "trainer/comm/broadcast.hpp"
#include "trainer/comm/bucketed_allreduce.hpp"
#include "trainer/train/nccl_vote.hpp"

namespace trellis::train {

namespace {

std::string format(const char* pattern, auto... values) {
    char text[512];
    std::snprintf(text, sizeof text, pattern, values...);
    return text;
}

// With --transport auto, why the carrier was chosen.
std::string chosen_because(const SyncContext& c, const std::string& carrier, const std::string& not_nccl = "") {
    if (c.options.transport != Transport::automatic) return "";
    if (carrier.rfind("nccl", 0) == 0) return "auto: GPU ranks, f32 gradients; ";
    std::string why = not_nccl.empty() ? "" : "not NCCL: " + not_nccl + "; ";
    if (carrier == "verbs") return "auto: " + why + "an RDMA device has an active port; ";
    return "auto: " + why + "no RDMA device with an active port; ";
}

// "over shm, 4 ranks (auto: no RDMA device with an active port; wireup pmix, rank 0 on n1)"
std::string over(const SyncContext& c, const std::string& carrier, const std::string& not_nccl = "") {
    return format("over %s, %d ranks (%swireup %s, rank 0 on %s)", carrier.c_str(), c.identity.size,
                  chosen_because(c, carrier, not_nccl).c_str(), c.wireup.c_str(), c.identity.host.c_str());
}

// With --transport auto: NCCL where every rank can take it (nccl_vote.hpp).
NcclDecision decide_nccl(const SyncContext& c) {
    std::string why_not_here = !c.accelerator ? "no GPU" : c.accelerator->nccl_unavailable();
    std::string host_and_gpu = why_not_here.empty() ? c.identity.host + " " + c.accelerator->pci_bus_id() : "";
    auto votes = nccl_vote(c.identity.size, c.identity.rank, c.accelerator != nullptr, why_not_here, host_and_gpu);
    c.small_sums->sum(votes);
    return count_nccl_votes(votes, c.identity.rank, why_not_here);
}

// The run record's fields that every path fills, for a report comparing runs: the carrier
// chosen (never "auto"), the allreduce schedule ("" where none of ours runs: one process,
// NCCL's own choice, parameter servers), and the bytes of one rank's gradients as they go on
// the wire each step (f32, or the --compress format).
void describe_path(const SyncContext& c, const std::string& transport, const std::string& algorithm,
                   nlohmann::json& run) {
    run["transport"] = transport;
    run["algorithm"] = algorithm;
    run["gradient_bytes"] = c.parameters.learned_elements() * std::int64_t(comm::wire_bytes(c.options.compress));
}

void describe_collective(const SyncContext& c, const std::string& transport, const std::string& algorithm,
                         nlohmann::json& run) {
    run["strategy"] = strategies().name(c.options.strategy);
    describe_path(c, transport, algorithm, run);
    run["bucket_mb"] = c.options.bucket_mb;
}

std::size_t bucket_bytes(const TrainOptions& options) { return std::size_t(options.bucket_mb * (1 << 20)); }

// One process: its gradients are the update.
class NoSync : public GradientSync {
public:
    explicit NoSync(const SyncContext& c) : context_(c) {}
    Synchronised finish(const StepState& step) override { return {{}, false, false, step.loss}; }
    std::string strategy() const override { return ""; }
    void describe(nlohmann::json& run) const override {
        run["strategy"] = "single process";
        describe_path(context_, "", "", run);
    }
    std::string progress_header() const override { return ""; }
    std::string progress(const comm::CommStats&, int) const override { return ""; }

private:
    const SyncContext& context_;
};

// The host allreduce of gradient buckets: on the CPU each bucket leaves as soon as the
// backward pass is past it; with a GPU the gradients make the round trip whole.
class HostAllreduce : public GradientSync {
public:
    HostAllreduce(const SyncContext& c, std::string not_nccl)
        : context_(c),
          not_nccl_(std::move(not_nccl)),
          reducer_(*c.transport, c.parameters.grads(), bucket_bytes(c.options), c.options.compress,
                   c.options.allreduce_algorithm) {}
    models::Model::GradientsReady overlap() override {
        if (context_.accelerator) return {};
        return [this](std::size_t offset) { reducer_.ready_from(offset); };
    }
    Synchronised finish(const StepState& step) override {
        Synchronised done{{}, false, false, step.loss};
        if (!context_.accelerator) {
            done.comm = reducer_.finish();
            return done;
        }
        context_.accelerator->download_grads();
        reducer_.ready_from(0);
        done.comm = reducer_.finish();
        context_.accelerator->upload_grads();
        return done;
    }
    std::string strategy() const override {
        const auto& o = context_.options;
        std::string wire =
            o.compress == comm::WireFormat::f32 ? "" : ", " + comm::wire_formats().name(o.compress) + " on the wire";
        return format("%s %s, %.0f MB gradient buckets reduced by %s%s", strategies().name(o.strategy).c_str(),
                      over(context_, context_.transport->name(), not_nccl_).c_str(), o.bucket_mb,
                      comm::allreduce_algorithms().name(reducer_.algorithm()).c_str(), wire.c_str());
    }
    void describe(nlohmann::json& run) const override {
        auto algorithm = comm::allreduce_algorithms().name(reducer_.algorithm());
        describe_collective(context_, context_.transport->name(), algorithm, run);
        run["allreduce_algorithm"] = algorithm;
        run["compression"] = comm::wire_formats().name(context_.options.compress);
    }

private:
    const SyncContext& context_;
    std::string not_nccl_;  // with --transport auto: why GPU ranks reduce on the host
    comm::BucketedAllreduce reducer_;
};

// NCCL on the GPU, bucket by bucket during the backward pass; control stays on the host
// transport, which also hands NCCL rank 0's unique id.
class NcclAllreduce : public GradientSync {
public:
    explicit NcclAllreduce(const SyncContext& c) : context_(c) {
        auto* transport = c.transport;
        reducer_ = c.accelerator->nccl_allreduce(
            c.identity, [transport](std::span<std::byte> bytes) { comm::broadcast_from_root(*transport, bytes); },
            bucket_bytes(c.options));
    }
    models::Model::GradientsReady overlap() override {
        return [this](std::size_t offset) { reducer_->ready_from(offset); };
    }
    Synchronised finish(const StepState& step) override { return {reducer_->finish(), false, false, step.loss}; }
    std::string strategy() const override {
        return format("%s %s, %.0f MB gradient buckets", strategies().name(context_.options.strategy).c_str(),
                      over(context_, "nccl (control over " + context_.transport->name() + ")").c_str(),
                      context_.options.bucket_mb);
    }
    void describe(nlohmann::json& run) const override { describe_collective(context_, "nccl", "", run); }

private:
    const SyncContext& context_;
    std::unique_ptr<gpu::DeviceAllreduce> reducer_;
};

// Parameter servers: push the gradients, pull the parameters they updated.
class ParameterServers : public GradientSync {
public:
    explicit ParameterServers(const SyncContext& c)
        : context_(c),
          layout_(c.parameters, c.identity.size, c.options.ps_servers),
          worker_(*c.transport, layout_, c.parameters, c.options.compress) {}
    Synchronised finish(const StepState& step) override {
        auto started = std::chrono::steady_clock::now();
        bool async = context_.options.ps_mode == PsMode::async;
        // An asynchronous server waits for every worker's last push: a worker that stops
        // early says so.
        bool last = step.last || (async && (stopping_ || step.stop_requested));
        ps::PushHeader push{float(step.lr), float(step.loss), std::uint8_t(step.stop_requested), std::uint8_t(last),
                            std::uint8_t(step.checkpoint_due)};
        if (context_.accelerator) context_.accelerator->download_grads();
        auto reply = worker_.push_pull(push);
        if (context_.accelerator) context_.accelerator->upload_learned_values();
        Synchronised done;
        done.comm.seconds = done.comm.wait_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        done.comm.bytes = std::size_t(worker_.bytes_per_step() / 2);  // pushed or pulled, as a mean
        done.applied = true;
        done.stop = stopping_ = reply.stop;
        // Synchronous servers average one push of every worker: their mean loss is the step's.
        done.loss = async ? step.loss : reply.mean_loss;
        return done;
    }
    bool collective() const override { return false; }
    void describe(nlohmann::json& run) const override {
        run["strategy"] = "ps";
        run["ps_mode"] = ps_modes().name(context_.options.ps_mode);
        describe_path(context_, context_.transport->name(), "", run);
        run["workers"] = layout_.workers();
        run["servers"] = layout_.servers();
        run["compression"] = comm::wire_formats().name(context_.options.compress);
    }
    std::string strategy() const override {
        const auto pushes = context_.options.compress;
        int workers = layout_.workers(), servers = layout_.servers();
        return format(
            "ps (%s) %s: %d %s, %d %s%s", ps_modes().name(context_.options.ps_mode).c_str(),
            over(context_, context_.transport->name()).c_str(), workers, workers == 1 ? "worker" : "workers", servers,
            servers == 1 ? "server" : "servers",
            pushes == comm::WireFormat::f32 ? "" : (", " + comm::wire_formats().name(pushes) + " pushes").c_str());
    }
    std::string progress_header() const override { return "\tpush/pull time and rate"; }
    std::string progress(const comm::CommStats& comm, int) const override {  // both ways counted
        return format("\tpush/pull %.1f ms %.2f GB/s", comm.seconds * 1e3,
                      comm.seconds > 0 ? worker_.bytes_per_step() / comm.seconds / 1e9 : 0.0);
    }

private:
    const SyncContext& context_;
    ps::Layout layout_;
    ps::Worker worker_;
    bool stopping_ = false;
};

}  // namespace

std::string GradientSync::progress(const comm::CommStats& comm, int ranks) const {
    return format("\tcomm %.1f ms (waited %.1f ms) busbw %.2f GB/s", comm.seconds * 1e3, comm.wait_seconds * 1e3,
                  comm.bus_bandwidth(ranks));
}

std::unique_ptr<GradientSync> make_gradient_sync(const SyncContext& context, const std::string& device_note) {
    if (!context.transport) return std::make_unique<NoSync>(context);
    const auto& o = context.options;
    if (o.transport == Transport::nccl) {
        if (!context.accelerator) throw UsageError("--transport nccl needs a GPU: " + device_note);
        return std::make_unique<NcclAllreduce>(context);
    }
    if (o.strategy == Strategy::ps) return std::make_unique<ParameterServers>(context);
    // NCCL is the fastest path for GPU ranks reducing f32 gradients (the host transports'
    // compression is for the CPU), where every rank can take it.
    NcclDecision nccl;
    if (o.transport == Transport::automatic && o.compress == comm::WireFormat::f32) nccl = decide_nccl(context);
    if (nccl.use) return std::make_unique<NcclAllreduce>(context);
    return std::make_unique<HostAllreduce>(context, nccl.why_not);
}

}  // namespace trellis::train
