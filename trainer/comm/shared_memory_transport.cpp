// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/shared_memory_transport.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <fstream>
#include <random>
#include <thread>

#include "common/cli.hpp"
#include "common/environment.hpp"
#include "common/error.hpp"
#include "common/host.hpp"

namespace trellis::comm {

namespace {

// Two ranks share a node when their wireup names the same host and their kernels the same
// boot: a host name alone is not proof (two machines may be given one by mistake).
std::string boot_id() {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string id;
    std::getline(in, id);
    return id;
}

// Every rank says "ok" or what went wrong; all then throw the first failure, so that no rank
// waits for a peer that has given up.
void agree(Wireup& wireup, const std::string& mine) {
    auto said = wireup.all_gather(mine.empty() ? "ok" : mine);
    for (std::size_t r = 0; r < said.size(); ++r)
        if (said[r] != "ok") throw CommError("rank " + std::to_string(r) + ": " + said[r]);
}

constexpr auto doorbell_wait = std::chrono::milliseconds(100);  // between health checks
constexpr int yields_before_sleeping = 16;

}  // namespace

SharedMemoryTransport::SharedMemoryTransport(Wireup& wireup, TcpOptions tcp, ShmLayout layout)
    : timeout_(tcp.timeout), tcp_(std::make_unique<TcpTransport>(wireup, std::move(tcp))) {
    rank_ = tcp_->rank();
    size_ = tcp_->size();
    for (int r = 0; r < size_; ++r) hosts_.push_back(tcp_->host_of(r));
    set_up_mailboxes(wireup, layout);
}

SharedMemoryTransport::~SharedMemoryTransport() = default;

std::string SharedMemoryTransport::seconds() const { return std::to_string(timeout_.count()) + " s"; }

std::string SharedMemoryTransport::name() const { return local_ranks_ == size_ ? "shm" : "shm+tcp"; }

void SharedMemoryTransport::set_up_mailboxes(Wireup& wireup, ShmLayout layout) {
    std::random_device random;
    std::uint64_t token = (std::uint64_t(random()) << 32) ^ random();
    auto said = wireup.all_gather(std::to_string(token) + "|" + boot_id());
    auto mine = said[std::size_t(rank_)].substr(said[std::size_t(rank_)].find('|'));
    node_index_.assign(std::size_t(size_), -1);
    local_ranks_ = 0;
    for (int r = 0; r < size_; ++r)
        if (host_of(r) == host_of(rank_) && said[std::size_t(r)].ends_with(mine))
            node_index_[std::size_t(r)] = local_ranks_++;
    // Every rank takes part in the rounds below (they are all-gathers), alone on its node or not.
    bool alone = local_ranks_ == 1;
    // Named after rank 0's token (unique to this job, the same on every rank) through the step's
    // secret: a user who sees one segment appear cannot tell the names of the others, nor make
    // them first.
    auto job = cli::split(said[0], '|').front();
    auto segment = [&](int r) {
        return "/trellis-" + wireup.secret().name("trellis shm segment 1", job + "|" + std::to_string(r));
    };
    layout.rings = local_ranks_;
    std::uint64_t nonce = std::stoull(job);
    std::string problem;
    try {
        if (!alone && rank_ != 0)
            if (const char* delay = env_value(env::test_shm_delay.name))
                std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(delay)));
        if (!alone) own_ = ShmMailbox::create(segment(rank_), layout, nonce);
    } catch (const CommError& error) {
        problem = error.what();
    }
    agree(wireup, problem);
    mailboxes_.resize(std::size_t(size_));
    try {
        for (int r = 0; r < size_; ++r)
            if (r != rank_ && same_node(r)) mailboxes_[std::size_t(r)] = ShmMailbox::open(segment(r), layout, nonce);
    } catch (const CommError& error) {
        problem = error.what();
    }
    agree(wireup, problem);
    if (own_) own_->unlink();  // every peer has it mapped: nothing is left behind, whatever happens next
}

