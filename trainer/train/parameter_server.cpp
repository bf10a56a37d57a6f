#include "trainer/train/parameter_server.hpp"
#include "trainer/train/trainer.hpp"

#include <omp.h>

#include <cstdio>
#include <deque>
#include <optional>
#include <random>

#include "trainer/comm/broadcast.hpp"
#include "trainer/models/model.hpp"
#include "trainer/nn/cpu/cpu_backend.hpp"
#include "trainer/train/checkpoint.hpp"
#include "trainer/train/data_sources.hpp"
#include "trainer/train/ps_messages.hpp"
#include "trainer/train/stop_request.hpp"

namespace trellis::train {

namespace {

// This server's parameters: copies of the model's descriptions for its key range, with their
// own flat store, so that the optimizer runs on the range alone.
class ShardStore {
public:
    ShardStore(nn::ParameterStore& full, const comm::PsShard& shard) {
        const auto& learned = full.learned();
        for (std::size_t p = shard.first_parameter; p < shard.end_parameter; ++p) {
            parameters_.push_back(*learned[p]);
            parameters_.back().value = parameters_.back().grad = nullptr;
        }
        for (auto& p : parameters_) store_.add(p);
        store_.allocate();
        std::copy_n(full.values().data() + shard.begin, shard.size(), store_.values().data());
    }
    nn::ParameterStore& store() { return store_; }

private:
    std::deque<nn::Parameter> parameters_;  // stable addresses for the store
    nn::ParameterStore store_;
};

class Server {
public:
    // info: the run as rank 0 describes it in checkpoints, at the step every rank starts from.
    Server(const TrainOptions& options, comm::Transport& transport, const comm::PsLayout& layout, int server,
           nn::ParameterStore& full, CheckpointInfo info)
        : options_(options), transport_(transport), layout_(layout), server_(server),
          shard_(full, layout.shard(server)), optimizer_(optim::make_optimizer(options.optimizer, shard_.store())),
          info_(std::move(info)) {
        auto size = layout.shard(server).size();
        pushes_.assign(std::size_t(layout.workers()), std::vector<float>(size + ps::trailer_floats));
        pull_.resize(size + ps::trailer_floats);
        if (!options.checkpoint_dir.empty()) open_checkpoints();
    }

    int run_synchronous() {
        const int workers = layout_.workers();
        auto grads = shard_.store().grads();
        while (true) {
            std::vector<comm::Transfer> receives;
            for (int w = 0; w < workers; ++w) add_push_receives(w, receives);
            transport_.exchange(receives);
            // The average of one push from every worker: the same step as the allreduce takes.
            std::fill(grads.begin(), grads.end(), 0.0f);
            double loss = 0;
            bool stop = false, last = false;
            for (const auto& push : pushes_) {
                for (std::size_t i = 0; i < grads.size(); ++i) grads[i] += push[i];
                const float* trailer = push.data() + grads.size();
                loss += trailer[ps::push_loss];
                stop = stop || trailer[ps::push_stop] > 0;
                last = last || trailer[ps::push_last] > 0;
            }
            for (auto& g : grads) g /= float(workers);
            optimizer_->step(pushes_[0][grads.size() + ps::push_lr]);
            ++info_.step;
            // Rank 0 saves after this step (periodically, at the end, or stopping on a
            // signal): this shard's weights and optimizer state go beside it, same step.
            if (checkpoints_ && (pushes_[0][grads.size() + ps::push_checkpoint] > 0 || stop || last)) {
                auto path = checkpoints_->save(info_, shard_.store(), *optimizer_);
                std::printf("[rank %d] parameter server %d: checkpoint saved: %s\n", layout_.workers() + server_,
                            server_, path.c_str());
                std::fflush(stdout);
            }
            reply_to_all(stop, loss / workers);
            if (stop) return exit_stopped_early;
            if (last) return 0;
        }
    }

