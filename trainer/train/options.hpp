// SPDX-License-Identifier: Apache-2.0
// trellis-train's command line: every option with its default, and the parser that refuses
// bad values with a message naming the option, the value and what is accepted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/cli.hpp"
#include "trainer/comm/allreduce.hpp"
#include "trainer/comm/make_transport.hpp"
#include "trainer/comm/wire_format.hpp"
#include "trainer/comm/wireup.hpp"
#include "trainer/gpu/precision.hpp"
#include "trainer/optim/optimizer.hpp"
#include "trainer/optim/schedule.hpp"

namespace trellis::train {

enum class Strategy { allreduce, ps };
enum class PsMode { sync, async };
// The host transports, or NCCL for the gradients (with control over TCP).
enum class Transport { tcp, verbs, shm, automatic, nccl };
enum class Device { automatic, cpu, cuda };
// What the input pipeline hands the model: normalised floats, or bytes that the backend
// normalises (auto: bytes on a GPU, floats on the CPU).
enum class Pixels { automatic, floats, bytes };

// Their spellings, written once: the parser, the help and the progress lines use them.
const cli::Choices<Strategy>& strategies();
const cli::Choices<PsMode>& ps_modes();
const cli::Choices<Transport>& transports();
const cli::Choices<Device>& devices();
const cli::Choices<Pixels>& pixel_kinds();
// The host transport that carries a run's control traffic (and its gradients but for nccl).
comm::TransportKind host_transport(Transport transport);

struct TrainOptions {
    std::string model = "resnet50";
    int batch_size = 32;             // per process and forward pass
    int accumulate = 1;              // forward/backward passes per step (gradient accumulation)
    std::optional<int> image_size;   // default: the model's
    std::optional<int> num_classes;  // default: the dataset's, or 1000
    bool zero_init_residual = false;

    std::string data = "synthetic";  // synthetic | DIR | tfrecord:GLOB | idx:DIR
    bool augment = true;
    bool write_index =
        false;  // write TFRecord index files and exit                 // training images: random crops and flips
    std::string eval_data;  // tfrecord: validation shards (default derived)
    std::optional<double> epochs;
    std::optional<std::int64_t> steps;
    int data_threads = 0;  // 0: from the binding (see data_threads_for)
    int prefetch = 2;
    Pixels pixels = Pixels::automatic;
    bool strict_data = false;

    optim::OptimizerConfig optimizer;
    double lr = 0.1;  // per 256 images
    optim::ScheduleKind lr_schedule = optim::ScheduleKind::step;
    double warmup_epochs = 0;
    std::vector<double> lr_decay_epochs{30, 60, 80};
    double lr_decay_factor = 0.1;
    double label_smoothing = 0;

    // Distributed training (see trellis-train(1)).
    Strategy strategy = Strategy::allreduce;
    int ps_servers = 1;
    PsMode ps_mode = PsMode::sync;
    comm::WireupKind wireup = comm::WireupKind::automatic;
    Transport transport = Transport::automatic;
    int tcp_streams = 2;
    int comm_timeout = 60;  // seconds without progress before a peer is lost
    double bucket_mb = 25;  // gradient bucket size
    comm::AllreduceAlgorithm allreduce_algorithm = comm::AllreduceAlgorithm::automatic;
    comm::WireFormat compress = comm::WireFormat::f32;  // gradients on the wire

    std::int64_t eval_every = 0;  // steps; 0: only at the end
    std::optional<double> eval_every_epochs;
    std::optional<double> target_accuracy;  // top-1: stop when an evaluation reaches it
    std::string log_dir;
    std::string checkpoint_dir;
    std::int64_t checkpoint_every = 0;  // steps; 0: at the end and on SIGTERM/SIGUSR1
    bool resume = false;
    std::uint64_t seed = 1;
    bool deterministic = false;
    std::int64_t display_every = 10;
    int warmup_batches = 2;  // left out of "total images/sec"
    int threads = 0;         // 0: the CPUs this process may run on

    Device device = Device::automatic;
    gpu::Precision precision = gpu::Precision::fp32;  // GPU only
    int cudnn_workspace_mb = 256;
};

struct ParsedCommand {
    enum class Action { train, help, version } action = Action::train;
    TrainOptions options;
};

// Throws UsageError with a one-line message on a bad command line.
ParsedCommand parse_train_options(const std::vector<std::string>& args);
std::string train_usage();

}  // namespace trellis::train