bool SharedMemoryTransport::send_some(Pending& pending) {
    const auto& t = *pending.transfer;
    auto& mailbox = *mailboxes_[std::size_t(t.peer)];
    int index = node_index_[std::size_t(rank_)];
    auto& ring = mailbox.ring(index);
    const auto& layout = mailbox.layout();
    bool moved = false;
    while (pending.done < t.bytes) {
        auto filled = ring.filled.load(std::memory_order_relaxed);
        if (filled - ring.emptied.load(std::memory_order_acquire) >= layout.slots) break;
        auto bytes = std::min(layout.slot_bytes, t.bytes - pending.done);
        std::memcpy(mailbox.slot(index, filled), static_cast<const char*>(t.data) + pending.done, bytes);
        ring.filled.store(filled + 1, std::memory_order_release);
        pending.done += bytes;
        moved = true;
    }
    if (moved) mailbox.ring_doorbell();
    return moved;
}

bool SharedMemoryTransport::receive_some(Pending& pending) {
    const auto& t = *pending.transfer;
    int index = node_index_[std::size_t(t.peer)];
    auto& ring = own_->ring(index);
    const auto& layout = own_->layout();
    bool moved = false;
    while (pending.done < t.bytes) {
        auto emptied = ring.emptied.load(std::memory_order_relaxed);
        if (ring.filled.load(std::memory_order_acquire) == emptied) break;
        auto bytes = std::min(layout.slot_bytes, t.bytes - pending.done);
        std::memcpy(static_cast<char*>(t.data) + pending.done, own_->slot(index, emptied), bytes);
        ring.emptied.store(emptied + 1, std::memory_order_release);
        pending.done += bytes;
        moved = true;
    }
    if (moved) mailboxes_[std::size_t(t.peer)]->ring_doorbell();  // the sender may wait for room
    return moved;
}

bool SharedMemoryTransport::move(std::vector<Pending>& pending) {
    bool moved = false;
    // An unfinished message holds back the later ones of its peer and direction. An exchange has
    // a few transfers: a scan of those before is cheaper than a set on every pass.
    for (std::size_t i = 0; i < pending.size(); ++i) {
        auto& p = pending[i];
        if (p.done == p.transfer->bytes) continue;
        bool held = std::any_of(pending.begin(), pending.begin() + std::ptrdiff_t(i), [&](const Pending& earlier) {
            return earlier.done < earlier.transfer->bytes && earlier.transfer->peer == p.transfer->peer &&
                   earlier.transfer->kind == p.transfer->kind;
        });
        if (!held) moved |= p.transfer->kind == Transfer::Kind::send ? send_some(p) : receive_some(p);
    }
    return moved;
}

void SharedMemoryTransport::wait(std::uint32_t seen, const std::vector<Pending>& pending,
                                 Clock::time_point last_progress, bool tcp_busy) {
    // Oversubscribed nodes (more ranks than cores) are the rule here: give the peer the core
    // before sleeping, and sleep rather than spin.
    for (int i = 0; i < yields_before_sleeping && own_->doorbell() == seen; ++i) std::this_thread::yield();
    if (own_->doorbell() == seen) own_->wait_doorbell(seen, doorbell_wait);
    if (tcp_busy) return;  // its exchange reads the control connections, and only it may
    tcp_->check_peers();
    check_pending(pending, last_progress);
}

void SharedMemoryTransport::check_pending(const std::vector<Pending>& pending, Clock::time_point last_progress) {
    for (const auto& p : pending) {
        if (p.done == p.transfer->bytes) continue;
        int peer = p.transfer->peer;
        // A peer that has ended wrote all it sent before saying goodbye: what is not in the
        // ring now never will be, and what this rank sends it will never be read.
        if (tcp_->finished(peer) && (p.transfer->kind == Transfer::Kind::send || !arriving(*p.transfer)))
            tcp_->fail(PeerFailure(peer, host_of(peer), "exited before its messages with this rank were complete"));
        if (tcp_->silent(peer, last_progress))
            tcp_->fail(
                PeerFailure(peer, host_of(peer), "made no progress and sent no heartbeat for " + seconds(), true));
    }
}

