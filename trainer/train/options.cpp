#include "trainer/train/options.hpp"

#include <charconv>
#include <cmath>
#include <type_traits>
#include <functional>
#include <map>
#include <stdexcept>

#include "common/error.hpp"

namespace trellis::train {

namespace {

[[noreturn]] void refuse(const std::string& option, const std::string& value, const std::string& accepted) {
    throw UsageError("invalid value '" + value + "' for " + option + " (expected " + accepted + ")");
}

template <typename Number>
Number number(const std::string& option, const std::string& value, Number low, const std::string& accepted) {
    Number parsed{};
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    bool finite = true;
    if constexpr (std::is_floating_point_v<Number>) finite = std::isfinite(parsed);
    if (error != std::errc() || end != value.data() + value.size() || !finite || !(parsed >= low))
        refuse(option, value, accepted);
    return parsed;
}

int positive(const std::string& o, const std::string& v) { return number<int>(o, v, 1, "a positive integer"); }
std::int64_t count(const std::string& o, const std::string& v) {
    return number<std::int64_t>(o, v, 0, "a non-negative integer");
}
double real(const std::string& o, const std::string& v) { return number<double>(o, v, 0.0, "a non-negative number"); }

std::vector<double> epochs_list(const std::string& option, const std::string& value) {
    std::vector<double> list;
    std::size_t start = 0;
    while (start <= value.size() && !value.empty()) {
        auto comma = value.find(',', start);
        list.push_back(real(option, value.substr(start, comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return list;
}

using Setter = std::function<void(TrainOptions&, const std::string& option, const std::string& value)>;

const std::map<std::string, Setter>& valued_options() {
    static const std::map<std::string, Setter> table{
        {"--model", [](auto& o, auto&, auto& v) { o.model = v; }},
        {"--batch-size", [](auto& o, auto& n, auto& v) { o.batch_size = positive(n, v); }},
        {"--image-size", [](auto& o, auto& n, auto& v) { o.image_size = positive(n, v); }},
        {"--num-classes", [](auto& o, auto& n, auto& v) { o.num_classes = number<int>(n, v, 2, "an integer >= 2"); }},
        {"--data", [](auto& o, auto& n, auto& v) { if (v.empty()) refuse(n, v, "synthetic, DIR or tfrecord:GLOB"); o.data = v; }},
        {"--eval-data", [](auto& o, auto&, auto& v) { o.eval_data = v; }},
        {"--epochs", [](auto& o, auto& n, auto& v) {
             o.epochs = real(n, v);
             if (*o.epochs <= 0) refuse(n, v, "a positive number");
         }},
        {"--steps", [](auto& o, auto& n, auto& v) { o.steps = positive(n, v); }},
        {"--data-threads", [](auto& o, auto& n, auto& v) { o.data_threads = positive(n, v); }},
        {"--prefetch", [](auto& o, auto& n, auto& v) { o.prefetch = positive(n, v); }},
        {"--optimizer", [](auto& o, auto& n, auto& v) {
             if (v != "sgd" && v != "momentum" && v != "rmsprop" && v != "lars") refuse(n, v, "sgd, rmsprop or lars");
             o.optimizer.kind = v == "momentum" ? "sgd" : v;
         }},
        {"--momentum", [](auto& o, auto& n, auto& v) {
             o.optimizer.momentum = float(real(n, v));
             if (o.optimizer.momentum >= 1) refuse(n, v, "a number in [0, 1)");
         }},
        {"--weight-decay", [](auto& o, auto& n, auto& v) { o.optimizer.weight_decay = float(real(n, v)); }},
        {"--lars-eta", [](auto& o, auto& n, auto& v) { o.optimizer.lars_eta = float(real(n, v)); }},
        {"--lr", [](auto& o, auto& n, auto& v) {
             o.lr = real(n, v);
             if (o.lr <= 0) refuse(n, v, "a positive number");
         }},
        {"--lr-schedule", [](auto& o, auto& n, auto& v) {
             if (v != "step" && v != "cosine" && v != "poly" && v != "constant")
                 refuse(n, v, "step, cosine, poly or constant");
             o.lr_schedule = v;
         }},
        {"--warmup-epochs", [](auto& o, auto& n, auto& v) { o.warmup_epochs = real(n, v); }},
        {"--lr-decay-epochs", [](auto& o, auto& n, auto& v) { o.lr_decay_epochs = epochs_list(n, v); }},
        {"--lr-decay-factor", [](auto& o, auto& n, auto& v) { o.lr_decay_factor = real(n, v); }},
        {"--label-smoothing", [](auto& o, auto& n, auto& v) {
             o.label_smoothing = real(n, v);
             if (o.label_smoothing >= 1) refuse(n, v, "a number in [0, 1)");
         }},
        {"--strategy", [](auto& o, auto& n, auto& v) {
             if (v != "allreduce" && v != "ps") refuse(n, v, "allreduce or ps");
             o.strategy = v;
         }},
        {"--ps-servers", [](auto& o, auto& n, auto& v) { o.ps_servers = positive(n, v); }},
        {"--ps-mode", [](auto& o, auto& n, auto& v) {
             if (v != "sync" && v != "async") refuse(n, v, "sync or async");
             o.ps_mode = v;
         }},
        {"--wireup", [](auto& o, auto& n, auto& v) {
             if (v != "auto" && v != "pmix" && v != "slurm" && v != "env") refuse(n, v, "auto, pmix, slurm or env");
             o.wireup = v;
         }},
        {"--transport", [](auto& o, auto& n, auto& v) {
             if (v != "tcp" && v != "verbs" && v != "auto" && v != "nccl") refuse(n, v, "tcp, verbs, auto or nccl");
             o.transport = v;
         }},
        {"--tcp-streams", [](auto& o, auto& n, auto& v) { o.tcp_streams = positive(n, v); }},
        {"--comm-timeout", [](auto& o, auto& n, auto& v) { o.comm_timeout = positive(n, v); }},
        {"--bucket-mb", [](auto& o, auto& n, auto& v) {
             o.bucket_mb = real(n, v);
             if (o.bucket_mb <= 0) refuse(n, v, "a positive number");
         }},
        {"--allreduce-algorithm", [](auto& o, auto& n, auto& v) {
             if (v != "auto" && v != "ring" && v != "halving-doubling") refuse(n, v, "auto, ring or halving-doubling");
             o.allreduce_algorithm = v;
         }},
        {"--compress", [](auto& o, auto& n, auto& v) {
             if (v != "none" && v != "bf16" && v != "fp16") refuse(n, v, "none, bf16 or fp16");
             o.compress = v;
         }},
        {"--eval-every", [](auto& o, auto& n, auto& v) { o.eval_every = count(n, v); }},
        {"--log-dir", [](auto& o, auto&, auto& v) { o.log_dir = v; }},
        {"--checkpoint-dir", [](auto& o, auto&, auto& v) { o.checkpoint_dir = v; }},
        {"--checkpoint-every", [](auto& o, auto& n, auto& v) { o.checkpoint_every = count(n, v); }},
        {"--seed", [](auto& o, auto& n, auto& v) { o.seed = number<std::uint64_t>(n, v, 0, "a non-negative integer"); }},
        {"--display-every", [](auto& o, auto& n, auto& v) { o.display_every = positive(n, v); }},
        {"--warmup-batches", [](auto& o, auto& n, auto& v) { o.warmup_batches = int(count(n, v)); }},
        {"--threads", [](auto& o, auto& n, auto& v) { o.threads = positive(n, v); }},
        {"--device", [](auto& o, auto& n, auto& v) {
             if (v != "auto" && v != "cpu" && v != "cuda") refuse(n, v, "auto, cpu or cuda");
             o.device = v;
         }},
        {"--precision", [](auto& o, auto& n, auto& v) {
             if (v != "fp32" && v != "bf16" && v != "fp16") refuse(n, v, "fp32, bf16 or fp16");
             o.precision = v;
         }},
        {"--cudnn-workspace-mb", [](auto& o, auto& n, auto& v) { o.cudnn_workspace_mb = positive(n, v); }},
    };
    return table;
}

const std::map<std::string, std::function<void(TrainOptions&)>>& flag_options() {
    static const std::map<std::string, std::function<void(TrainOptions&)>> table{
        {"--nesterov", [](auto& o) { o.optimizer.nesterov = true; }},
        {"--decay-norm-bias", [](auto& o) { o.optimizer.decay_norm_and_bias = true; }},
        {"--zero-init-residual", [](auto& o) { o.zero_init_residual = true; }},
        {"--strict-data", [](auto& o) { o.strict_data = true; }},
        {"--resume", [](auto& o) { o.resume = true; }},
        {"--deterministic", [](auto& o) { o.deterministic = true; }},
    };
    return table;
}

}  // namespace

ParsedCommand parse_train_options(const std::vector<std::string>& args) {
    ParsedCommand command;
    auto& options = command.options;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string arg = args[i], value;
        if (arg == "-h" || arg == "--help") return {ParsedCommand::Action::help, options};
        if (arg == "--version") return {ParsedCommand::Action::version, options};
        auto equals = arg.find('=');
        bool inline_value = arg.rfind("--", 0) == 0 && equals != std::string::npos;
        if (inline_value) {
            value = arg.substr(equals + 1);
            arg = arg.substr(0, equals);
        }
        if (auto flag = flag_options().find(arg); flag != flag_options().end()) {
            if (inline_value) throw UsageError(arg + " takes no value");
            flag->second(options);
            continue;
        }
        auto setter = valued_options().find(arg);
        if (setter == valued_options().end())
            throw UsageError("unknown option '" + arg + "' (see trellis-train --help)");
        if (!inline_value) {
            if (i + 1 >= args.size()) throw UsageError(arg + " needs a value");
            value = args[++i];
        }
        setter->second(options, arg, value);
    }
    if (options.epochs && options.steps) throw UsageError("give --epochs or --steps, not both");
    if (options.strategy == "ps" && options.ps_mode == "async" && !options.checkpoint_dir.empty())
        throw UsageError("--checkpoint-dir needs --ps-mode sync with --strategy ps (asynchronous servers "
                                    "apply each worker's pushes at different steps: there is no one step to save)");
    if (options.transport == "nccl" && options.device == "cpu")
        throw UsageError("--transport nccl needs the GPU (--device cuda or auto)");
    if (options.transport == "nccl" && options.strategy == "ps")
        throw UsageError("--transport nccl is for --strategy allreduce (parameter servers use tcp or verbs)");
    if (options.transport == "nccl" && options.compress != "none")
        throw UsageError("--compress is for the host transports (NCCL reduces f32 gradients)");
    if (options.strategy == "ps" && options.precision == "fp16")
        throw UsageError("--precision fp16 needs --strategy allreduce (its loss scaling skips overflowed "
                                    "steps on every rank; parameter servers would apply them): use bf16");
    if (options.precision != "fp32" && options.device == "cpu")
        throw UsageError("--precision " + options.precision + " needs the GPU (the CPU backend computes fp32)");
    if (options.resume && options.checkpoint_dir.empty())
        throw UsageError("--resume needs --checkpoint-dir");
    return command;
}

const char* train_usage() {
    return R"(usage: trellis-train [options]

Trains a ResNet on ImageNet-style data on a GPU (cuDNN) or this machine's CPUs (oneDNN).

Model
  --model M               resnet18|34|50|101|152 (ImageNet), resnet8|20|32|56 (32x32)
                          (default resnet50)
  --batch-size B          images per step and process (default 32)
  --image-size S          input size (default 224, 32 for the small models)
  --num-classes K         output classes (default: the dataset's, 1000 for synthetic)
  --zero-init-residual    start each residual branch's last batch-norm scale at 0
Data
  --data D                synthetic | DIR (DIR/train/<class>/*.JPEG, DIR/val/...) |
                          tfrecord:GLOB (TensorFlow ImageNet shards) (default synthetic)
  --eval-data GLOB        validation shards for tfrecord data (default: GLOB with
                          "train" replaced by "validation")
  --epochs E | --steps N  how long to train (default 100 steps)
  --data-threads T        decoding threads (default 2)
  --prefetch N            batches decoded ahead (default 2)
  --strict-data           stop on a corrupt sample instead of skipping it
Optimizer
  --optimizer O           sgd | rmsprop | lars (default sgd)
  --momentum M            (default 0.9)      --nesterov
  --weight-decay W        (default 1e-4); only weights unless --decay-norm-bias
  --lars-eta E            LARS trust coefficient (default 0.001)
  --lr X                  learning rate per 256 images; scaled by the global batch
                          (default 0.1)
  --lr-schedule S         step | cosine | poly | constant (default step)
  --warmup-epochs W       linear warmup (default 0)
  --lr-decay-epochs LIST  step schedule boundaries (default 30,60,80)
  --lr-decay-factor F     step schedule factor (default 0.1)
  --label-smoothing S     (default 0)
Distributed (every rank of an srun step, or processes with TRELLIS_* variables)
  --strategy allreduce    allreduce of gradient buckets, overlapped with the backward pass
                          (default)
  --strategy ps           parameter servers: the last --ps-servers K ranks (default 1) hold
                          key ranges of the parameters and apply the optimizer; the others
                          push gradients and pull parameters; --ps-mode sync|async
  --wireup W              auto | pmix | slurm | env (default auto: PMIx when started by a
                          PMIx server, else Slurm's variables, else TRELLIS_RANK,
                          TRELLIS_WORLD_SIZE, TRELLIS_MASTER=host:port)
  --transport T           tcp | verbs | auto | nccl (default tcp; auto: verbs when an RDMA
                          device has an active port, TRELLIS_HCA/NCCL_IB_HCA choose the
                          device; nccl: gradients over NCCL on the GPU, control over tcp)
  --tcp-streams N         connections per peer for large messages (default 2)
  --comm-timeout S        seconds without progress before a peer is lost (default 60)
  --bucket-mb M           gradient bucket size (default 25)
  --allreduce-algorithm A auto | ring | halving-doubling (default auto: halving-doubling
                          when the number of ranks is a power of two, else ring)
  --compress C            gradients on the wire: none | bf16 | fp16 (allreduce; default none)
Running
  --eval-every K          evaluate every K steps (default: at the end only)
  --display-every K       progress line every K steps (default 10)
  --warmup-batches N      steps left out of "total images/sec" (default 2)
  --log-dir DIR           metrics.jsonl and TensorBoard event files
  --checkpoint-dir DIR    checkpoints (at the end, every --checkpoint-every steps, and on
                          SIGTERM or SIGUSR1, after which the run exits with status 0)
  --checkpoint-every K    (default 0: only at the end and on a signal)
  --resume                continue from the newest valid checkpoint in --checkpoint-dir
  --seed S                initial weights, data order and augmentation (default 1)
  --deterministic         fix the thread team (runs are bit-identical for the same seed,
                          batch and thread count in any case)
  --threads T             compute threads (default: the CPUs this process may use)
Device
  --device D              auto | cpu | cuda (default auto: the first GPU in
                          CUDA_VISIBLE_DEVICES when one is usable, else the CPU)
  --precision P           fp32 | bf16 | fp16 on the GPU, with f32 master weights and
                          dynamic loss scaling for fp16 (default fp32, TF32 allowed)
  --cudnn-workspace-mb M  cuDNN convolution workspace bound (default 256)
  -h, --help | --version
)";
}

}  // namespace trellis::train
