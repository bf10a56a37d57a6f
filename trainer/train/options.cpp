// SPDX-License-Identifier: Apache-2.0
#include "trainer/train/options.hpp"

#include <cmath>

namespace trellis::train {

const cli::Choices<Strategy>& strategies() {
    static const cli::Choices<Strategy> choices{{{"allreduce", Strategy::allreduce}, {"ps", Strategy::ps}}};
    return choices;
}

const cli::Choices<PsMode>& ps_modes() {
    static const cli::Choices<PsMode> choices{{{"sync", PsMode::sync}, {"async", PsMode::async}}};
    return choices;
}

const cli::Choices<Transport>& transports() {
    static const cli::Choices<Transport> choices{{{"tcp", Transport::tcp},
                                                  {"verbs", Transport::verbs},
                                                  {"shm", Transport::shm},
                                                  {"auto", Transport::automatic},
                                                  {"nccl", Transport::nccl}}};
    return choices;
}

const cli::Choices<Pixels>& pixel_kinds() {
    static const cli::Choices<Pixels> choices{
        {{"auto", Pixels::automatic}, {"floats", Pixels::floats}, {"bytes", Pixels::bytes}}};
    return choices;
}

const cli::Choices<Device>& devices() {
    static const cli::Choices<Device> choices{
        {{"auto", Device::automatic}, {"cpu", Device::cpu}, {"cuda", Device::cuda}}};
    return choices;
}

comm::TransportKind host_transport(Transport transport) {
    switch (transport) {
    case Transport::verbs: return comm::TransportKind::verbs;
    case Transport::shm: return comm::TransportKind::shm;
    case Transport::automatic: return comm::TransportKind::automatic;
    case Transport::tcp:
    case Transport::nccl: break;
    }
    return comm::TransportKind::tcp;
}

namespace {

int positive(const std::string& what, const std::string& value) { return cli::parse_int(value, what, 1); }
std::int64_t count(const std::string& what, const std::string& value) {
    return cli::parse_int<std::int64_t>(value, what, 0);
}
double at_least_zero(const std::string& what, const std::string& value) { return cli::parse_real(value, what, 0); }
double above_zero(const std::string& what, const std::string& value) { return cli::parse_real(value, what, 0, true); }
double fraction(const std::string& what, const std::string& value) { return cli::parse_real(value, what, 0, false, 1); }

// Every option: its spelling, its help and how it sets TrainOptions, in help order.
cli::OptionTable option_table(TrainOptions& o) {
    cli::OptionTable t("trellis-train --help");
    t.section("Model")
        .value("--model", "M",
               "resnet18|34|50|101|152 (ImageNet; v1.5), resnet50_v1|101_v1|152_v1\n(tf_cnn_benchmarks' v1), "
               "resnet8|20|32|56 (32x32); tf_cnn_benchmarks'\nalexnet (227x227), vgg16, googlenet (224x224), "
               "inception3 and\ninception4 (299x299) (default resnet50)",
               [&](auto& v) { o.model = v; })
        .value("--batch-size", "B", "images per step and process (default 32)",
               [&](auto& v) { o.batch_size = positive("--batch-size", v); })
        .value("--accumulate", "N",
               "add the gradients of N batches before each update, so that a\nstep learns from N x B images per "
               "process (default 1)",
               [&](auto& v) { o.accumulate = cli::parse_int(v, "--accumulate", 1, 1024); })
        .value("--image-size", "S", "input size (default 224, 32 for the small models)",
               [&](auto& v) { o.image_size = positive("--image-size", v); })
        .value("--num-classes", "K", "output classes (default: the dataset's, 1000 for synthetic)",
               [&](auto& v) { o.num_classes = cli::parse_int(v, "--num-classes", 2); })
        .flag("--zero-init-residual", "start each residual branch's last batch-norm scale at 0",
              [&] { o.zero_init_residual = true; });
    t.section("Data")
        .value("--data", "D",
               "synthetic | DIR (DIR/train/<class>/*.JPEG, DIR/val/...) |\n"
               "tfrecord:GLOB (TensorFlow ImageNet shards) |\n"
               "idx:DIR (MNIST-style IDX files, e.g. Fashion-MNIST) (default synthetic)",
               [&](auto& v) {
                   if (v.empty()) cli::refuse("--data", v, "synthetic, DIR, tfrecord:GLOB or idx:DIR");
                   o.data = v;
               })
        .flag("--write-index",
              "write SHARD.idx beside each TFRecord shard of --data (and the\nevaluation shards) that lacks a current "
              "one, then exit",
              [&] { o.write_index = true; })
        .flag("--no-augment",
              "train on the images as evaluation sees them (no random crops or\nflips; the order is still shuffled)",
              [&] { o.augment = false; })
        .value("--eval-data", "GLOB",
               "validation shards for tfrecord data (default: GLOB with\n\"train\" replaced by \"validation\")",
               [&](auto& v) { o.eval_data = v; })
        .value("--epochs", "E", "train for E epochs (or --steps)",
               [&](auto& v) { o.epochs = above_zero("--epochs", v); })
        .value("--steps", "N", "train for N steps (default 100)", [&](auto& v) { o.steps = positive("--steps", v); })
        .value("--data-threads", "T",
               "decoding threads (default: the CPUs the binding gives the\nrank when it trains on a GPU; 2 on the CPU, "
               "where they share\nthem with the compute threads)",
               [&](auto& v) { o.data_threads = positive("--data-threads", v); })
        .value("--prefetch", "N", "batches decoded ahead (default 2)",
               [&](auto& v) { o.prefetch = positive("--prefetch", v); })
        .value("--pixels", "P",
               "auto | floats | bytes: batches of normalised floats, or of bytes\n"
               "that the backend normalises (default auto: bytes on a GPU)",
               [&](auto& v) { o.pixels = pixel_kinds().parse(v, "--pixels"); })
        .flag("--strict-data", "stop on a corrupt sample instead of skipping it", [&] { o.strict_data = true; });
    t.section("Optimizer")
        .value("--optimizer", "O", "sgd | rmsprop | lars (default sgd; momentum is sgd)",
               [&](auto& v) { o.optimizer.kind = optim::optimizer_kinds().parse(v, "--optimizer"); })
        .value("--momentum", "M", "(default 0.9)",
               [&](auto& v) { o.optimizer.momentum = float(fraction("--momentum", v)); })
        .flag("--nesterov", "Nesterov momentum", [&] { o.optimizer.nesterov = true; })
        .value("--weight-decay", "W", "(default 1e-4); on what --decay-on says",
               [&](auto& v) { o.optimizer.weight_decay = float(at_least_zero("--weight-decay", v)); })
        .value("--decay-on", "WHAT",
               "weights (default; Goyal et al., torchvision) | weights-and-biases\n(tf_cnn_benchmarks: not batch "
               "norm's) | all",
               [&](auto& v) { o.optimizer.decay_on = optim::decay_on_kinds().parse(v, "--decay-on"); })
        .flag("--decay-norm-bias", "the same as --decay-on all", [&] { o.optimizer.decay_on = optim::DecayOn::all; })
        .value("--lars-eta", "E", "LARS trust coefficient (default 0.001)",
               [&](auto& v) { o.optimizer.lars_eta = float(at_least_zero("--lars-eta", v)); })
        .value("--lr", "X", "learning rate per 256 images; scaled by the global batch\n(default 0.1)",
               [&](auto& v) { o.lr = above_zero("--lr", v); })
        .value("--lr-schedule", "S", "step | cosine | poly | constant (default step)",
               [&](auto& v) { o.lr_schedule = optim::schedule_kinds().parse(v, "--lr-schedule"); })
        .value("--warmup-epochs", "W", "linear warmup (default 0)",
               [&](auto& v) { o.warmup_epochs = at_least_zero("--warmup-epochs", v); })
        .value("--lr-decay-epochs", "LIST", "step schedule boundaries (default 30,60,80)",
               [&](auto& v) {
                   o.lr_decay_epochs.clear();
                   for (const auto& item : cli::split(v))
                       o.lr_decay_epochs.push_back(at_least_zero("--lr-decay-epochs", item));
               })
        .value("--lr-decay-factor", "F", "step schedule factor (default 0.1)",
               [&](auto& v) { o.lr_decay_factor = at_least_zero("--lr-decay-factor", v); })
        .value("--label-smoothing", "S", "(default 0)",
               [&](auto& v) { o.label_smoothing = fraction("--label-smoothing", v); });
    t.section("Distributed (every rank of an srun step, or processes with TRELLIS_* variables)")
        .value("--strategy", "S",
               "allreduce: allreduce of gradient buckets, overlapped with the\n"
               "backward pass (default); ps: parameter servers, the last\n"
               "--ps-servers K ranks (default 1) hold key ranges of the\n"
               "parameters and apply the optimizer; the others push gradients\n"
               "and pull parameters",
               [&](auto& v) { o.strategy = strategies().parse(v, "--strategy"); })
        .value("--ps-servers", "K", "parameter servers (default 1)",
               [&](auto& v) { o.ps_servers = positive("--ps-servers", v); })
        .value("--ps-mode", "M", "sync | async (default sync)",
               [&](auto& v) { o.ps_mode = ps_modes().parse(v, "--ps-mode"); })
        .value("--wireup", "W",
               "auto | pmix | slurm | env (default auto: PMIx when started by a\n"
               "PMIx server, else Slurm's variables, else TRELLIS_RANK,\n"
               "TRELLIS_WORLD_SIZE, TRELLIS_MASTER=host:port)",
               [&](auto& v) { o.wireup = comm::wireup_kinds().parse(v, "--wireup"); })
        .value("--transport", "T",
               "auto | tcp | verbs | shm | nccl (default auto: the fastest there\n"
               "is, as NCCL and Open MPI choose: NCCL for GPU ranks' allreduce\n"
               "in f32, and between processes verbs when an RDMA device has an\n"
               "active port, else shm; shm: shared memory between the ranks of\n"
               "a node, tcp to the others; TRELLIS_HCA/NCCL_IB_HCA choose the\n"
               "device; nccl: gradients over NCCL on the GPU, control over tcp)",
               [&](auto& v) { o.transport = transports().parse(v, "--transport"); })
        .value("--tcp-streams", "N", "connections per peer for large messages (default 2)",
               [&](auto& v) { o.tcp_streams = positive("--tcp-streams", v); })
        .value("--comm-timeout", "S", "seconds without progress before a peer is lost (default 60)",
               [&](auto& v) { o.comm_timeout = positive("--comm-timeout", v); })
        .value("--bucket-mb", "M", "gradient bucket size (default 25)",
               [&](auto& v) { o.bucket_mb = above_zero("--bucket-mb", v); })
        .value("--allreduce-algorithm", "A",
               "auto | ring | halving-doubling | hierarchical (default auto:\n"
               "hierarchical when the job spans nodes with the same number of\n"
               "ranks, more than one, on each; else halving-doubling when the\n"
               "number of ranks is a power of two; else ring)",
               [&](auto& v) { o.allreduce_algorithm = comm::allreduce_algorithms().parse(v, "--allreduce-algorithm"); })
        .value("--compress", "C",
               "gradients on the wire: none | bf16 | fp16 (the allreduce, and\n"
               "the parameter server's pushes; its pulls stay f32) (default none)",
               [&](auto& v) { o.compress = comm::wire_formats().parse(v, "--compress"); });
    t.section("Running")
        .value("--eval-every", "K", "evaluate every K steps (default: at the end only)",
               [&](auto& v) { o.eval_every = count("--eval-every", v); })
        .value("--eval-every-epochs", "E", "evaluate every E epochs (a fraction allowed)",
               [&](auto& v) { o.eval_every_epochs = above_zero("--eval-every-epochs", v); })
        .value("--target-accuracy", "A",
               "stop once an evaluation's top-1 accuracy reaches A (0-1); the\ntime-to-accuracy table says when each "
               "level was reached",
               [&](auto& v) { o.target_accuracy = cli::parse_real(v, "--target-accuracy", 0, true, 1); })
        .value("--display-every", "K", "progress line every K steps (default 10)",
               [&](auto& v) { o.display_every = positive("--display-every", v); })
        .value("--warmup-batches", "N", "steps left out of \"total images/sec\" (default 2)",
               [&](auto& v) { o.warmup_batches = cli::parse_int(v, "--warmup-batches", 0); })
        .value("--log-dir", "DIR", "metrics.jsonl and TensorBoard event files", [&](auto& v) { o.log_dir = v; })
        .value("--checkpoint-dir", "DIR",
               "checkpoints (at the end, every --checkpoint-every steps, and on\n"
               "SIGTERM or SIGUSR1, after which the run exits with status 75)",
               [&](auto& v) { o.checkpoint_dir = v; })
        .value("--checkpoint-every", "K", "(default 0: only at the end and on a signal)",
               [&](auto& v) { o.checkpoint_every = count("--checkpoint-every", v); })
        .flag("--resume", "continue from the newest valid checkpoint in --checkpoint-dir", [&] { o.resume = true; })
        .value("--seed", "S", "initial weights, data order and augmentation (default 1)",
               [&](auto& v) { o.seed = cli::parse_unsigned(v, "--seed"); })
        .flag("--deterministic",
              "fix the thread team (runs are bit-identical for the same seed,\n"
              "batch and thread count in any case)",
              [&] { o.deterministic = true; })
        .value("--threads", "T", "compute threads (default: the CPUs this process may use)",
               [&](auto& v) { o.threads = positive("--threads", v); });
    t.section("Device")
        .value("--device", "D",
               "auto | cpu | cuda (default auto: the first GPU in\n"
               "CUDA_VISIBLE_DEVICES when one is usable, else the CPU)",
               [&](auto& v) { o.device = devices().parse(v, "--device"); })
        .value("--precision", "P",
               "fp32 | bf16 | fp16 on the GPU, with f32 master weights and\n"
               "dynamic loss scaling for fp16 (default fp32, TF32 allowed)",
               [&](auto& v) { o.precision = gpu::precisions().parse(v, "--precision"); })
        .value("--cudnn-workspace-mb", "M", "cuDNN convolution workspace bound (default 256)",
               [&](auto& v) { o.cudnn_workspace_mb = positive("--cudnn-workspace-mb", v); });
    return t;
}

// Options that are each fine alone but not together.
void check_combination(const TrainOptions& o) {
    if (o.epochs && o.steps) throw UsageError("give --epochs or --steps, not both");
    if (o.strategy == Strategy::ps && o.ps_mode == PsMode::async && !o.checkpoint_dir.empty())
        throw UsageError(
            "--checkpoint-dir needs --ps-mode sync with --strategy ps (asynchronous servers "
            "apply each worker's pushes at different steps: there is no one step to save)");
    if (o.transport == Transport::nccl && o.device == Device::cpu)
        throw UsageError("--transport nccl needs the GPU (--device cuda or auto)");
    if (o.transport == Transport::nccl && o.strategy == Strategy::ps)
        throw UsageError("--transport nccl is for --strategy allreduce (parameter servers use tcp or verbs)");
    if (o.transport == Transport::nccl && o.compress != comm::WireFormat::f32)
        throw UsageError("--compress is for the host transports (NCCL reduces f32 gradients)");
    if (o.strategy == Strategy::ps && o.precision == gpu::Precision::fp16)
        throw UsageError(
            "--precision fp16 needs --strategy allreduce (its loss scaling skips overflowed "
            "steps on every rank; parameter servers would apply them): use bf16");
    if (o.precision != gpu::Precision::fp32 && o.device == Device::cpu)
        throw UsageError("--precision " + gpu::precisions().name(o.precision) +
                         " needs the GPU (the CPU backend computes fp32)");
    if (o.resume && o.checkpoint_dir.empty()) throw UsageError("--resume needs --checkpoint-dir");
    if (o.write_index && !o.data.starts_with("tfrecord:"))
        throw UsageError("--write-index is for --data tfrecord:GLOB, not '" + o.data + "'");
    if (!o.eval_data.empty() && !o.data.starts_with("tfrecord:"))
        throw UsageError("--eval-data is for --data tfrecord:GLOB, not '" + o.data +
                         "' (DIR evaluates on DIR/val, idx:DIR on its t10k files)");
    if (o.eval_every > 0 && o.eval_every_epochs) throw UsageError("give --eval-every or --eval-every-epochs, not both");
    if (o.target_accuracy && o.strategy == Strategy::ps)
        throw UsageError(
            "--target-accuracy needs --strategy allreduce (with parameter servers only rank 0 "
            "evaluates, and the others could not stop with it)");
    if (o.target_accuracy && o.eval_every == 0 && !o.eval_every_epochs)
        throw UsageError(
            "--target-accuracy needs --eval-every or --eval-every-epochs (it is checked at each evaluation)");
}

}  // namespace

ParsedCommand parse_train_options(const std::vector<std::string>& args) {
    ParsedCommand command;
    for (const auto& arg : args) {
        if (arg == "-h" || arg == "--help") return {ParsedCommand::Action::help, {}};
        if (arg == "--version") return {ParsedCommand::Action::version, {}};
    }
    option_table(command.options).parse(args);
    check_combination(command.options);
    return command;
}

std::string train_usage() {
    TrainOptions ignored;
    return "usage: trellis-train [options]\n\n"
           "Trains a ResNet or another of tf_cnn_benchmarks' models on ImageNet-style data on a GPU (cuDNN) or this "
           "machine's CPUs (oneDNN).\n\n" +
           option_table(ignored).help() + "  -h, --help | --version\n";
}

}  // namespace trellis::train