void SharedMemoryTransport::exchange(std::span<const Transfer> transfers) {
    std::vector<Pending> local;
    std::vector<Transfer> remote;
    for (const auto& t : transfers) {
        if (t.peer < 0 || t.peer >= size_ || t.peer == rank_)
            throw UsageError("shm: transfer with rank " + std::to_string(t.peer) + " from rank " +
                             std::to_string(rank_));
        if (same_node(t.peer)) {
            tcp_->link(t.peer);  // its heartbeats and goodbye say whether it is still there
            local.push_back({&t});
        } else
            remote.push_back(t);
    }
    if (local.empty()) return tcp_->exchange(remote);

    // The ranks elsewhere over TCP on a thread of their own, meanwhile.
    std::thread tcp_thread;
    std::exception_ptr tcp_failure;
    std::atomic<bool> tcp_done = remote.empty();
    if (!remote.empty())
        tcp_thread = std::thread([&] {
            try {
                tcp_->exchange(remote);
            } catch (...) {
                tcp_failure = std::current_exception();
            }
            tcp_done = true;
            own_->ring_doorbell();
        });
    auto finish_tcp = [&] {
        if (tcp_thread.joinable()) tcp_thread.join();
        if (tcp_failure) std::rethrow_exception(tcp_failure);
    };
    try {
        auto last_progress = Clock::now();
        auto unfinished = [&] {
            return std::any_of(local.begin(), local.end(), [](const Pending& p) { return p.done < p.transfer->bytes; });
        };
        while (unfinished()) {
            auto seen = own_->doorbell();
            if (move(local)) {
                last_progress = Clock::now();
                continue;
            }
            if (tcp_done && tcp_failure) break;
            wait(seen, local, last_progress, !tcp_done);
        }
    } catch (...) {
        // A peer failed, found while TCP was idle: its thread has ended, or is ending.
        if (tcp_thread.joinable()) tcp_thread.join();
        throw;
    }
    finish_tcp();
}

bool SharedMemoryTransport::arriving(const Transfer& receive) {
    auto& ring = own_->ring(node_index_[std::size_t(receive.peer)]);
    return receive.bytes == 0 ||
           ring.filled.load(std::memory_order_acquire) != ring.emptied.load(std::memory_order_relaxed);
}

std::size_t SharedMemoryTransport::exchange_first(std::span<const Transfer> receives) {
    if (receives.empty()) throw UsageError("shm: exchange_first with nothing to receive");
    std::vector<Transfer> remote;
    std::vector<std::size_t> remote_index;
    for (std::size_t i = 0; i < receives.size(); ++i)
        if (!same_node(receives[i].peer)) {
            remote.push_back(receives[i]);
            remote_index.push_back(i);
        }
    if (remote.size() == receives.size()) return tcp_->exchange_first(receives);
    auto last_progress = Clock::now();
    std::vector<Pending> waiting;
    for (const auto& r : receives)
        if (same_node(r.peer)) {
            tcp_->link(r.peer);
            waiting.push_back({&r});
        }
    while (true) {
        auto seen = own_->doorbell();
        for (std::size_t i = 0; i < receives.size(); ++i)
            if (same_node(receives[i].peer) && arriving(receives[i])) {
                exchange(receives.subspan(i, 1));
                return i;
            }
        if (remote.empty()) {
            wait(seen, waiting, last_progress, false);
            continue;
        }
        // Some arrive over TCP: look there briefly, then at the rings again.
        if (auto first = tcp_->first_arriving(remote, std::chrono::milliseconds(1))) {
            tcp_->exchange(std::span(remote).subspan(*first, 1));
            return remote_index[*first];
        }
        check_pending(waiting, last_progress);
        for (const auto& r : remote)
            if (tcp_->silent(r.peer, last_progress))
                tcp_->fail(
                    PeerFailure(r.peer, host_of(r.peer), "sent nothing, not even a heartbeat, for " + seconds(), true));
    }
}

}  // namespace trellis::comm
