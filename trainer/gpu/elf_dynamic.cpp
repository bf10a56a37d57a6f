// SPDX-License-Identifier: Apache-2.0
#include "trainer/gpu/elf_dynamic.hpp"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <optional>

#include "common/cli.hpp"
#include "common/error.hpp"

namespace trellis::gpu {

namespace {

struct File {
    int fd;
    explicit File(const std::string& path) : fd(open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
    ~File() {
        if (fd >= 0) close(fd);
    }
};

template <typename T>
bool read_at(int fd, std::uint64_t offset, T& out) {
    return pread(fd, &out, sizeof out, off_t(offset)) == ssize_t(sizeof out);
}

// Dynamic entries hold virtual addresses; a PT_LOAD segment says where they are in the file.
std::optional<std::uint64_t> file_offset(const std::vector<Elf64_Phdr>& loads, std::uint64_t address) {
    for (const auto& segment : loads)
        if (address >= segment.p_vaddr && address < segment.p_vaddr + segment.p_filesz)
            return address - segment.p_vaddr + segment.p_offset;
    return std::nullopt;
}

std::string string_at(int fd, std::uint64_t offset) {
    std::string s;
    char chunk[256];
    for (;;) {
        ssize_t got = pread(fd, chunk, sizeof chunk, off_t(offset + s.size()));
        if (got <= 0) return s;
        const char* end = static_cast<const char*>(std::memchr(chunk, '\0', std::size_t(got)));
        if (end) return s.append(chunk, std::size_t(end - chunk));
        s.append(chunk, std::size_t(got));
    }
}

std::vector<std::string> split_folders(const std::string& list, const std::string& origin) {
    std::vector<std::string> folders;
    for (auto folder : cli::split(list, ':')) {
        for (const char* token : {"${ORIGIN}", "$ORIGIN"})
            for (auto at = folder.find(token); at != std::string::npos; at = folder.find(token))
                folder.replace(at, std::strlen(token), origin);
        if (!folder.empty()) folders.push_back(folder);
    }
    return folders;
}

}  // namespace

ElfDynamic read_elf_dynamic(const std::string& path) {
    File file(path);
    if (file.fd < 0) throw Error(path + ": " + std::strerror(errno));
    auto bad = [&](const std::string& why) {
        return Error(path + ": not a shared object this program can read (" + why + ")");
    };
    Elf64_Ehdr header;
    if (!read_at(file.fd, 0, header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) throw bad("no ELF header");
    if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB)
        throw bad("not 64-bit little-endian");
    std::vector<Elf64_Phdr> loads;
    std::optional<Elf64_Phdr> dynamic;
    for (unsigned i = 0; i < header.e_phnum; ++i) {
        Elf64_Phdr segment;
        if (!read_at(file.fd, header.e_phoff + std::uint64_t(i) * header.e_phentsize, segment)) throw bad("short file");
        if (segment.p_type == PT_LOAD) loads.push_back(segment);
        if (segment.p_type == PT_DYNAMIC) dynamic = segment;
    }
    if (!dynamic) throw bad("no dynamic section");

    std::vector<std::uint64_t> needed;
    std::optional<std::uint64_t> strtab, runpath, rpath;
    for (std::uint64_t at = dynamic->p_offset; at + sizeof(Elf64_Dyn) <= dynamic->p_offset + dynamic->p_filesz;
         at += sizeof(Elf64_Dyn)) {
        Elf64_Dyn entry;
        if (!read_at(file.fd, at, entry) || entry.d_tag == DT_NULL) break;
        if (entry.d_tag == DT_NEEDED) needed.push_back(entry.d_un.d_val);
        if (entry.d_tag == DT_STRTAB) strtab = file_offset(loads, entry.d_un.d_ptr);
        if (entry.d_tag == DT_RUNPATH) runpath = entry.d_un.d_val;
        if (entry.d_tag == DT_RPATH) rpath = entry.d_un.d_val;
    }
    if (!strtab) throw bad("no string table");
    ElfDynamic result;
    for (auto name : needed) result.needed.push_back(string_at(file.fd, *strtab + name));
    // The loader ignores DT_RPATH when DT_RUNPATH is present.
    if (auto folders = runpath ? runpath : rpath) {
        auto slash = path.rfind('/');
        std::string origin = slash == std::string::npos ? "." : path.substr(0, slash);
        result.runpath = split_folders(string_at(file.fd, *strtab + *folders), origin);
    }
    return result;
}

}  // namespace trellis::gpu
