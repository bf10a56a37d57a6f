// SPDX-License-Identifier: Apache-2.0
#include "agent/container/cdi/hooks.hpp"

#include <algorithm>
#include <optional>

#include "common/error.hpp"

namespace trellis::agent::cdi {

namespace {

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string describe(const Hook& hook) {
    std::string text = hook.path;
    for (std::size_t i = 1; i < hook.args.size(); ++i) text += " " + hook.args[i];
    return text;
}

// "--name VALUE" and "--name=VALUE" options of one subcommand; anything else is refused, so
// that a hook this code does not understand is never half-applied.
struct Options {
    std::vector<std::pair<std::string, std::string>> values;
};

Options read_options(const Hook& hook, const std::string& origin, std::size_t first,
                     const std::vector<std::string>& names) {
    Options out;
    for (std::size_t i = first; i < hook.args.size(); ++i) {
        const std::string given = hook.args[i];
        std::string arg = given;
        std::optional<std::string> value;
        auto equals = arg.find('=');
        if (arg.starts_with("--") && equals != std::string::npos) {
            value = arg.substr(equals + 1);
            arg = arg.substr(0, equals);
        } else if (i + 1 < hook.args.size()) {
            value = hook.args[++i];
        }
        if (std::find(names.begin(), names.end(), arg) == names.end() || !value) {
            std::string accepted;
            for (const auto& name : names) accepted += (accepted.empty() ? "" : ", ") + name + " VALUE";
            throw Refused(origin + ": hook \"" + describe(hook) + "\": cannot read \"" + given +
                          "\" (accepted: " + accepted + ")");
        }
        out.values.emplace_back(arg, *value);
    }
    return out;
}

bool is_absolute_clean(const std::string& path) {
    if (path.empty() || path[0] != '/') return false;
    return path.find("/../") == std::string::npos && !path.ends_with("/..");
}

}  // namespace

void interpret_hook(const Hook& hook, const std::string& origin, const std::vector<std::string>& allowed_hooks,
                    ResolvedEdits& edits) {
    // nvidia-cdi-hook SUBCOMMAND ... or nvidia-ctk hook SUBCOMMAND ...
    std::string program = base_name(hook.path);
    std::size_t at = 1;
    if (program == "nvidia-ctk" && hook.args.size() > 1 && hook.args[1] == "hook") at = 2;
    bool nvidia = program == "nvidia-cdi-hook" || (program == "nvidia-ctk" && at == 2);
    std::string subcommand = nvidia && hook.args.size() > at ? hook.args[at] : "";
    ++at;

    if (subcommand == "create-symlinks") {
        for (const auto& [name, value] : read_options(hook, origin, at, {"--link"}).values) {
            auto split = value.find("::");
            Symlink link{value.substr(0, split), split == std::string::npos ? "" : value.substr(split + 2)};
            if (link.target.empty() || !is_absolute_clean(link.link))
                throw Refused(origin + ": hook create-symlinks: \"" + value +
                              "\" is not TARGET::LINK with an absolute LINK");
            edits.symlinks.push_back(link);
        }
        return;
    }
    if (subcommand == "update-ldcache") {
        // --ldconfig-path names the host's ldconfig; trellis always uses its own choice
        // (/sbin/ldconfig, static), since it runs inside the container's root.
        for (const auto& [name, value] : read_options(hook, origin, at, {"--folder", "--ldconfig-path"}).values) {
            if (name == "--ldconfig-path") {
                edits.notes.push_back(origin + ": update-ldcache --ldconfig-path " + value +
                                      " not used: the host's /sbin/ldconfig builds the cache");
                continue;
            }
            if (!is_absolute_clean(value))
                throw Refused(origin + ": hook update-ldcache: folder \"" + value + "\" is not an absolute path");
            if (std::find(edits.ld_folders.begin(), edits.ld_folders.end(), value) == edits.ld_folders.end())
                edits.ld_folders.push_back(value);
        }
        return;
    }
    if (subcommand == "enable-cuda-compat") {
        edits.notes.push_back(origin +
                              ": hook enable-cuda-compat skipped: an image's CUDA forward-compatibility "
                              "libraries (/usr/local/cuda/compat) are not put before the driver's");
        return;
    }
    if (subcommand == "disable-device-node-modification") {
        edits.notes.push_back(origin +
                              ": hook disable-device-node-modification skipped: the driver cannot make "
                              "device nodes inside the container's user namespace anyway");
        return;
    }
    if (subcommand == "update-application-profile") {
        edits.notes.push_back(origin +
                              ": hook update-application-profile skipped: no application profile is "
                              "written into the container");
        return;
    }
    if (std::find(allowed_hooks.begin(), allowed_hooks.end(), hook.path) != allowed_hooks.end()) {
        edits.notes.push_back(origin + ": hook \"" + describe(hook) +
                              "\" not run: it is in allowed_cdi_hooks, but this version of trellis runs no hook "
                              "program (it implements create-symlinks and update-ldcache itself)");
        return;
    }
    throw Refused(origin + ": CDI hook \"" + describe(hook) + "\" (" + hook.hook_name +
                  ") is unknown to trellis; it implements nvidia-cdi-hook create-symlinks and update-ldcache, skips "
                  "enable-cuda-compat, disable-device-node-modification and update-application-profile, and "
                  "refuses other hooks unless their path is in [container] allowed_cdi_hooks");
}

}  // namespace trellis::agent::cdi