    int run_asynchronous() {
        const int workers = layout_.workers();
        auto grads = shard_.store().grads();
        std::vector<int> active;
        for (int w = 0; w < workers; ++w) active.push_back(w);
        bool stop = false;
        while (!active.empty()) {
            // The first part of whichever push starts arriving first, then its trailer.
            std::vector<comm::Transfer> receives;
            for (int w : active) receives.push_back(push_slice(w));
            auto index = transport_.exchange_first(receives);
            int worker = active[index];
            auto trailer_receive = push_trailer(worker);
            transport_.exchange({&trailer_receive, 1});
            const auto& push = pushes_[std::size_t(worker)];
            std::copy_n(push.data(), grads.size(), grads.data());
            const float* trailer = push.data() + grads.size();
            stop = stop || trailer[ps::push_stop] > 0;
            // Each push is one worker's batch: a 1/workers share of the global batch the
            // learning rate was scaled for.
            optimizer_->step(trailer[ps::push_lr] / float(workers));
            fill_pull(stop, trailer[ps::push_loss]);
            std::vector<comm::Transfer> sends;
            add_pull_sends(worker, sends);
            transport_.exchange(sends);
            // A worker leaves after its last push, or after the reply that told it to stop.
            if (trailer[ps::push_last] > 0 || stop) active.erase(active.begin() + long(index));
        }
        return stop ? exit_stopped_early : 0;
    }

private:
    // Its own folder beside rank 0's checkpoints; on --resume, the shard of the same step.
    void open_checkpoints() {
        checkpoints_.emplace(options_.checkpoint_dir + "/server-" + std::to_string(server_));
        if (!options_.resume || info_.step == 0) return;
        auto loaded = checkpoints_->load_latest(info_, shard_.store(), *optimizer_);
        if (!loaded || loaded->step != info_.step)
            throw CheckpointError("parameter server " + std::to_string(server_) + ": rank 0 resumes at step " +
                                  std::to_string(info_.step) + " but " + checkpoints_->folder() + " holds " +
                                  (loaded ? "step " + std::to_string(loaded->step) : std::string("no checkpoint")));
        std::printf("[rank %d] parameter server %d: resumed its shard from step %lld\n", layout_.workers() + server_,
                    server_, static_cast<long long>(loaded->step));
    }

    // A message is its slice and its trailer, sent as two transfers in order (PsWorker).
    comm::Transfer push_slice(int w) {
        return comm::Transfer::recv(w, pushes_[std::size_t(w)].data(), (pull_.size() - ps::trailer_floats) * 4);
    }
    comm::Transfer push_trailer(int w) {
        auto& push = pushes_[std::size_t(w)];
        return comm::Transfer::recv(w, push.data() + push.size() - ps::trailer_floats, ps::trailer_floats * 4);
    }
    void add_push_receives(int w, std::vector<comm::Transfer>& receives) {
        receives.push_back(push_slice(w));
        receives.push_back(push_trailer(w));
    }
    void add_pull_sends(int w, std::vector<comm::Transfer>& sends) {
        std::size_t size = pull_.size() - ps::trailer_floats;
        sends.push_back(comm::Transfer::send(w, pull_.data(), size * 4));
        sends.push_back(comm::Transfer::send(w, pull_.data() + size, ps::trailer_floats * 4));
    }

    void fill_pull(bool stop, double loss) {
        auto values = shard_.store().values();
        std::copy(values.begin(), values.end(), pull_.begin());
        float* trailer = pull_.data() + values.size();
        std::fill(trailer, trailer + ps::trailer_floats, 0.0f);
        trailer[ps::pull_stop] = stop ? 1.0f : 0.0f;
        trailer[ps::pull_loss] = float(loss);
    }

    void reply_to_all(bool stop, double loss) {
        fill_pull(stop, loss);
        std::vector<comm::Transfer> sends;
        for (int w = 0; w < layout_.workers(); ++w) add_pull_sends(w, sends);
        transport_.exchange(sends);
    }

