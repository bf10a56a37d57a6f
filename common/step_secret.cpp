// SPDX-License-Identifier: Apache-2.0
#include "common/step_secret.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"

namespace trellis {

namespace {

constexpr char digits[] = "0123456789abcdef";

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// The text of a secret file: read through one descriptor that is checked to be a regular file
// of this user's that nobody else may read, so that a secret others can see is not taken.
std::string read_secret_file(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) throw UsageError("TRELLIS_SECRET: cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    std::string text;
    bool usable = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    if (usable && st.st_uid == ::geteuid() && (st.st_mode & 077) == 0) {
        char buffer[256];
        ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n > 0) text.assign(buffer, std::size_t(n));
    }
    ::close(fd);
    if (!usable) throw UsageError("TRELLIS_SECRET: " + path + " is not a regular file");
    if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
        throw UsageError("TRELLIS_SECRET: " + path + " must be yours and readable by you alone (chmod 600 " + path +
                         ")");
    if (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
}

}  // namespace

std::string hex_text(const std::uint8_t* bytes, std::size_t size) {
    std::string text;
    for (std::size_t i = 0; i < size; ++i) {
        text += digits[bytes[i] >> 4];
        text += digits[bytes[i] & 15];
    }
    return text;
}

std::string make_step_secret() {
    SecretBytes bytes{};
    std::size_t filled = 0;
    while (filled < bytes.size()) {
        ssize_t n = ::getrandom(bytes.data() + filled, bytes.size() - filled, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw Error(std::string("cannot make a step secret: getrandom: ") + std::strerror(errno));
        filled += std::size_t(n);
    }
    return hex_text(bytes.data(), bytes.size());
}

SecretBytes parse_step_secret(const std::string& value) {
    std::string text = value.starts_with('/') ? read_secret_file(value) : value;
    SecretBytes bytes{};
    bool hex = text.size() == 2 * secret_size;
    for (std::size_t i = 0; hex && i < secret_size; ++i) {
        int high = hex_value(text[2 * i]), low = hex_value(text[2 * i + 1]);
        hex = high >= 0 && low >= 0;
        bytes[i] = std::uint8_t(high << 4 | low);
    }
    if (!hex)
        throw UsageError(std::string("TRELLIS_SECRET") + (value.starts_with('/') ? " (the file " + value + ")" : "") +
                         " is not 64 hex digits (" + std::to_string(text.size()) +
                         " characters); accepted: 64 hex digits, or the absolute path of a file of yours that holds "
                         "them; make one with: " +
                         how_to_make_a_secret);
    return bytes;
}

}  // namespace trellis
