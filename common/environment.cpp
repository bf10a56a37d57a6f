// SPDX-License-Identifier: Apache-2.0
#include "common/environment.hpp"

namespace trellis::env {

std::span<const Variable* const> all() {
    static const Variable* const table[] = {
        &bind, &hca, &gpus, &memory, &wireup, &verbose, &image, &mounts, &writable, &keep_env, &entrypoint,
        &slurm_cpu_bind, &slurm_gpu_bind, &slurm_gpu_sharing, &image_pinned,
        &gpu, &distance, &numa, &cpus, &binding_set, &rank, &local_rank, &world_size, &local_size, &nnodes, &node_rank,
        &master, &rendezvous_port, &wireup_set, &ib_gid_index, &cuda_module, &cuda_libs, &cuda_profile, &cuda_speedups,
        &test_convolution_probe, &cuda_visible_devices, &cuda_device_order, &rocr_visible_devices, &nccl_ib_hca,
        &nccl_socket_ifname, &ucx_net_devices,
        &ompi_openib_if_include, &omp_num_threads, &master_addr, &master_port, &torch_rank, &torch_world_size,
        &torch_local_rank, &torch_local_world_size, &torch_group_rank, &torch_node_rank, &torch_group_world_size, &tf_config};
    return table;
}

}  // namespace trellis::env