    const TrainOptions& options_;
    comm::Transport& transport_;
    const comm::PsLayout& layout_;
    int server_;
    ShardStore shard_;
    std::unique_ptr<optim::Optimizer> optimizer_;
    CheckpointInfo info_;
    std::optional<CheckpointStore> checkpoints_;
    std::vector<std::vector<float>> pushes_;
    std::vector<float> pull_;
};

}  // namespace

int serve_parameters(const TrainOptions& options, const comm::Wireup& wireup, comm::Transport& transport) {
    // The same model as the workers (the same classes, so the same parameters), built only
    // for its parameter descriptions and rank 0's initial values.
    omp_set_num_threads(1);
    // Slurm signals every task of a preempted step: the servers keep serving until the
    // workers, told by the same signal, have pushed their last step.
    install_stop_handlers();
    const auto& config = models::find_resnet(options.model);
    int image_size = options.image_size.value_or(config.default_image_size);
    auto sources = open_data_sources(options, image_size, 0, 1);
    nn::cpu::CpuBackend backend;
    models::Model model(backend, config, {sources.num_classes, options.zero_init_residual}, options.batch_size,
                        image_size, options.seed);
    auto& store = model.parameters();
    comm::broadcast_from_root(transport, store.values());
    comm::broadcast_from_root(transport, store.statistic_values());
    float step[2] = {};
    comm::broadcast_from_root(transport, step);
    comm::PsLayout layout(store, transport.size(), options.ps_servers);
    int server = wireup.identity().rank - layout.workers();
    const auto& shard = layout.shard(server);
    // Servers are never rank 0: their lines say whose they are, as the other ranks' do.
    std::printf("[rank %d] parameter server %d (rank %d on %s): parameters %zu-%zu, %.2f MB, %s mode\n",
                wireup.identity().rank, server, wireup.identity().rank, wireup.identity().host.c_str(),
                shard.first_parameter, shard.end_parameter - 1, double(shard.size()) * 4 / 1e6, ps_modes().name(options.ps_mode).c_str());
    std::fflush(stdout);
    CheckpointInfo info{config.name, sources.num_classes, ps::joined_step(step), {},
                        optim::optimizer_kinds().name(options.optimizer.kind),
                        options.seed, options.batch_size * layout.workers()};
    Server serving(options, transport, layout, server, store, info);
    return options.ps_mode == PsMode::async ? serving.run_asynchronous() : serving.run_synchronous();
}

PsWorker::PsWorker(comm::Transport& transport, const comm::PsLayout& layout, nn::ParameterStore& store)
    : transport_(transport), layout_(layout), store_(store) {
    push_trailers_.assign(std::size_t(layout.servers()), std::vector<float>(ps::trailer_floats));
    pull_trailers_ = push_trailers_;
}

double PsWorker::bytes_per_step() const { return double(store_.learned_elements()) * 4 * 2; }

PsWorker::Reply PsWorker::push_pull(double lr, double loss, bool stop, bool last, bool checkpoint) {
    // Each shard travels as its slice of the flat buffer plus the trailer, in one message:
    // the slice and the trailer are sent as two transfers in order on the same connection.
    std::vector<comm::Transfer> pushes, pulls;
    for (int s = 0; s < layout_.servers(); ++s) {
        const auto& shard = layout_.shard(s);
        auto& trailer = push_trailers_[std::size_t(s)];
        trailer[ps::push_lr] = float(lr);
        trailer[ps::push_loss] = float(loss);
        trailer[ps::push_stop] = stop ? 1.0f : 0.0f;
        trailer[ps::push_last] = last ? 1.0f : 0.0f;
        trailer[ps::push_checkpoint] = checkpoint ? 1.0f : 0.0f;
        int server = layout_.server_rank(s);
        pushes.push_back(comm::Transfer::send(server, store_.grads().data() + shard.begin, shard.size() * 4));
        pushes.push_back(comm::Transfer::send(server, trailer.data(), trailer.size() * 4));
        pulls.push_back(comm::Transfer::recv(server, store_.values().data() + shard.begin, shard.size() * 4));
        pulls.push_back(comm::Transfer::recv(server, pull_trailers_[std::size_t(s)].data(), ps::trailer_floats * 4));
    }
    transport_.exchange(pushes);
    transport_.exchange(pulls);
    const auto& first = pull_trailers_[0];
    return {first[ps::pull_stop] > 0, first[ps::pull_loss]};
}

}  // namespace trellis::train
