// SPDX-License-Identifier: Apache-2.0
#include "trainer/comm/verbs_transport.hpp"

#include <algorithm>
#include <cstring>
#include <random>

#include "common/error.hpp"

namespace trellis::comm {

namespace {

constexpr std::size_t slots_per_peer = 64;    // notices and write-with-immediate arrivals
constexpr std::size_t write_chunk = 1 << 20;  // bytes per RDMA WRITE
constexpr std::uint32_t send_queue_depth = 512;

// wr_id: an Operation* for writes (aligned, low bits 0); receive slots and notices tagged.
constexpr std::uint64_t tag_slot = 1, tag_notice = 2;
std::uint64_t slot_id(int peer, std::size_t slot) { return (std::uint64_t(peer) << 20 | slot) << 2 | tag_slot; }

struct QpInfo {
    std::uint32_t qpn, psn;
    std::uint16_t lid;
    std::uint8_t gid[16];
};

// A queue pair's states, one step each, as NCCL's net_ib takes them: INIT (its port and
// access), RTR (ready to receive from its peer), RTS (ready to send).
void to_init(ibv_qp* qp, std::uint8_t port) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = port;
    attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
        throw CommError("verbs: queue pair to INIT failed");
}

void to_rtr(ibv_qp* qp, const VerbsEndpoint& local, const QpInfo& remote, int peer) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = local.mtu;
    attr.dest_qp_num = remote.qpn;
    attr.rq_psn = remote.psn;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 12;
    attr.ah_attr.port_num = local.port;
    attr.ah_attr.dlid = remote.lid;
    if (local.gid_index >= 0) {
        attr.ah_attr.is_global = 1;
        attr.ah_attr.grh.hop_limit = 64;
        attr.ah_attr.grh.sgid_index = std::uint8_t(local.gid_index);
        std::memcpy(attr.ah_attr.grh.dgid.raw, remote.gid, 16);
    }
    if (ibv_modify_qp(qp, &attr,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
        throw CommError("verbs: queue pair to rank " + std::to_string(peer) + ": RTR failed: " + std::strerror(errno));
}

void to_rts(ibv_qp* qp, std::uint32_t psn, int peer) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = 14;  // 4.096 us x 2^14 = 67 ms per try
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;  // "infinite": the receiver always has slots posted soon
    attr.sq_psn = psn;
    attr.max_rd_atomic = 1;
    if (ibv_modify_qp(qp, &attr,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                          IBV_QP_MAX_QP_RD_ATOMIC))
        throw CommError("verbs: queue pair to rank " + std::to_string(peer) + ": RTS failed: " + std::strerror(errno));
}

}  // namespace

VerbsTransport::VerbsTransport(Wireup& wireup, TcpOptions tcp, const VerbsOptions& verbs) : options_(tcp) {
    tcp.streams = 1;
    tcp_ = std::make_unique<TcpTransport>(wireup, tcp);
    rank_ = tcp_->rank();
    size_ = tcp_->size();
    for (int r = 0; r < size_; ++r) hosts_.push_back(tcp_->host_of(r));
    context_ = open_verbs_device(endpoint_, verbs);
    pd_.reset(ibv_alloc_pd(context_.get()));
    cq_.reset(ibv_create_cq(context_.get(), int((slots_per_peer + send_queue_depth) * std::size_t(size_)), nullptr,
                            nullptr, 0));
    if (!pd_ || !cq_) throw CommError("verbs: " + endpoint_.device + ": cannot allocate a protection domain or CQ");
    connect(wireup);
}

VerbsTransport::~VerbsTransport() = default;

void VerbsTransport::connect(Wireup&) {
    peers_.resize(std::size_t(size_));
    std::vector<QpInfo> mine(static_cast<std::size_t>(size_)), theirs(mine.size());
    std::mt19937 random(std::random_device{}());
    for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        ibv_qp_init_attr init{};
        init.send_cq = init.recv_cq = cq_.get();
        init.qp_type = IBV_QPT_RC;
        init.cap = {send_queue_depth, std::uint32_t(slots_per_peer), 1, 1, sizeof(Notice)};
        auto& qp = peers_[std::size_t(r)].qp;
        qp.reset(ibv_create_qp(pd_.get(), &init));
        if (!qp)
            throw CommError("verbs: " + endpoint_.device + ": cannot create a queue pair: " + std::strerror(errno));
        to_init(qp.get(), endpoint_.port);
        auto& info = mine[std::size_t(r)];
        info.qpn = qp->qp_num;
        info.psn = random() & 0xffffff;
        info.lid = endpoint_.lid;
        std::memcpy(info.gid, endpoint_.gid.raw, 16);
    }
    // Queue-pair numbers and addresses over TCP.
    std::vector<Transfer> swap;
    for (int r = 0; r < size_; ++r)
        if (r != rank_) {
            swap.push_back(Transfer::send(r, &mine[std::size_t(r)], sizeof(QpInfo)));
            swap.push_back(Transfer::recv(r, &theirs[std::size_t(r)], sizeof(QpInfo)));
        }
    tcp_->exchange(swap);

    // The notice slots: one registered array, slots_per_peer per peer.
    for (auto& peer : peers_) peer.slots.resize(slots_per_peer);
    for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        auto* qp = peers_[std::size_t(r)].qp.get();
        to_rtr(qp, endpoint_, theirs[std::size_t(r)], r);
        to_rts(qp, mine[std::size_t(r)].psn, r);
        for (std::size_t slot = 0; slot < slots_per_peer; ++slot) post_slot(r, slot);
    }
    // Everyone's receives are posted before anyone sends.
    std::uint8_t token = 0;
    std::vector<Transfer> barrier;
    for (int r = 0; r < size_; ++r)
        if (r != rank_) {
            barrier.push_back(Transfer::send(r, &token, 1));
            barrier.push_back(Transfer::recv(r, &token, 1));
        }
    tcp_->exchange(barrier);
}

