// SPDX-License-Identifier: Apache-2.0
#include "trainer/cuda/nccl_library.hpp"

#include <dlfcn.h>

#include <mutex>

#include "trainer/cuda/check.hpp"
#include "trainer/gpu/cuda_libraries.hpp"

namespace trellis::cuda {

namespace {

NcclLibrary loaded_nccl;
bool is_loaded = false;

template <typename Function>
void resolve(void* handle, const std::string& path, const char* name, Function& function) {
    function = reinterpret_cast<Function>(dlsym(handle, name));
    if (!function)
        throw CudaError("NCCL: " + path + " has no " + name + " (NCCL " + std::to_string(NCCL_MAJOR) + "." +
                        std::to_string(NCCL_MINOR) + " or later is needed)");
}

}  // namespace

const NcclLibrary& nccl(const std::vector<std::string>& folders) {
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    if (is_loaded) return loaded_nccl;
    std::string soname = "libnccl.so." + std::to_string(NCCL_MAJOR), path, error;
    void* handle = gpu::open_library(soname, folders, path, error);
    if (!handle)
        throw CudaError("NCCL: " + error + "; set TRELLIS_CUDA_LIBS to the folder holding it, or use a host transport");
    NcclLibrary& n = loaded_nccl;
    resolve(handle, path, "ncclGetVersion", n.get_version);
    resolve(handle, path, "ncclGetUniqueId", n.get_unique_id);
    resolve(handle, path, "ncclCommInitRank", n.comm_init_rank);
    resolve(handle, path, "ncclAllReduce", n.all_reduce);
    resolve(handle, path, "ncclGroupStart", n.group_start);
    resolve(handle, path, "ncclGroupEnd", n.group_end);
    resolve(handle, path, "ncclCommFinalize", n.comm_finalize);
    resolve(handle, path, "ncclCommDestroy", n.comm_destroy);
    resolve(handle, path, "ncclCommAbort", n.comm_abort);
    resolve(handle, path, "ncclCommGetAsyncError", n.comm_get_async_error);
    resolve(handle, path, "ncclGetErrorString", n.get_error_string);
    int version = 0;
    n.get_version(&version);  // 2.28.9 is 22809 since NCCL 2.9
    n.version = std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
                std::to_string(version % 100);
    n.path = path;
    is_loaded = true;
    return n;
}

const NcclLibrary* nccl_if_loaded() { return is_loaded ? &loaded_nccl : nullptr; }

void release_nccl_comm(ncclComm_t comm) {
    const NcclLibrary* n = nccl_if_loaded();
    if (!comm || !n) return;
    if (n->comm_finalize(comm) == ncclSuccess)
        n->comm_destroy(comm);
    else
        n->comm_abort(comm);
}

}  // namespace trellis::cuda
