// SPDX-License-Identifier: Apache-2.0
// trellis-pause: the process Apptainer runs in a .sif image so that the agent can find it and
// join its namespaces, doing nothing until the agent stops it. Linked statically, since it
// runs inside images that need not have this machine's libraries; holds no descriptor of
// whoever started it.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

int main() {
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; ++fd) dup2(null, fd);
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    // As the first process of a PID namespace a signal without a handler is ignored: stop
    // on SIGTERM explicitly. (Outside one, the default action already does.)
    signal(SIGTERM, [](int) { _exit(0); });
    signal(SIGINT, [](int) { _exit(0); });
    for (;;) pause();
}
