// SPDX-License-Identifier: Apache-2.0
// The one move both allreduce schedules are made of: send a span of values to one rank while
// receiving a span of the same place in the buffer from another, segment by segment so that
// large buffers flow in pieces of bounded staging memory, the received values added to the
// span or replacing it. Values may travel compressed (bfloat16, float16); sums are always
// taken in float32.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "trainer/comm/transport.hpp"
#include "trainer/comm/wire_format.hpp"

namespace trellis::comm {

class SegmentedExchange {
public:
    SegmentedExchange(Transport& transport, std::size_t segment_bytes, WireFormat format);
    ~SegmentedExchange();
    SegmentedExchange(const SegmentedExchange&) = delete;
    SegmentedExchange& operator=(const SegmentedExchange&) = delete;

    // `out` goes to rank `to`, `in` comes from rank `from`; either may be empty, and the two
    // sides of a pair must give each other matching sizes.
    void exchange(int to, std::span<const float> out, int from, std::span<float> in, bool accumulate);
    // Compressed sums are rounded once by the rank that finished them, before they are passed
    // on, so that every rank ends with the same values. Nothing to do for float32.
    void round_to_wire(std::span<float> values);

private:
    void reserve(std::size_t elements);  // staging for pieces of up to this many elements

    Transport& transport_;
    std::size_t segment_elements_;
    WireFormat format_;
    std::vector<std::byte> outgoing_, incoming_;
};

}  // namespace trellis::comm