ibv_mr* VerbsTransport::registered(void* data, std::size_t bytes) {
    auto key = std::make_pair(reinterpret_cast<std::uintptr_t>(data), bytes);
    if (auto found = registrations_.find(key); found != registrations_.end()) return found->second.get();
    MemoryRegion mr(
        ibv_reg_mr(pd_.get(), data, std::max<std::size_t>(bytes, 1), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE));
    if (!mr) throw CommError("verbs: cannot register " + std::to_string(bytes) + " bytes: " + std::strerror(errno));
    return (registrations_[key] = std::move(mr)).get();
}

void VerbsTransport::forget(const void* data, std::size_t bytes) {
    const auto begin = reinterpret_cast<std::uintptr_t>(data), end = begin + bytes;
    for (auto it = registrations_.begin(); it != registrations_.end();) {
        auto [address, length] = it->first;
        if (address < end && begin < address + std::max<std::size_t>(length, 1)) {
            it = registrations_.erase(it);
        } else {
            ++it;
        }
    }
}

void VerbsTransport::post_slot(int peer, std::size_t slot) {
    auto& p = peers_[std::size_t(peer)];
    ibv_mr* mr = registered(p.slots.data(), p.slots.size() * sizeof(Notice));
    ibv_sge sge{reinterpret_cast<std::uint64_t>(&p.slots[slot]), sizeof(Notice), mr->lkey};
    ibv_recv_wr wr{}, *bad = nullptr;
    wr.wr_id = slot_id(peer, slot);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    if (ibv_post_recv(p.qp.get(), &wr, &bad)) fail(peer, "cannot post a receive");
}

void VerbsTransport::announce(int peer, Operation& receive) {
    ibv_mr* mr = registered(receive.transfer.data, receive.transfer.bytes);
    Notice notice{reinterpret_cast<std::uint64_t>(receive.transfer.data), mr->rkey,
                  std::uint32_t(receive.transfer.bytes)};
    ibv_sge sge{reinterpret_cast<std::uint64_t>(&notice), sizeof notice, 0};
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = tag_notice;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    if (ibv_post_send(peers_[std::size_t(peer)].qp.get(), &wr, &bad)) fail(peer, "cannot post a notice");
    peers_[std::size_t(peer)].receiving.push_back(&receive);
}

void VerbsTransport::start_sends(int peer) {
    auto& p = peers_[std::size_t(peer)];
    while (!p.sending.empty() && !p.notices.empty()) {
        Operation& send = *p.sending.front();
        Notice notice = p.notices.front();
        p.sending.pop_front();
        p.notices.pop_front();
        if (notice.bytes != send.transfer.bytes)
            fail(peer, "expects " + std::to_string(notice.bytes) + " bytes where rank " + std::to_string(rank_) +
                           " sends " + std::to_string(send.transfer.bytes));
        ibv_mr* mr = registered(send.transfer.data, send.transfer.bytes);
        std::size_t pieces = std::max<std::size_t>((send.transfer.bytes + write_chunk - 1) / write_chunk, 1);
        send.started = true;
        send.writes_left = int(pieces);
        for (std::size_t i = 0; i < pieces; ++i) {
            std::size_t offset = i * write_chunk, length = std::min(write_chunk, send.transfer.bytes - offset);
            ibv_sge sge{reinterpret_cast<std::uint64_t>(send.transfer.data) + offset, std::uint32_t(length), mr->lkey};
            ibv_send_wr wr{}, *bad = nullptr;
            wr.wr_id = reinterpret_cast<std::uint64_t>(&send);
            wr.sg_list = &sge;
            wr.num_sge = length > 0 ? 1 : 0;
            wr.opcode = i + 1 == pieces ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
            wr.imm_data = 0;
            wr.send_flags = IBV_SEND_SIGNALED;
            wr.wr.rdma.remote_addr = notice.address + offset;
            wr.wr.rdma.rkey = notice.rkey;
            if (ibv_post_send(p.qp.get(), &wr, &bad))
                fail(peer, std::string("cannot post a write: ") + std::strerror(errno));
        }
    }
}

void VerbsTransport::fail(int peer, const std::string& what, bool silent) {
    tcp_->fail(PeerFailure(peer, host_of(peer), what, silent));
}

