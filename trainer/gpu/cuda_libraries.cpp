// SPDX-License-Identifier: Apache-2.0
#include "trainer/gpu/cuda_libraries.hpp"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>

#include "common/cli.hpp"
#include "common/environment.hpp"
#include "trainer/gpu/accelerator.hpp"
#include "trainer/gpu/elf_dynamic.hpp"

namespace trellis::gpu {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The libraries the device machine provides and trellis does not bundle.
bool is_cuda_library(const std::string& soname) {
    return starts_with(soname, "libcudnn") || starts_with(soname, "libcublas") || starts_with(soname, "libnccl");
}

bool is_file(const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// pip's CUDA wheels: site-packages/nvidia/{cudnn,cu13,nccl,...}/lib.
void add_wheel_folders(const std::string& prefix, std::vector<std::string>& folders) {
    glob_t found{};
    if (glob((prefix + "/lib/python3*/site-packages/nvidia/*/lib").c_str(), GLOB_ONLYDIR, nullptr, &found) == 0)
        for (std::size_t i = 0; i < found.gl_pathc; ++i) folders.emplace_back(found.gl_pathv[i]);
    globfree(&found);
}

// A colon-separated list of folders, empty entries left out.
std::vector<std::string> split_path_list(const char* list) {
    std::vector<std::string> parts;
    for (auto& part : cli::split(list ? list : "", ':'))
        if (!part.empty()) parts.push_back(std::move(part));
    return parts;
}

// The environment a python3 on PATH belongs to: a venv's bin/python3 is a link to the
// system's, so the prefix is taken from where it was found, not from where it points.
std::string python_prefix() {
    for (const auto& folder : split_path_list(std::getenv("PATH"))) {
        std::string python = folder + "/python3";
        if (access(python.c_str(), X_OK) != 0) continue;
        auto slash = folder.rfind('/');
        return slash == std::string::npos || slash == 0 ? "/" : folder.substr(0, slash);
    }
    return {};
}

std::string loaded_path(void* handle, const std::string& fallback) {
    link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) return map->l_name;
    return fallback;
}

template <typename Function>
Function symbol(void* handle, const char* name) {
    return reinterpret_cast<Function>(dlsym(handle, name));
}

// The library's own version, asked at run time: the copy loaded may not be the one built against.
std::string runtime_version(void* handle, const std::string& soname) {
    if (starts_with(soname, "libcudnn.")) {
        if (auto get = symbol<std::size_t (*)()>(handle, "cudnnGetVersion")) {
            auto v = get();  // cuDNN 9: major * 10000 + minor * 100 + patch
            return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
        }
    }
    if (starts_with(soname, "libcublas.")) {
        // cublasGetProperty(MAJOR_VERSION = 0, MINOR_VERSION = 1, PATCH_LEVEL = 2, int*)
        if (auto get = symbol<int (*)(int, int*)>(handle, "cublasGetProperty")) {
            int part[3] = {};
            for (int i = 0; i < 3; ++i)
                if (get(i, &part[i]) != 0) return {};
            return std::to_string(part[0]) + "." + std::to_string(part[1]) + "." + std::to_string(part[2]);
        }
    }
    return {};
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
    std::string s;
    for (const auto& part : parts) s += (s.empty() ? "" : separator) + part;
    return s;
}

}  // namespace

std::vector<std::string> cuda_library_folders(const std::string& module_path) {
    std::vector<std::string> folders = split_path_list(std::getenv(env::cuda_libs.name));
    if (const char* venv = std::getenv("VIRTUAL_ENV"); venv && *venv) add_wheel_folders(venv, folders);
    if (auto prefix = python_prefix(); !prefix.empty()) add_wheel_folders(prefix, folders);
    try {
        for (auto& folder : read_elf_dynamic(module_path).runpath) folders.push_back(folder);
    } catch (const Error&) {
        // An unreadable module is reported when it is loaded.
    }
    return folders;
}

void* open_library(const std::string& soname, const std::vector<std::string>& folders, std::string& path,
                   std::string& error) {
    for (const auto& folder : folders) {
        std::string candidate = folder + "/" + soname;
        if (!is_file(candidate)) continue;
        void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL);
        if (!handle) {
            error = dlerror();
            return nullptr;
        }
        path = loaded_path(handle, candidate);
        return handle;
    }
    void* handle = dlopen(soname.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
        error = soname + ": not found in " + (folders.empty() ? "no folder" : join(folders, ", ")) +
                ", nor by the loader (LD_LIBRARY_PATH, ld.so.cache)";
        return nullptr;
    }
    path = loaded_path(handle, soname);
    return handle;
}

