// SPDX-License-Identifier: Apache-2.0
// What a shared object asks of the dynamic loader: its DT_NEEDED sonames and its
// DT_RUNPATH (or DT_RPATH). Read from the file, not by loading it, so that trellis-train can
// find the CUDA libraries a module needs before dlopen fails on them.
#pragma once

#include <string>
#include <vector>

namespace trellis::gpu {

struct ElfDynamic {
    std::vector<std::string> needed;   // sonames, in the file's order
    std::vector<std::string> runpath;  // folders, $ORIGIN replaced by the file's folder
};

// Throws trellis::Error naming the file when it is not a 64-bit little-endian ELF file with
// a dynamic section.
ElfDynamic read_elf_dynamic(const std::string& path);

}  // namespace trellis::gpu
