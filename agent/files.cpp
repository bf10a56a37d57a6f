// SPDX-License-Identifier: Apache-2.0
#include "agent/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace trellis::agent {

Fd::~Fd() {
    if (fd_ >= 0) ::close(fd_);
}

int above_helper_stdio(int fd) {
    if (fd < 0 || fd >= 4) return fd;
    int above = ::fcntl(fd, F_DUPFD, 4);
    ::close(fd);
    return above;
}

std::string mode_text(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", unsigned(mode & 07777));
    return text;
}

bool owned_alone_by(const struct stat& info, uid_t owner) {
    return info.st_uid == owner && !(info.st_mode & (S_IWGRP | S_IWOTH));
}

std::string owner_and_mode(const struct stat& info) {
    return "uid " + std::to_string(info.st_uid) + " with mode " + mode_text(info.st_mode);
}

bool for_each_entry(int dir, const std::function<void(const std::string& name)>& entry) {
    // Its own open file description: readdir's position must not be shared with `dir`.
    int copy = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (copy < 0) return false;
    DIR* list = ::fdopendir(copy);
    if (!list) {
        ::close(copy);
        return false;
    }
    while (dirent* found = ::readdir(list)) {
        std::string name = found->d_name;
        if (name != "." && name != "..") entry(name);
    }
    ::closedir(list);
    return true;
}

}  // namespace trellis::agent