std::vector<LoadedLibrary> preload_cuda_libraries(const std::string& module_path,
                                                  const std::vector<std::string>& folders) {
    std::vector<LoadedLibrary> loaded;
    std::vector<std::string> seen;
    // Depth first, so that cuBLAS's cublasLt is loaded (from the same search) before cuBLAS.
    std::function<void(const std::string&, const std::string&)> load = [&](const std::string& object,
                                                                           const std::string& needed_by) {
        ElfDynamic dynamic;
        try {
            dynamic = read_elf_dynamic(object);
        } catch (const Error& e) {
            throw GpuLibraryError(std::string(e.what()) + " (needed by " + needed_by + ")");
        }
        for (const auto& soname : dynamic.needed) {
            if (!is_cuda_library(soname) || std::find(seen.begin(), seen.end(), soname) != seen.end()) continue;
            seen.push_back(soname);
            // NCCL is loaded by the module when a step uses it.
            if (starts_with(soname, "libnccl")) continue;
            std::string path, error;
            // Find the file first and load what it needs, then the library itself.
            for (const auto& folder : folders)
                if (is_file(folder + "/" + soname)) {
                    load(folder + "/" + soname, soname);
                    break;
                }
            void* handle = open_library(soname, folders, path, error);
            if (!handle)
                throw GpuLibraryError(error + " (needed by " + needed_by +
                                      "); NVIDIA driver: " + nvidia_driver_state() +
                                      "; set TRELLIS_CUDA_LIBS to the folders holding it, or VIRTUAL_ENV to a Python "
                                      "environment with NVIDIA's wheels");
            loaded.push_back({soname, path, runtime_version(handle, soname)});
        }
    };
    load(module_path, module_path);
    return loaded;
}

std::string nvidia_driver_state() {
    std::ifstream version("/proc/driver/nvidia/version");
    std::string line;
    if (!version || !std::getline(version, line))
        return access("/dev/nvidiactl", F_OK) == 0 ? "present (/dev/nvidiactl; no /proc/driver/nvidia)"
                                                   : "not loaded (no /proc/driver/nvidia)";
    return "loaded (" + line.substr(0, line.find("  ")) + ")";
}

std::string check_cuda_driver() {
    // The CUDA driver API, by hand: CUresult is an int, 0 success, 100 CUDA_ERROR_NO_DEVICE.
    constexpr int success = 0, no_device = 100;
    // The loader's search first (ld.so.cache, LD_LIBRARY_PATH), then where container
    // runtimes and drivers put it; loaded by path, the CUDA runtime's own dlopen of
    // libcuda.so.1 then finds it loaded.
    std::string path, error;
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (cuda)
        path = loaded_path(cuda, "libcuda.so.1");
    else
        cuda = open_library("libcuda.so.1",
                            {"/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/x86_64-linux-gnu",
                             "/usr/lib64", "/usr/lib/wsl/lib"},
                            path, error);
    bool kernel_driver = nvidia_driver_loaded();
    if (!cuda) {
        if (kernel_driver)
            throw GpuLibraryError("libcuda.so.1: not found, though the NVIDIA driver is " + nvidia_driver_state() +
                                  " (a container without the driver's libraries?)");
        throw GpuUnavailable(
            "the NVIDIA driver is not installed (no libcuda.so.1) and not loaded (no /proc/driver/nvidia)");
    }
    auto init = symbol<int (*)(unsigned)>(cuda, "cuInit");
    auto count_devices = symbol<int (*)(int*)>(cuda, "cuDeviceGetCount");
    auto error_name = symbol<int (*)(int, const char**)>(cuda, "cuGetErrorName");
    auto driver_version = symbol<int (*)(int*)>(cuda, "cuDriverGetVersion");
    if (!init || !count_devices) throw GpuLibraryError(path + " is not a CUDA driver library (no cuInit)");
    const char* visible = std::getenv(env::cuda_visible_devices.name);
    std::string visibility = visible ? std::string(" (CUDA_VISIBLE_DEVICES=") + visible + ")" : "";
    int status = init(0);
    if (status == no_device) throw GpuUnavailable("the CUDA driver reports no device" + visibility);
    if (status != success) {
        const char* name = nullptr;
        if (error_name) error_name(status, &name);
        throw GpuLibraryError("cuInit: " + std::string(name ? name : "error " + std::to_string(status)) +
                              "; NVIDIA driver: " + nvidia_driver_state() + visibility);
    }
    int devices = 0;
    if (count_devices(&devices) != success || devices == 0)
        throw GpuUnavailable("the CUDA driver reports no device" + visibility);
    int version = 0;
    if (driver_version) driver_version(&version);
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string describe(const std::vector<LoadedLibrary>& libraries) {
    std::vector<std::string> parts;
    for (const auto& library : libraries) {
        std::string name = starts_with(library.soname, "libcudnn")      ? "cuDNN"
                           : starts_with(library.soname, "libcublasLt") ? "cuBLASLt"
                           : starts_with(library.soname, "libcublas")   ? "cuBLAS"
                                                                        : library.soname;
        parts.push_back(name + (library.version.empty() ? "" : " " + library.version) + " (" + library.path + ")");
    }
    return join(parts, ", ");
}

}  // namespace trellis::gpu
