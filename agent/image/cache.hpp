// SPDX-License-Identifier: Apache-2.0
// The node's image cache, as one user sees it: <image_cache>/<uid>, a folder only that user
// may enter, holding one squashfs per manifest digest and its settings beside it:
//   <hex>.sqsh   the image's root, packed (published by rename, so never half-written)
//   <hex>.json   the image's settings, as `skopeo inspect --config` prints them
//   <hex>.lock   flock'd while the image is imported (exclusively) or used (shared)
//   <hex>.tmp*   an import's temporaries, removed on failure and by the next import
//   inspect.tmp-<pid>  an archive's manifest being read (before its digest is known)
//   <hex>.sent-JOB.STEP.sqsh, .json  an image srun sent for that step (broadcast.hpp), until
//                the node's prepare takes it
//   oci/         an OCI layout of the blobs fetched so far, so that none is fetched twice
// The top folder is root's and only root writes in it: root makes each user's folder (the
// plugin at the start of a step that imports, or `trellis-agent cache-folder`), so no user can
// make, squat or block another's; the user's side checks its folder by descriptor.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "agent/files.hpp"
#include "common/error.hpp"
#include "config/config.hpp"

namespace trellis::agent {

// Importing an image failed: the message names the tool or folder and what to do.
struct ImageImportError : Error {
    using Error::Error;
    const char* topic() const override { return "image import"; }
};

// A flock held for its lifetime (released on destruction or with the process).
class CacheLock {
public:
    CacheLock() = default;
    explicit CacheLock(Fd fd) : fd_(std::move(fd)) {}
    bool held() const { return bool(fd_); }

private:
    Fd fd_;
};

class ImageCache {
public:
    // Checks <image_cache> and opens the calling user's folder in it (root made it). Throws
    // PolicyError naming the folder, what was wrong and what is accepted (a missing folder:
    // what makes it); refuses root (imports run as the job's user). Warns on `warnings` when
    // the cache is a tmpfs.
    ImageCache(const config::ContainerConfig& config, std::ostream& warnings);
    // The same protocol over `folder`, a folder of the caller's, without the checks of the
    // node's cache (for tests, and tools over a copy). Throws ImageImportError.
    static ImageCache own_folder(const std::string& folder);
    ImageCache(ImageCache&&) = default;

    const std::string& folder() const { return folder_; }  // <image_cache>/<uid>
    int fd() const { return fd_.get(); }
    std::string path(const std::string& name) const { return folder_ + "/" + name; }

    // "<hex>.sqsh" etc. for "sha256:<hex>".
    static std::string entry_name(const std::string& digest, const char* suffix);

    // Waits for the digest's lock: exclusive to import it, shared to use it.
    CacheLock lock(const std::string& digest, bool exclusive) const;
    // The lock of the blob layout (oci/): exclusive while skopeo writes it or it is cleaned.
    CacheLock lock_layout(bool exclusive) const;

    // Whether <hex>.sqsh and <hex>.json are both there (published).
    bool has(const std::string& digest) const;
    // Why the published <hex>.sqsh cannot be whole ("" when it can): no squashfs superblock,
    // or shorter than its superblock says (cut by a crash or a full disk).
    std::string damage(const std::string& digest) const;
    // Removes the published image (.sqsh, then .json); call with its lock held exclusively.
    void remove_image(const std::string& digest) const;
    // Marks the image as just used (its mtime), which eviction goes by.
    void touch(const std::string& digest) const;
    // Removes <hex>.tmp* left by an import that died (call with the digest's lock held).
    void remove_temporaries(const std::string& digest) const;
    // Removes the entries (and what is under them) that `unwanted` names, as lstat sees them.
    void remove_entries(const std::function<bool(const std::string& name, const struct stat& info)>& unwanted) const;
    // Where process `pid` reads an archive's manifest before its digest is known, and the
    // removal of those whose process is gone (killed before it removed its own).
    static std::string inspection_name(pid_t pid);
    void remove_dead_inspections() const;
    // What the folder takes: images, settings, locks and the blob layout.
    std::uint64_t bytes() const;
    // Removes the least recently used image (its .sqsh and .json; never `keep`, never one
    // whose lock another process holds) and returns its digest, or "" when none may go. Its
    // blobs stay in oci/ until the layout is cleaned (image_import does, with umoci).
    std::string evict_oldest(const std::string& keep) const;

private:
    ImageCache() = default;
    std::string folder_;
    Fd fd_;
};

// As root: makes <image_cache> when missing (0755; the folders above must be root's), and
// makes a 1777 one of an older trellis 0755. Returns what it did ("" for nothing).
std::string make_cache_top(const config::ContainerConfig& config);

// As root: makes <image_cache>/<uid> for that user (0700, theirs) through descriptors, after
// checking the top folder as the user's side does. An entry of the wrong owner or kind there
// is renamed aside (<uid>.refused-<time>), never entered. Returns a note saying so, or "".
// Throws PolicyError (not root, or the top refused) or ImageImportError.
std::string make_user_cache_folder(const config::ContainerConfig& config, uid_t uid, gid_t gid);

// Removes a tree that may hold unreadable folders (mode 000, as images have): the removal
// runs in a user namespace where the caller is root and so may enter them.
void remove_tree(const std::string& path);

}  // namespace trellis::agent
