// SPDX-License-Identifier: Apache-2.0
#include "agent/container/cdi/spec_folders.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agent/container/cdi/spec_parser.hpp"
#include "agent/files.hpp"
#include "common/error.hpp"

namespace trellis::agent::cdi {

namespace {

std::string owner_rule(uid_t trusted_owner) {
    return "accepted: owned by " + std::string(trusted_owner == 0 ? "root" : "uid " + std::to_string(trusted_owner)) +
           " and writable by no one else";
}

void check_owner(const struct stat& st, const std::string& what, uid_t trusted_owner) {
    if (!owned_alone_by(st, trusted_owner))
        throw Refused("CDI " + what + " is owned by " + owner_and_mode(st) +
                      ": CDI specs bind host files into containers, so only the administrator's are read (" +
                      owner_rule(trusted_owner) + ")");
}

bool is_spec_name(const std::string& name) {
    return !name.starts_with('.') && (name.ends_with(".json") || name.ends_with(".yaml") || name.ends_with(".yml"));
}

// The folder's specs by name; the folder and each file are checked on their open descriptors,
// so that what is checked is what is read.
std::vector<Spec> read_folder(const std::string& folder, uid_t trusted_owner) {
    Fd dir(open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir) {
        if (errno == ENOENT) return {};
        throw Refused("cannot open the CDI folder " + folder + ": " + std::strerror(errno));
    }
    struct stat st;
    if (fstat(dir.get(), &st) != 0) throw Error("cannot stat the CDI folder " + folder + ": " + std::strerror(errno));
    check_owner(st, "folder " + folder, trusted_owner);
    // A symbolic link on the way is fine when it ends at a checked folder; a link named as a
    // spec file is not followed (O_NOFOLLOW below).
    std::vector<std::string> names;
    if (!for_each_entry(dir.get(), [&](const std::string& name) {
            if (is_spec_name(name)) names.push_back(name);
        }))
        throw Error("cannot list the CDI folder " + folder + ": " + std::strerror(errno));
    std::sort(names.begin(), names.end());
    std::vector<Spec> specs;
    for (const auto& name : names) {
        std::string path = folder + "/" + name;
        Fd file(openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
        if (!file)
            throw Refused("cannot open the CDI spec " + path + ": " + std::strerror(errno) +
                          (errno == ELOOP ? " (a symbolic link; specs are read only as plain files)" : ""));
        if (fstat(file.get(), &st) != 0) throw Error("cannot stat the CDI spec " + path + ": " + std::strerror(errno));
        if (!S_ISREG(st.st_mode)) throw Refused("the CDI spec " + path + " is not a plain file");
        check_owner(st, "spec " + path, trusted_owner);
        if (st.st_size > 16 * 1024 * 1024)
            throw Refused("the CDI spec " + path + " is " + std::to_string(st.st_size) +
                          " bytes; at most 16 MiB is read");
        std::string text(static_cast<std::size_t>(st.st_size), '\0');
        std::size_t got = 0;
        while (got < text.size()) {
            ssize_t n = read(file.get(), text.data() + got, text.size() - got);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) throw Error("cannot read the CDI spec " + path + ": " + std::strerror(n < 0 ? errno : EIO));
            got += static_cast<std::size_t>(n);
        }
        specs.push_back(parse_spec(text, path));
    }
    return specs;
}

}  // namespace

SpecSet load_specs(const std::vector<std::string>& folders, uid_t trusted_owner) {
    SpecSet set;
    for (const auto& folder : folders) {
        if (folder.empty() || folder[0] != '/')
            throw UsageError("cdi_dirs: \"" + folder + "\" is not an absolute path");
        auto specs = read_folder(folder, trusted_owner);
        if (specs.empty() && access(folder.c_str(), F_OK) != 0) continue;
        set.folders.push_back(folder);
        for (auto& spec : specs) {
            for (const auto& device : spec.devices)
                if (const Spec* earlier = set.find(spec.kind, device.name)) {
                    // Two files of one folder have the same priority: neither can win.
                    if (earlier->origin.starts_with(folder + "/"))
                        throw UsageError("CDI device " + spec.kind + "=" + device.name + " is defined in both " +
                                         earlier->origin + " and " + spec.origin +
                                         " (one folder; a later folder of cdi_dirs may replace a device)");
                    set.notes.push_back(spec.kind + "=" + device.name + ": " + spec.origin + " replaces " +
                                        earlier->origin);
                }
            set.specs.push_back(std::move(spec));
        }
    }
    return set;
}

const Spec* SpecSet::find(const std::string& kind, const std::string& name) const {
    for (auto spec = specs.rbegin(); spec != specs.rend(); ++spec)
        if (spec->kind == kind && spec->device(name)) return &*spec;
    return nullptr;
}

bool SpecSet::has_kind(const std::string& kind) const {
    return std::any_of(specs.begin(), specs.end(), [&](const Spec& s) { return s.kind == kind; });
}

}  // namespace trellis::agent::cdi
