// SPDX-License-Identifier: Apache-2.0
#include "agent/container/cdi/selection.hpp"

#include <algorithm>

#include "agent/container/cdi/hooks.hpp"
#include "common/error.hpp"

namespace trellis::agent::cdi {

namespace {

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
    return out.empty() ? "none" : out;
}

std::vector<std::string> devices_of(const SpecSet& specs, const std::string& kind) {
    std::vector<std::string> names;
    for (const auto& spec : specs.specs)
        if (spec.kind == kind)
            for (const auto& device : spec.devices)
                if (std::find(names.begin(), names.end(), device.name) == names.end()) names.push_back(device.name);
    return names;
}

std::vector<std::string> kinds_of(const SpecSet& specs) {
    std::vector<std::string> kinds;
    for (const auto& spec : specs.specs)
        if (std::find(kinds.begin(), kinds.end(), spec.kind) == kinds.end()) kinds.push_back(spec.kind);
    return kinds;
}

// A device node is bound from the host: hostPath, or path when the spec gives none. Whether
// it is there is checked when it is bound (check_host_device_node), on the node that binds it.
BindMount device_node(const DeviceNode& node, const std::string& origin) {
    BindMount bind;
    bind.host_path = node.host_path.empty() ? node.path : node.host_path;
    bind.container_path = node.path;
    bind.device = true;
    bind.nosuid = true;
    bind.major = node.major.value_or(-1);
    bind.minor = node.minor.value_or(-1);
    bind.type = node.type;
    bind.origin = origin;
    if (bind.container_path.empty() || bind.container_path[0] != '/' || bind.host_path[0] != '/')
        throw Refused(origin + ": CDI device node " + node.path + ": paths must be absolute");
    return bind;
}

BindMount mount(const Mount& m, const std::string& origin) {
    if (!m.type.empty() && m.type != "bind")
        throw Refused(origin + ": CDI mount of " + m.host_path + " on " + m.container_path + " has type " + m.type +
                      "; only bind mounts are accepted");
    if (m.container_path.empty() || m.container_path[0] != '/' || m.host_path.empty() || m.host_path[0] != '/')
        throw Refused(origin + ": CDI mount " + m.host_path + " on " + m.container_path +
                      ": both paths must be absolute");
    BindMount bind;
    bind.host_path = m.host_path;
    bind.container_path = m.container_path;
    for (const auto& option : m.options) {
        if (option == "ro")
            bind.read_only = true;
        else if (option == "rw")
            bind.read_only = false;
        else if (option == "nosuid")
            bind.nosuid = true;
        else if (option == "nodev")
            bind.nodev = true;
        else if (option == "noexec")
            bind.noexec = true;
        else if (option == "rbind")
            bind.recursive = true;
        // Propagation: the container's mounts are private already.
        else if (option == "bind" || option == "rprivate" || option == "private" || option == "rslave" ||
                 option == "slave" || option == "suid" || option == "dev" || option == "exec")
            continue;
        else
            throw Refused(origin + ": CDI mount " + m.host_path + " on " + m.container_path + ": option \"" + option +
                          "\" is not accepted (accepted: ro, rw, nosuid, nodev, noexec, bind, rbind, private, "
                          "rprivate, slave, rslave)");
    }
    return bind;
}

int depth(const std::string& path) { return static_cast<int>(std::count(path.begin(), path.end(), '/')); }

void add_edits(const ContainerEdits& from, const std::string& origin, const std::vector<std::string>& allowed_hooks,
               ResolvedEdits& to) {
    if (!from.unsupported.empty())
        throw Refused(origin + ": CDI " + joined(from.unsupported) +
                      " cannot be applied by trellis (a container made by the job's user)");
    for (const auto& entry : from.env) {
        auto name = entry.substr(0, entry.find('=') + 1);
        std::erase_if(to.env, [&](const std::string& e) { return e.starts_with(name); });
        to.env.push_back(entry);
    }
    for (const auto& node : from.device_nodes) {
        auto bind = device_node(node, origin);
        std::erase_if(to.device_nodes, [&](const BindMount& b) { return b.container_path == bind.container_path; });
        to.device_nodes.push_back(bind);
    }
    for (const auto& m : from.mounts) {
        auto bind = mount(m, origin);
        std::erase_if(to.mounts, [&](const BindMount& b) { return b.container_path == bind.container_path; });
        to.mounts.push_back(bind);
    }
    for (const auto& hook : from.hooks) interpret_hook(hook, origin, allowed_hooks, to);
    if (!from.additional_gids.empty()) {
        std::string gids;
        for (auto gid : from.additional_gids) gids += (gids.empty() ? "" : ",") + std::to_string(gid);
        to.notes.push_back(origin + ": additionalGids " + gids +
                           " not added: a task keeps the job's own groups (only they are mapped in its user "
                           "namespace)");
    }
}

}  // namespace