void VerbsTransport::progress() {
    ibv_wc completions[32];
    int n = ibv_poll_cq(cq_.get(), 32, completions);
    if (n < 0) throw CommError("verbs: polling the completion queue failed");
    for (int i = 0; i < n; ++i) {
        const auto& wc = completions[i];
        int peer = -1;
        for (int r = 0; r < size_ && peer < 0; ++r)
            if (r != rank_ && peers_[std::size_t(r)].qp->qp_num == wc.qp_num) peer = r;
        if (wc.status != IBV_WC_SUCCESS) {
            // The peer's own notice over TCP explains it better when there is one.
            tcp_->check_peers();
            fail(peer, std::string("verbs work request failed: ") + ibv_wc_status_str(wc.status));
        }
        auto& p = peers_[std::size_t(peer)];
        if ((wc.wr_id & 3) == tag_slot) {
            std::size_t slot = (wc.wr_id >> 2) & ((1 << 20) - 1);
            if (wc.opcode == IBV_WC_RECV) {
                p.notices.push_back(p.slots[slot]);
            } else if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
                if (p.receiving.empty()) fail(peer, "wrote a message nobody announced");
                Operation* receive = p.receiving.front();
                p.receiving.pop_front();
                receive->done = true;
                receive->completed_order = ++completions_;
            }
            post_slot(peer, slot);
            start_sends(peer);
        } else if ((wc.wr_id & 3) == 0) {
            auto* send = reinterpret_cast<Operation*>(wc.wr_id);
            if (--send->writes_left == 0) send->done = true;
        }
    }
}

void VerbsTransport::exchange(std::span<const Transfer> transfers) {
    std::vector<Operation> operations;
    operations.reserve(transfers.size());  // stable addresses: the queues point at them
    for (const auto& t : transfers) operations.push_back(Operation{t});
    for (auto& op : operations) {
        int peer = op.transfer.peer;
        if (peer < 0 || peer >= size_ || peer == rank_)
            throw UsageError("verbs: transfer with rank " + std::to_string(peer));
        auto& p = peers_[std::size_t(peer)];
        if (op.transfer.kind == Transfer::Kind::recv) {
            if (p.first && p.first->transfer.data == op.transfer.data && p.first->transfer.bytes == op.transfer.bytes) {
                // exchange_first announced this very buffer already: take that receive over.
                op = *p.first;
                if (!op.done) std::replace(p.receiving.begin(), p.receiving.end(), p.first.get(), &op);
                p.first.reset();
                continue;
            }
            announce(peer, op);
        } else {
            p.sending.push_back(&op);
            start_sends(peer);
        }
    }
    auto last_progress = Clock::now(), last_check = last_progress;
    std::size_t done_before = 0;
    while (true) {
        std::size_t done = std::count_if(operations.begin(), operations.end(), [](auto& op) { return op.done; });
        if (done == operations.size()) return;
        auto now = Clock::now();
        if (done != done_before) {
            done_before = done;
            last_progress = now;
        }
        if (now - last_check > std::chrono::milliseconds(10)) {
            tcp_->check_peers();
            last_check = now;
        }
        if (now - last_progress > options_.timeout)
            for (auto& op : operations)
                if (!op.done && tcp_->silent(op.transfer.peer, last_progress))
                    fail(
                        op.transfer.peer,
                        "made no progress and sent no heartbeat for " + std::to_string(options_.timeout.count()) + " s",
                        true);
        progress();
    }
}

std::size_t VerbsTransport::exchange_first(std::span<const Transfer> receives) {
    if (receives.empty()) throw UsageError("verbs: exchange_first with nothing to receive");
    for (const auto& t : receives) {
        auto& p = peers_.at(std::size_t(t.peer));
        if (p.first) {
            if (p.first->transfer.data != t.data || p.first->transfer.bytes != t.bytes)
                throw std::logic_error("verbs: exchange_first with another buffer while one is announced");
            continue;
        }
        p.first = std::make_unique<Operation>(Operation{t});
        announce(t.peer, *p.first);
    }
    auto last_progress = Clock::now(), last_check = last_progress;
    while (true) {
        // The receive that completed first among those asked about.
        std::size_t best = receives.size();
        for (std::size_t i = 0; i < receives.size(); ++i) {
            auto& first = peers_[std::size_t(receives[i].peer)].first;
            if (first->done &&
                (best == receives.size() ||
                 first->completed_order < peers_[std::size_t(receives[best].peer)].first->completed_order))
                best = i;
        }
        if (best < receives.size()) {
            peers_[std::size_t(receives[best].peer)].first.reset();
            return best;
        }
        auto now = Clock::now();
        if (now - last_check > std::chrono::milliseconds(10)) {
            tcp_->check_peers();
            last_check = now;
        }
        if (now - last_progress > options_.timeout)
            for (const auto& t : receives)
                if (tcp_->silent(t.peer, last_progress))
                    fail(t.peer,
                         "sent nothing, not even a heartbeat, for " + std::to_string(options_.timeout.count()) + " s",
                         true);
        progress();
    }
}

}  // namespace trellis::comm
