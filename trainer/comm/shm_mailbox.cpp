// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/shm_mailbox.hpp"

#include <fcntl.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <new>
#include <utility>

#include "trainer/comm/comm_error.hpp"

namespace trellis::comm {

namespace {

constexpr std::uint64_t magic = 0x7472656c6c69736dULL;  // "trellism"

std::size_t aligned(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

std::string failed(const std::string& what, const std::string& name, int error) {
    return "shared memory: " + what + " /dev/shm" + name + ": " + std::strerror(error);
}

}  // namespace

struct ShmMailbox::Header {
    std::uint64_t magic;
    std::uint64_t nonce;
    alignas(64) std::atomic<std::uint32_t> doorbell;  // a futex word: 32 bits, in shared memory
};

std::size_t ShmLayout::ring_bytes() const { return aligned(sizeof(ShmRingHeader)) + slots * aligned(slot_bytes); }

std::size_t ShmLayout::segment_bytes() const {
    return aligned(sizeof(ShmMailbox::Header)) + std::size_t(rings) * ring_bytes();
}

ShmMailbox::ShmMailbox(std::string name, const ShmLayout& layout, char* base)
    : name_(std::move(name)), layout_(layout), base_(base) {}

ShmMailbox::ShmMailbox(ShmMailbox&& other) noexcept
    : name_(std::move(other.name_)),
      layout_(other.layout_),
      base_(std::exchange(other.base_, nullptr)),
      named_(std::exchange(other.named_, false)) {}

ShmMailbox& ShmMailbox::operator=(ShmMailbox&& other) noexcept {
    std::swap(name_, other.name_);
    std::swap(layout_, other.layout_);
    std::swap(base_, other.base_);
    std::swap(named_, other.named_);
    return *this;
}

ShmMailbox::~ShmMailbox() {
    unlink();
    if (base_) ::munmap(base_, layout_.segment_bytes());
}

ShmMailbox ShmMailbox::create(const std::string& name, const ShmLayout& layout, std::uint64_t nonce) {
    // Only this user may map it: the peers of a job run as the job's user.
    int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) throw CommError(failed("cannot create", name, errno));
    // Reserve the pages now: tmpfs that runs out later would kill the rank with SIGBUS.
    std::size_t bytes = layout.segment_bytes();
    int error = ::posix_fallocate(fd, 0, off_t(bytes));
    void* base = error ? MAP_FAILED : ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (!error && base == MAP_FAILED) error = errno;
    ::close(fd);
    if (error) {
        ::shm_unlink(name.c_str());
        throw CommError(failed("cannot reserve " + std::to_string(bytes >> 20) + " MiB for", name, error) +
                        " (a small /dev/shm, as containers have by default: give it more, or use --transport tcp)");
    }
    ShmMailbox mailbox(name, layout, static_cast<char*>(base));
    mailbox.named_ = true;
    new (base) Header{magic, nonce, {}};
    for (int r = 0; r < layout.rings; ++r) new (&mailbox.ring(r)) ShmRingHeader{};
    return mailbox;
}

ShmMailbox ShmMailbox::open(const std::string& name, const ShmLayout& layout, std::uint64_t nonce) {
    int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        throw CommError(failed("cannot open a peer's", name, errno) +
                        " (ranks of one node must share /dev/shm: containers of their own do not)");
    struct stat info {};
    std::size_t bytes = layout.segment_bytes();
    bool complete = ::fstat(fd, &info) == 0 && std::size_t(info.st_size) == bytes;
    void* base = complete ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    int error = errno;
    ::close(fd);
    if (!complete) throw CommError("shared memory: /dev/shm" + name + " is not the size its owner announced");
    if (base == MAP_FAILED) throw CommError(failed("cannot map", name, error));
    ShmMailbox mailbox(name, layout, static_cast<char*>(base));
    if (mailbox.header().magic != magic || mailbox.header().nonce != nonce)
        throw CommError("shared memory: /dev/shm" + name + " is not the segment its owner announced");
    return mailbox;
}

void ShmMailbox::unlink() {
    if (named_) ::shm_unlink(name_.c_str());
    named_ = false;
}

ShmMailbox::Header& ShmMailbox::header() { return *reinterpret_cast<Header*>(base_); }
const ShmMailbox::Header& ShmMailbox::header() const { return *reinterpret_cast<const Header*>(base_); }

ShmRingHeader& ShmMailbox::ring(int index) {
    char* ring = base_ + aligned(sizeof(Header)) + std::size_t(index) * layout_.ring_bytes();
    return *reinterpret_cast<ShmRingHeader*>(ring);
}

char* ShmMailbox::slot(int index, std::uint64_t sequence) {
    char* first = reinterpret_cast<char*>(&ring(index)) + aligned(sizeof(ShmRingHeader));
    return first + (sequence % layout_.slots) * aligned(layout_.slot_bytes);
}

void ShmMailbox::ring_doorbell() {
    header().doorbell.fetch_add(1, std::memory_order_release);
    // Not FUTEX_PRIVATE_FLAG: the sleeper is another process.
    ::syscall(SYS_futex, &header().doorbell, FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

std::uint32_t ShmMailbox::doorbell() const { return header().doorbell.load(std::memory_order_acquire); }

void ShmMailbox::wait_doorbell(std::uint32_t seen, std::chrono::milliseconds limit) {
    timespec timeout{time_t(limit.count() / 1000), long(limit.count() % 1000) * 1000000L};
    // Returns at once when the doorbell has moved since `seen` was read: no wake-up is lost.
    ::syscall(SYS_futex, &header().doorbell, FUTEX_WAIT, seen, &timeout, nullptr, 0);
}

}  // namespace trellis::comm
