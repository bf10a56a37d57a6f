// SPDX-License-Identifier: Apache-2.0
// NCCL, loaded with dlopen the first time a step uses it: a one-GPU run needs no NCCL, and
// the module does not link it, so that a machine without it still trains. Found like cuDNN
// and cuBLAS (trainer/gpu/cuda_libraries.hpp), from the folders open_cuda searched.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>
#include <vector>

namespace trellis::cuda {

struct NcclLibrary {
    ncclResult_t (*get_version)(int*);
    ncclResult_t (*get_unique_id)(ncclUniqueId*);
    ncclResult_t (*comm_init_rank)(ncclComm_t*, int, ncclUniqueId, int);
    ncclResult_t (*all_reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*group_start)();
    ncclResult_t (*group_end)();
    ncclResult_t (*comm_finalize)(ncclComm_t);
    ncclResult_t (*comm_destroy)(ncclComm_t);
    ncclResult_t (*comm_abort)(ncclComm_t);
    ncclResult_t (*comm_get_async_error)(ncclComm_t, ncclResult_t*);
    const char* (*get_error_string)(ncclResult_t);
    std::string path;
    std::string version;  // ncclGetVersion's, e.g. "2.28.9"
};

// Loads it on the first call; throws CudaError naming the library and the folders searched.
const NcclLibrary& nccl(const std::vector<std::string>& folders);
// Null until a step loaded it.
const NcclLibrary* nccl_if_loaded();

// NcclComm's release: finalize (so that pending work completes and NCCL's proxy threads
// stop), then destroy; abort when finalizing fails, as after a peer's death.
void release_nccl_comm(ncclComm_t comm);

}  // namespace trellis::cuda
