#include "trainer/data/jpeg.hpp"

#include <turbojpeg.h>

#include <new>

#include "trainer/data/data_error.hpp"

namespace trellis::data {
namespace {

// A header that claims more than this is corrupt or hostile; refusing it avoids allocating
// gigabytes for one sample. ImageNet's largest images are about 10 megapixels.
constexpr long long max_pixels = 200ll * 1000 * 1000;

std::string turbojpeg_error(void* handle) { return tjGetErrorStr2(static_cast<tjhandle>(handle)); }

bool only_warned(void* handle) {
    return tjGetErrorCode(static_cast<tjhandle>(handle)) == TJERR_WARNING;
}

// Adobe CMYK JPEGs (a few dozen in ImageNet) store inverted ink values; with those,
// RGB = C*K/255 per channel. TurboJPEG cannot convert CMYK to RGB itself.
void cmyk_to_rgb(const std::vector<std::uint8_t>& cmyk, RgbImage& out) {
    std::size_t pixels = static_cast<std::size_t>(out.width) * out.height;
    out.pixels.resize(pixels * 3);
    for (std::size_t i = 0; i < pixels; ++i) {
        unsigned k = cmyk[i * 4 + 3];
        for (int c = 0; c < 3; ++c)
            out.pixels[i * 3 + c] = static_cast<std::uint8_t>((cmyk[i * 4 + c] * k + 127) / 255);
    }
}

struct JpegHeader {
    JpegSize size;
    int colorspace = 0;
};

JpegHeader read_jpeg_header(void* handle, ByteView jpeg, const std::string& source) {
    JpegHeader header;
    int subsampling = 0;
    if (tjDecompressHeader3(static_cast<tjhandle>(handle), jpeg.data(), jpeg.size(),
                            &header.size.width, &header.size.height, &subsampling,
                            &header.colorspace) != 0)
        throw DataError(source + ": not a readable JPEG (" + std::to_string(jpeg.size()) +
                        " bytes): " + turbojpeg_error(handle));
    long long pixels = static_cast<long long>(header.size.width) * header.size.height;
    if (header.size.width <= 0 || header.size.height <= 0 || pixels > max_pixels)
        throw DataError(source + ": JPEG header says " + std::to_string(header.size.width) + "x" +
                        std::to_string(header.size.height) + " pixels (expected 1 to " +
                        std::to_string(max_pixels) + " pixels)");
    return header;
}

}  // namespace

int scaled_dimension(int dimension, DctScale scale) {
    tjscalingfactor factor{scale.num, scale.denom};
    return TJSCALED(dimension, factor);
}

DctScale choose_dct_scale(JpegSize full, int min_width, int min_height) {
    int count = 0;
    const tjscalingfactor* factors = tjGetScalingFactors(&count);
    DctScale best;
    long long best_area = static_cast<long long>(full.width) * full.height;
    for (int i = 0; i < count; ++i) {
        DctScale scale{factors[i].num, factors[i].denom};
        // Only 1/2, 1/4 and 1/8: libjpeg-turbo has SIMD code for those reduced IDCTs, while
        // 7/8, 3/4 and 5/8 run in plain C and decode slower than full size (500x375 photo:
        // 1/1 1.2 ms, 7/8 1.9 ms, 3/4 1.5 ms, 5/8 1.4 ms, 1/2 0.96 ms, 1/4 0.89 ms).
        if (scale.num != 1 || scale.denom == 1) continue;
        int width = scaled_dimension(full.width, scale);
        int height = scaled_dimension(full.height, scale);
        long long area = static_cast<long long>(width) * height;
        if (width >= min_width && height >= min_height && area < best_area) {
            best = scale;
            best_area = area;
        }
    }
    return best;
}

JpegDecoder::JpegDecoder() : handle_(tjInitDecompress()) {
    if (!handle_) throw std::bad_alloc();
}

JpegDecoder::~JpegDecoder() { tjDestroy(static_cast<tjhandle>(handle_)); }

JpegSize JpegDecoder::read_header(ByteView jpeg, const std::string& source) {
    return read_jpeg_header(handle_, jpeg, source).size;
}

DctScale JpegDecoder::decode(ByteView jpeg, const std::string& source, RgbImage& out, int min_width,
                             int min_height) {
    auto handle = static_cast<tjhandle>(handle_);
    JpegHeader header = read_jpeg_header(handle_, jpeg, source);
    JpegSize full = header.size;
    DctScale scale = min_width > 0 || min_height > 0 ? choose_dct_scale(full, min_width, min_height)
                                                     : DctScale{};
    out.width = scaled_dimension(full.width, scale);
    out.height = scaled_dimension(full.height, scale);
    bool cmyk = header.colorspace == TJCS_CMYK || header.colorspace == TJCS_YCCK;
    std::vector<std::uint8_t> cmyk_pixels;
    std::uint8_t* target = nullptr;
    if (cmyk) {
        cmyk_pixels.resize(static_cast<std::size_t>(out.width) * out.height * 4);
        target = cmyk_pixels.data();
    } else {
        out.pixels.resize(static_cast<std::size_t>(out.width) * out.height * 3);
        target = out.pixels.data();
    }
    // Asking for exactly the scaled size makes TurboJPEG pick that scaling factor.
    if (tjDecompress2(handle, jpeg.data(), jpeg.size(), target, out.width, 0, out.height,
                      cmyk ? TJPF_CMYK : TJPF_RGB, 0) != 0 &&
        !only_warned(handle_))
        throw DataError(source + ": corrupt JPEG (" + std::to_string(full.width) + "x" +
                        std::to_string(full.height) + ", " + std::to_string(jpeg.size()) +
                        " bytes): " + turbojpeg_error(handle_));
    if (cmyk) cmyk_to_rgb(cmyk_pixels, out);
    return scale;
}

JpegEncoder::JpegEncoder() : handle_(tjInitCompress()) {
    if (!handle_) throw std::bad_alloc();
}

JpegEncoder::~JpegEncoder() { tjDestroy(static_cast<tjhandle>(handle_)); }

Bytes JpegEncoder::encode(const RgbImage& image, int quality) {
    if (image.width <= 0 || image.height <= 0 ||
        image.pixels.size() != static_cast<std::size_t>(image.width) * image.height * 3)
        throw DataError("JPEG encoder: image of " + std::to_string(image.width) + "x" +
                        std::to_string(image.height) + " with " +
                        std::to_string(image.pixels.size()) + " bytes (expected width*height*3)");
    unsigned char* buffer = nullptr;
    unsigned long size = 0;
    if (tjCompress2(static_cast<tjhandle>(handle_), image.pixels.data(), image.width, 0,
                    image.height, TJPF_RGB, &buffer, &size, TJSAMP_420, quality, 0) != 0) {
        std::string reason = turbojpeg_error(handle_);
        tjFree(buffer);
        throw DataError("JPEG encoder: " + reason);
    }
    Bytes bytes(buffer, buffer + size);
    tjFree(buffer);
    return bytes;
}

}  // namespace trellis::data
