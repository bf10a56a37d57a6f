# SPDX-License-Identifier: Apache-2.0
# Prints a TCP port that nobody on this machine listens on, chosen by the kernel, so that test
# runs side by side never share a rendezvous port.
import socket

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    print(s.getsockname()[1])
