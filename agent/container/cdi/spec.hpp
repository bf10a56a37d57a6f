// SPDX-License-Identifier: Apache-2.0
// A CDI specification (Container Device Interface, cncf-tags/container-device-interface,
// SPEC.md up to 1.1.0) as trellis reads it: what a vendor's devices need in a container.
// The field names in comments are the specification's own; an absent optional value is
// std::nullopt or empty.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trellis::agent::cdi {

// deviceNodes[]: a device file the container must see at `path`.
struct DeviceNode {
    std::string path;       // path: where the container sees it
    std::string host_path;  // hostPath (>= 0.5.0): the node on the host, when not `path`
    std::string type;       // type: "c", "b", "u" or "p"
    std::optional<std::int64_t> major, minor;
    std::optional<std::uint32_t> file_mode;  // fileMode
    std::string permissions;                 // cgroup access, "rwm"
    std::optional<std::uint32_t> uid, gid;
};

// mounts[]
struct Mount {
    std::string host_path;       // hostPath
    std::string container_path;  // containerPath
    std::string type;            // type (>= 0.4.0), "bind" when absent
    std::vector<std::string> options;
};

// hooks[]: an OCI hook the runtime would run at `hook_name` time.
struct Hook {
    std::string hook_name;  // hookName: createContainer, createRuntime, startContainer, poststart, poststop, prestart
    std::string path;
    std::vector<std::string> args;  // args[0] is the program's own name, as in OCI hooks
    std::vector<std::string> env;
    std::optional<int> timeout;
};

// containerEdits: of a device (applied when it is requested) or of the whole spec (applied
// when any of its devices is).
struct ContainerEdits {
    std::vector<std::string> env;  // "NAME=VALUE"
    std::vector<DeviceNode> device_nodes;
    std::vector<Mount> mounts;
    std::vector<Hook> hooks;
    std::vector<std::uint32_t> additional_gids;  // additionalGids (>= 0.7.0)
    // Fields of the specification that trellis reads but cannot apply in a user namespace
    // (intelRdt >= 0.7.0, netDevices >= 1.1.0): a device that needs them is refused.
    std::vector<std::string> unsupported;
    bool empty() const {
        return env.empty() && device_nodes.empty() && mounts.empty() && hooks.empty() && additional_gids.empty() &&
               unsupported.empty();
    }
};

struct Device {
    std::string name;  // "0", "GPU-<uuid>", "all": requested as KIND=NAME
    bool has_annotations = false;
    ContainerEdits edits;
};

struct Spec {
    std::string origin;       // the file it was read from, for messages
    std::string cdi_version;  // cdiVersion, e.g. "0.5.0"
    std::string kind;         // "vendor.com/class", e.g. "nvidia.com/gpu"
    bool has_annotations = false;
    std::vector<Device> devices;
    ContainerEdits edits;  // the spec's common containerEdits

    const Device* device(const std::string& name) const;
};

// A parsed "MAJOR.MINOR.PATCH" (an optional leading "v" accepted, as the reference library does).
struct SpecVersion {
    int major = 0, minor = 0, patch = 0;
    std::string text() const;
    auto operator<=>(const SpecVersion&) const = default;
};

}  // namespace trellis::agent::cdi
