// SPDX-License-Identifier: Apache-2.0
// The CUDA libraries the module needs (cuDNN, cuBLAS; NCCL only when a step uses it), found
// before the module is loaded, in this order: $TRELLIS_CUDA_LIBS, the Python environment in
// $VIRTUAL_ENV, the prefix of the python3 on PATH (pip's wheels keep them in
// lib/python3*/site-packages/nvidia/*/lib), then the module's RUNPATH; last, the loader's own
// search (LD_LIBRARY_PATH, ld.so.cache). Each is loaded by its absolute path, so that the
// module's DT_NEEDED entries resolve to the copies chosen here and the Device line can say
// which ones ran.
#pragma once

#include <string>
#include <vector>

#include "common/error.hpp"

namespace trellis::gpu {

// A library the GPU needs could not be found or loaded, or the driver is broken: an error
// (exit 1), never a reason to skip.
struct GpuLibraryError : Error {
    using Error::Error;
    const char* topic() const override { return "cuda"; }
};

struct LoadedLibrary {
    std::string soname;
    std::string path;     // absolute, as the loader mapped it
    std::string version;  // the library's own answer at run time, where it has one
};

// The folders searched, in order, for a module at `module_path`.
std::vector<std::string> cuda_library_folders(const std::string& module_path);

// Loads every CUDA library `module_path` needs (and those they need from the same family)
// with RTLD_GLOBAL. Throws GpuLibraryError naming the library, the folders searched and the
// driver's state.
std::vector<LoadedLibrary> preload_cuda_libraries(const std::string& module_path,
                                                  const std::vector<std::string>& folders);

// Loads one library by soname from `folders`, else the loader's search; null with `error`
// set when neither has it.
void* open_library(const std::string& soname, const std::vector<std::string>& folders, std::string& path,
                   std::string& error);

// "loaded (NVRM version: ...)" or "not loaded (no /proc/driver/nvidia)".
std::string nvidia_driver_state();

// Asks libcuda whether this process has a device. Throws GpuUnavailable ("no GPU") when the
// driver is absent or reports no device, GpuLibraryError when it is present but broken.
// Returns the driver's CUDA version, e.g. "13.0".
std::string check_cuda_driver();

// "cuDNN 9.19.0 (/path/libcudnn.so.9), cuBLAS 13.1.0 (/path/libcublas.so.13)"
std::string describe(const std::vector<LoadedLibrary>& libraries);

}  // namespace trellis::gpu
