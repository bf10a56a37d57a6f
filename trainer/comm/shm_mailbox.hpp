// SPDX-License-Identifier: Apache-2.0
// A rank's mailbox in shared memory, for the ranks of its node: one inbound ring per rank of
// the node (the sender fills slots in order, this rank empties them) and a doorbell, a futex
// word that a peer bumps whenever it fills one of this rank's rings or empties a slot of a ring
// this rank sends on. A rank sleeps on its own doorbell only, whatever it waits for.
//
// The segment lives in /dev/shm under a name made of the job's token and the rank. Its owner
// creates it and every other rank of the node maps it; once all have, the owner removes the
// name, so that a rank killed afterwards leaves nothing behind (the memory goes with the last
// mapping).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace trellis::comm {

struct ShmRingHeader {
    alignas(64) std::atomic<std::uint64_t> filled;   // slots filled, ever (the sender's)
    alignas(64) std::atomic<std::uint64_t> emptied;  // slots emptied, ever (the receiver's)
};

struct ShmLayout {
    int rings = 0;                       // one per rank of the node, in node order
    std::size_t slots = 4;               // per ring
    std::size_t slot_bytes = 256 << 10;  // a message takes ceil(bytes / slot_bytes) slots
    std::size_t ring_bytes() const;      // header and slots, 64-byte aligned
    std::size_t segment_bytes() const;   // the mailbox's header and its rings
};

class ShmMailbox {
public:
    struct Header;  // the segment's first bytes: what it is, and the doorbell

    // Creates and maps this rank's mailbox (throws CommError naming the segment and what
    // failed: no /dev/shm, no space); `nonce` lets the peers check they mapped this one.
    static ShmMailbox create(const std::string& name, const ShmLayout& layout, std::uint64_t nonce);
    // Maps a peer's mailbox; throws CommError when it is absent (another /dev/shm: a
    // container of its own) or not the one announced.
    static ShmMailbox open(const std::string& name, const ShmLayout& layout, std::uint64_t nonce);

    ShmMailbox(ShmMailbox&& other) noexcept;
    ShmMailbox& operator=(ShmMailbox&& other) noexcept;
    ~ShmMailbox();

    void unlink();  // the owner removes the name once every peer has mapped it

    ShmRingHeader& ring(int index);
    char* slot(int index, std::uint64_t sequence);  // the slot that holds message slot `sequence`
    const ShmLayout& layout() const { return layout_; }

    // A peer has filled or emptied something: wakes this mailbox's owner if it sleeps.
    void ring_doorbell();
    std::uint32_t doorbell() const;
    // Sleeps while the doorbell still reads `seen`, at most `limit`.
    void wait_doorbell(std::uint32_t seen, std::chrono::milliseconds limit);

private:
    ShmMailbox(std::string name, const ShmLayout& layout, char* base);
    Header& header();
    const Header& header() const;

    std::string name_;
    ShmLayout layout_;
    char* base_ = nullptr;
    bool named_ = false;  // this process created the name and has not removed it yet
};

}  // namespace trellis::comm