std::vector<std::string> step_gpu_devices(const SpecSet& specs, const std::vector<StepGpu>& gpus,
                                          const std::string& kind) {
    std::vector<std::string> out;
    if (!specs.has_kind(kind)) return out;
    for (const auto& gpu : gpus) {
        std::vector<std::string> candidates = {std::to_string(gpu.index)};
        if (!gpu.uuid.empty()) {
            candidates.push_back(gpu.uuid);
            if (!gpu.uuid.starts_with("GPU-")) candidates.push_back("GPU-" + gpu.uuid);
        }
        auto found = std::find_if(candidates.begin(), candidates.end(),
                                  [&](const std::string& name) { return specs.find(kind, name) != nullptr; });
        if (found == candidates.end())
            throw UsageError("no CDI device for the step's GPU " + std::to_string(gpu.index) +
                             (gpu.uuid.empty() ? "" : " (" + gpu.uuid + ")") + ": " + kind + " has " +
                             joined(devices_of(specs, kind)) + " in " + joined(specs.folders));
        std::string name = kind + "=" + *found;
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
    return out;
}

ResolvedEdits resolve_edits(const SpecSet& specs, const std::vector<std::string>& devices,
                            const std::vector<std::string>& allowed_hooks) {
    ResolvedEdits edits;
    std::vector<const Spec*> used;
    for (const auto& qualified : devices) {
        auto equals = qualified.find('=');
        if (equals == std::string::npos)
            throw UsageError("\"" + qualified + "\" is not a CDI device name (vendor.com/class=name)");
        std::string kind = qualified.substr(0, equals), name = qualified.substr(equals + 1);
        if (!specs.has_kind(kind))
            throw UsageError("unknown CDI kind " + kind + " in " + qualified + ": the specs in " +
                             joined(specs.folders) + " have " + joined(kinds_of(specs)));
        const Spec* spec = specs.find(kind, name);
        if (!spec)
            throw UsageError("unknown CDI device " + qualified + ": " + kind + " has " +
                             joined(devices_of(specs, kind)));
        add_edits(spec->device(name)->edits, spec->origin, allowed_hooks, edits);
        if (std::find(used.begin(), used.end(), spec) == used.end()) used.push_back(spec);
        edits.devices.push_back(qualified);
    }
    for (const Spec* spec : used) add_edits(spec->edits, spec->origin, allowed_hooks, edits);
    // Parents first, so that a mount inside another one's destination is not hidden by it.
    std::stable_sort(edits.mounts.begin(), edits.mounts.end(), [](const BindMount& a, const BindMount& b) {
        return depth(a.container_path) < depth(b.container_path);
    });
    return edits;
}

std::string no_driver_libraries_warning(const std::vector<std::string>& cdi_dirs) {
    return "the step has GPUs but no CDI spec for " + std::string(nvidia_gpu_kind) + " is installed in " +
           joined(cdi_dirs) +
           ": the container sees the GPUs' device nodes but no driver library (libcuda) was injected; "
           "the administrator can write one with nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml";
}

}  // namespace trellis::agent::cdi
