// RootEditor over a container root folder mounted in the caller's mount namespace (a tmpfs,
// or an overlay whose upper layer is writable), as the process that makes the container sees
// it before pivoting into it. Paths in the container are resolved inside the root
// (openat2 RESOLVE_IN_ROOT), so that an image's symbolic link (/usr/lib64 -> lib, or an
// absolute one) leads where it would inside the container and never out of it.
#pragma once

#include <string>

#include "agent/container/cdi/apply.hpp"

namespace trellis::agent::cdi {

class MountedRoot : public RootEditor {
public:
    explicit MountedRoot(std::string root);
    ~MountedRoot() override;
    MountedRoot(const MountedRoot&) = delete;
    MountedRoot& operator=(const MountedRoot&) = delete;

    void bind(const BindMount& mount) override;
    void symlink(const Symlink& link) override;
    void write_file(const std::string& container_path, const std::string& content) override;
    std::string root_path() const override { return root_; }

private:
    // The folder that holds `container_path`, made as needed, as a descriptor; `name` gets the last component.
    int open_parent(const std::string& container_path, std::string& name, bool make);
    std::string root_;
    int root_fd_ = -1;
};

}  // namespace trellis::agent::cdi
