// SPDX-License-Identifier: Apache-2.0
// The half of skopeo_words_test.sh that asks trellis: reads skopeo's stderr on stdin and
// prints how the registry client classifies it with the exit status given.
//   skopeo_words STATUS < STDERR
#include <iostream>
#include <iterator>
#include <string>

#include "agent/image/skopeo.hpp"

int main(int argc, char** argv) {
    using trellis::agent::SkopeoFailure;
    if (argc != 2) {
        std::cerr << "usage: skopeo_words STATUS < STDERR\n";
        return 2;
    }
    std::string said((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    switch (trellis::agent::classify_skopeo(std::stoi(argv[1]), said)) {
    case SkopeoFailure::unauthorized: std::cout << "unauthorized\n"; break;
    case SkopeoFailure::not_found: std::cout << "not_found\n"; break;
    case SkopeoFailure::plain_http: std::cout << "plain_http\n"; break;
    case SkopeoFailure::certificate: std::cout << "certificate\n"; break;
    case SkopeoFailure::unreachable: std::cout << "unreachable\n"; break;
    case SkopeoFailure::no_space: std::cout << "no_space\n"; break;
    case SkopeoFailure::other: std::cout << "other\n"; break;
    }
    return 0;
}
