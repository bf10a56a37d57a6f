// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/parameter_server.hpp"

#include <omp.h>

#include <cstdio>

#include "trainer/comm/broadcast.hpp"
#include "trainer/models/model.hpp"
#include "trainer/nn/cpu/convolution_probe.hpp"
#include "trainer/nn/cpu/cpu_backend.hpp"
#include "trainer/ps/server.hpp"
#include "trainer/train/run_start.hpp"
#include "trainer/train/stop_request.hpp"
#include "trainer/train/trainer.hpp"

namespace trellis::train {

int serve_parameters(const TrainOptions& options, const comm::Wireup& wireup, comm::Transport& transport) {
    // The same model as the workers (rank 0's number of classes, so the same parameters), built
    // only for its parameter descriptions and rank 0's initial values: the servers never open
    // the dataset.
    omp_set_num_threads(1);
    // Slurm signals every task of a preempted step: the servers keep serving until the
    // workers, told by the same signal, have pushed their last step.
    install_stop_handlers();
    const auto& architecture = models::find_architecture(options.model);
    int image_size = options.image_size.value_or(architecture.default_image_size);
    // The model below is made on the CPU, as a worker's: a oneDNN that dies making a
    // convolution here refuses this rank at once, as it refuses the workers.
    nn::cpu::require_working_convolutions();
    DatasetShape dataset;
    share_dataset_shape(transport, dataset);
    int classes = int(dataset.classes);
    nn::cpu::CpuBackend backend;
    models::Model model(backend, architecture, {classes, options.zero_init_residual}, options.batch_size, image_size,
                        options.seed);
    auto& store = model.parameters();
    comm::broadcast_from_root(transport, store.values());
    comm::broadcast_from_root(transport, store.statistic_values());
    RunStart start;  // the servers need only the step: they resume their own shards of it
    share_run_start(transport, start);
    ps::Layout layout(store, transport.size(), options.ps_servers);
    int server = wireup.identity().rank - layout.workers();
    const auto& shard = layout.shard(server);
    // Servers are never rank 0: their lines say whose they are, as the other ranks' do.
    std::printf("[rank %d] parameter server %d (rank %d on %s): parameters %zu-%zu, %.2f MB, %s mode\n",
                wireup.identity().rank, server, wireup.identity().rank, wireup.identity().host.c_str(),
                shard.first_parameter, shard.end_parameter - 1, double(shard.size()) * 4 / 1e6,
                ps_modes().name(options.ps_mode).c_str());
    std::fflush(stdout);
    checkpoint::CheckpointInfo info;
    info.model = architecture.name, info.num_classes = classes, info.step = start.step;
    info.optimizer = optim::optimizer_kinds().name(options.optimizer.kind);
    info.seed = options.seed, info.global_batch = options.batch_size * options.accumulate * layout.workers();
    ps::ServerConfig serving{options.optimizer, options.ps_mode == PsMode::async, options.checkpoint_dir,
                             options.resume, options.compress};
    auto outcome = ps::Server(serving, transport, layout, server, store, info).run();
    return outcome == ps::Server::Outcome::stopped ? exit_stopped_early : 0;
}

}  // namespace trellis::train
