// SPDX-License-Identifier: Apache-2.0
// Every environment variable trellis reads or writes, declared once with its default and its
// meaning (as NCCL declares its parameters): the producers and the consumers name them
// through this table, and man/trellis.7's ENVIRONMENT section lists exactly these (a test
// holds the two together).
#pragma once

#include <span>

namespace trellis::env {

struct Variable {
    const char* name;
    const char* unset;    // what holds when it is not set
    const char* meaning;  // one line, as the man page says it
};

// The plugin's options, as srun and sbatch also take them from the environment.
inline constexpr Variable bind{"TRELLIS_BIND", "the configuration's policy", "--trellis-bind"};
inline constexpr Variable hca{"TRELLIS_HCA", "auto",
                              "--trellis-hca; in a task, the HCA ports chosen for it (NAME:PORT,...)"};
inline constexpr Variable gpus{"TRELLIS_GPUS", "own", "--trellis-gpus"};
inline constexpr Variable memory{"TRELLIS_MEMORY", "the configuration's policy", "--trellis-memory"};
inline constexpr Variable wireup{"TRELLIS_WIREUP", "torch, or none with [wireup] frameworks = false",
                                 "--trellis-wireup"};
inline constexpr Variable verbose{"TRELLIS_VERBOSE", "off", "--trellis-verbose"};
inline constexpr Variable image{"TRELLIS_IMAGE", "no container", "--trellis-image"};
inline constexpr Variable mounts{"TRELLIS_MOUNTS", "none", "--trellis-mounts"};
inline constexpr Variable writable{"TRELLIS_WRITABLE", "off: the image's root is read-only", "--trellis-writable"};
inline constexpr Variable keep_env{"TRELLIS_ENV", "none: the image's Env wins", "--trellis-env"};
inline constexpr Variable entrypoint{"TRELLIS_ENTRYPOINT", "off: the image's Entrypoint is ignored",
                                     "--trellis-entrypoint"};
// Set by the plugin in srun, read by it in slurmstepd.
inline constexpr Variable slurm_cpu_bind{"TRELLIS_SLURM_CPU_BIND", "the user chose no --cpu-bind",
                                         "the user's own --cpu-bind, which the binding then leaves alone"};
inline constexpr Variable slurm_gpu_bind{"TRELLIS_SLURM_GPU_BIND", "Slurm binds no GPU per task",
                                         "Slurm's GPU binding as srun asks for it, in --gpu-bind's terms "
                                         "(--gpu-bind, --tres-bind, or per_task:N for a GPU count per task)"};
inline constexpr Variable slurm_gpu_sharing{"TRELLIS_SLURM_GPU_SHARING", "each task opens only its own GPUs",
                                            "srun --gres-flags=allow-task-sharing: each task may open all of "
                                            "the step's GPUs"};
inline constexpr Variable image_pinned{"TRELLIS_IMAGE_PINNED", "the image is not a registry image with a tag",
                                       "the registry image pinned to its digest by srun, which every node runs"};
inline constexpr Variable slurm_secret{"SLURM_TRELLIS_SECRET", "srun made no step secret",
                                       "the step's secret on its way from srun to slurmstepd, which gives it to the "
                                       "tasks as TRELLIS_SECRET (a SLURM_ name passes --export=NONE)"};
// A task's binding, as the plugin and trellis-agent launch set it.
inline constexpr Variable gpu{"TRELLIS_GPU", "no GPU", "the task's GPUs, as the node's indices in PCI order"};
inline constexpr Variable distance{"TRELLIS_DISTANCE", "no HCA",
                                   "the distance class between the task's GPUs (without GPU: its CPUs) and its "
                                   "HCAs (PIX ... SYS)"};
inline constexpr Variable numa{"TRELLIS_NUMA", "no binding", "the task's NUMA nodes"};
inline constexpr Variable cpus{"TRELLIS_CPUS", "no binding", "the task's CPUs"};
inline constexpr Variable binding_set{"TRELLIS_BINDING_SET", "none",
                                      "the binding variables trellis set for this task (a step started in it "
                                      "takes none of them as the user's, and replaces them)"};
// Ranks: written by trellis-agent launch (and the plugin's local size), read by the env wireup.
inline constexpr Variable rank{"TRELLIS_RANK", "a single process", "this process's rank in the job"};
inline constexpr Variable local_rank{"TRELLIS_LOCAL_RANK", "0", "its rank on this node"};
inline constexpr Variable world_size{"TRELLIS_WORLD_SIZE", "a single process", "the job's number of ranks"};
inline constexpr Variable local_size{"TRELLIS_LOCAL_SIZE", "1", "the number of ranks on this node"};
inline constexpr Variable nnodes{"TRELLIS_NNODES", "Slurm's, or 1", "the job's number of nodes (trellis-agent launch)"};
inline constexpr Variable node_rank{"TRELLIS_NODE_RANK", "Slurm's, or 0", "this node's index (trellis-agent launch)"};
inline constexpr Variable master{"TRELLIS_MASTER", "Slurm's first node, or this node",
                                 "HOST:PORT where the ranks meet (rank 0's)"};
inline constexpr Variable rendezvous_port{"TRELLIS_RENDEZVOUS_PORT", "derived from the job and step",
                                          "the port of the Slurm wireup's rendezvous"};
inline constexpr Variable secret{"TRELLIS_SECRET", "a single rank only: more are refused",
                                 "the step's secret (64 hex digits, or the path of a file of the user's that "
                                 "holds them) that every rank proves to the others; the plugin and trellis-agent "
                                 "launch make one per step"};
inline constexpr Variable wireup_set{"TRELLIS_WIREUP_SET", "none",
                                     "the framework variables trellis set for this task (the others are the user's)"};
// The trainer's own knobs.
inline constexpr Variable ib_gid_index{"TRELLIS_IB_GID_INDEX", "the first RoCE v2 GID with an IPv4 address",
                                       "the verbs transport's GID index on RoCE"};
inline constexpr Variable cuda_module{"TRELLIS_CUDA_MODULE", "the installed trellis-cuda.so",
                                      "the CUDA backend module trellis-train loads"};
inline constexpr Variable cuda_libs{"TRELLIS_CUDA_LIBS", "$VIRTUAL_ENV's, python3's, then the module's RUNPATH",
                                    "folders searched first for cuDNN, cuBLAS and NCCL (colon-separated)"};
inline constexpr Variable cuda_profile{"TRELLIS_CUDA_PROFILE", "unset: no profile",
                                       "1: GPU time per step by kind of work, printed at the end (costs host time)"};
inline constexpr Variable cuda_speedups{"TRELLIS_CUDA_SPEEDUPS", "none",
                                        "the GPU speed items to use before they are measured: all, or a list"};
inline constexpr Variable test_convolution_probe{"TRELLIS_TEST_CONVOLUTION_PROBE", "unset: the probe asks oneDNN",
                                                 "test hook: sigfpe or sigsegv, the signal the CPU backend's "
                                                 "convolution probe dies of before it asks oneDNN"};
inline constexpr Variable test_shm_delay{"TRELLIS_TEST_SHM_DELAY_MS", "unset: no delay",
                                         "test hook: milliseconds every rank but rank 0 waits before making its "
                                         "shared-memory segment, so that a test's watcher always sees rank 0's "
                                         "first"};

// Written for the user's frameworks and libraries.
inline constexpr Variable cuda_visible_devices{"CUDA_VISIBLE_DEVICES", "Slurm's", "the task's NVIDIA GPUs"};
inline constexpr Variable cuda_device_order{"CUDA_DEVICE_ORDER", "CUDA's FASTEST_FIRST",
                                            "PCI_BUS_ID, so that CUDA numbers GPUs as trellis does"};
inline constexpr Variable rocr_visible_devices{"ROCR_VISIBLE_DEVICES", "all", "the task's AMD GPUs"};
inline constexpr Variable nccl_ib_hca{"NCCL_IB_HCA", "NCCL's choice", "the node's HCA ports, one set for every rank"};
inline constexpr Variable nccl_socket_ifname{"NCCL_SOCKET_IFNAME", "NCCL's choice", "the IP interfaces of those HCAs"};
inline constexpr Variable ucx_net_devices{"UCX_NET_DEVICES", "UCX's choice", "the task's HCA ports"};
inline constexpr Variable ompi_openib_if_include{"OMPI_MCA_btl_openib_if_include", "Open MPI's choice",
                                                 "the task's HCA ports, for Open MPI's openib BTL"};
inline constexpr Variable omp_num_threads{"OMP_NUM_THREADS", "the runtime's choice", "the task's number of CPUs"};
inline constexpr Variable master_addr{"MASTER_ADDR", "unset", "PyTorch env://: rank 0's address"};
inline constexpr Variable master_port{"MASTER_PORT", "unset", "PyTorch env://: rank 0's port"};
inline constexpr Variable torch_rank{"RANK", "unset", "PyTorch: the rank"};
inline constexpr Variable torch_world_size{"WORLD_SIZE", "unset", "PyTorch: the number of ranks"};
inline constexpr Variable torch_local_rank{"LOCAL_RANK", "unset", "PyTorch: the rank on this node"};
inline constexpr Variable torch_local_world_size{"LOCAL_WORLD_SIZE", "unset", "PyTorch: the ranks on this node"};
inline constexpr Variable torch_group_rank{"GROUP_RANK", "unset", "PyTorch: this node's index"};
inline constexpr Variable torch_node_rank{"NODE_RANK", "unset", "PyTorch Lightning: this node's index"};
inline constexpr Variable torch_group_world_size{"GROUP_WORLD_SIZE", "unset", "PyTorch: the number of nodes"};
inline constexpr Variable tf_config{"TF_CONFIG", "unset", "TensorFlow: the cluster and this task's role"};

// All of the above, in this order.
std::span<const Variable* const> all();

}  // namespace trellis::env
