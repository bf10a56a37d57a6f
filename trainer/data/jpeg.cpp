// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/jpeg.hpp"

#include <turbojpeg.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <new>

#include <jpeglib.h>

#include "trainer/data/data_error.hpp"

namespace trellis::data {
namespace {

// A header that claims more than this is corrupt or hostile; refusing it avoids allocating
// gigabytes for one sample. ImageNet's largest images are about 10 megapixels.
constexpr long long max_pixels = 200ll * 1000 * 1000;

std::string turbojpeg_error(void* handle) { return tjGetErrorStr2(static_cast<tjhandle>(handle)); }

bool only_warned(void* handle) { return tjGetErrorCode(static_cast<tjhandle>(handle)) == TJERR_WARNING; }

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
    if (tjDecompressHeader3(static_cast<tjhandle>(handle), jpeg.data(), jpeg.size(), &header.size.width,
                            &header.size.height, &subsampling, &header.colorspace) != 0)
        throw DataError(source + ": not a readable JPEG (" + std::to_string(jpeg.size()) +
                        " bytes): " + turbojpeg_error(handle));
    long long pixels = static_cast<long long>(header.size.width) * header.size.height;
    if (header.size.width <= 0 || header.size.height <= 0 || pixels > max_pixels)
        throw DataError(source + ": JPEG header says " + std::to_string(header.size.width) + "x" +
                        std::to_string(header.size.height) + " pixels (expected 1 to " + std::to_string(max_pixels) +
                        " pixels)");
    return header;
}

// libjpeg reports errors through a callback that must not return: it jumps back to
// decode_rows, whose frames between setjmp and longjmp hold nothing with a destructor.
struct ErrorJump {
    jpeg_error_mgr manager;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

extern "C" void jump_on_error(j_common_ptr info) {
    auto* errors = reinterpret_cast<ErrorJump*>(info->err);
    (*info->err->format_message)(info, errors->message);
    std::longjmp(errors->jump, 1);
}

// Warnings (extraneous bytes, a truncated scan) are tolerated, as decode() tolerates them.
extern "C" void ignore_message(j_common_ptr, int) {}

// Rows [first_row, end_row) of the image decoded at `scale`, columns from `first_column` for
// `columns` (widened by libjpeg-turbo to whole blocks), into `out`. False with the reason
// in `error` when libjpeg fails.
bool decode_rows(ByteView jpeg, DctScale scale, int first_column, int columns, int first_row, int end_row,
                 RgbImage& out, char* error) {
    jpeg_decompress_struct info;
    ErrorJump errors;
    info.err = jpeg_std_error(&errors.manager);
    errors.manager.error_exit = jump_on_error;
    errors.manager.emit_message = ignore_message;
    if (setjmp(errors.jump)) {
        std::snprintf(error, JMSG_LENGTH_MAX, "%s", errors.message);
        jpeg_destroy_decompress(&info);
        return false;
    }
    jpeg_create_decompress(&info);
    jpeg_mem_src(&info, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
    jpeg_read_header(&info, TRUE);
    info.scale_num = static_cast<unsigned>(scale.num);
    info.scale_denom = static_cast<unsigned>(scale.denom);
    info.out_color_space = JCS_RGB;
    jpeg_start_decompress(&info);
    auto x = static_cast<JDIMENSION>(first_column), width = static_cast<JDIMENSION>(columns);
    jpeg_crop_scanline(&info, &x, &width);
    out.x = int(x), out.y = first_row, out.width = int(width), out.height = end_row - first_row;
    out.pixels.resize(std::size_t(out.width) * std::size_t(out.height) * 3);
    if (first_row > 0) jpeg_skip_scanlines(&info, static_cast<JDIMENSION>(first_row));
    while (info.output_scanline < static_cast<JDIMENSION>(end_row)) {
        JSAMPROW row = out.pixels.data() + std::size_t(info.output_scanline - first_row) * width * 3;
        jpeg_read_scanlines(&info, &row, 1);
    }
    jpeg_abort_decompress(&info);  // the rows below the region are never decoded
    jpeg_destroy_decompress(&info);
    return true;
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

DctScale JpegDecoder::decode(ByteView jpeg, const std::string& source, RgbImage& out, int min_width, int min_height) {
    auto handle = static_cast<tjhandle>(handle_);
    JpegHeader header = read_jpeg_header(handle_, jpeg, source);
    JpegSize full = header.size;
    DctScale scale = min_width > 0 || min_height > 0 ? choose_dct_scale(full, min_width, min_height) : DctScale{};
    out.x = 0, out.y = 0;
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
    if (tjDecompress2(handle, jpeg.data(), jpeg.size(), target, out.width, 0, out.height, cmyk ? TJPF_CMYK : TJPF_RGB,
                      0) != 0 &&
        !only_warned(handle_))
        throw DataError(source + ": corrupt JPEG (" + std::to_string(full.width) + "x" + std::to_string(full.height) +
                        ", " + std::to_string(jpeg.size()) + " bytes): " + turbojpeg_error(handle_));
    if (cmyk) cmyk_to_rgb(cmyk_pixels, out);
    return scale;
}

DctScale JpegDecoder::decode_region(ByteView jpeg, const std::string& source, RgbImage& out, int min_width,
                                    int min_height, PixelRegion region) {
    JpegHeader header = read_jpeg_header(handle_, jpeg, source);
    if (header.colorspace == TJCS_CMYK || header.colorspace == TJCS_YCCK)
        return decode(jpeg, source, out, min_width, min_height);
    JpegSize full = header.size;
    DctScale scale = choose_dct_scale(full, min_width, min_height);
    int width = scaled_dimension(full.width, scale), height = scaled_dimension(full.height, scale);
    // The region in scaled pixels, with one more pixel on each side for the resampler's
    // neighbours, so that the result equals a whole decode's.
    auto low = [&](int value) { return std::max(0, value * scale.num / scale.denom - 1); };
    auto high = [&](int value, int limit) {
        return std::min(limit, (value * scale.num + scale.denom - 1) / scale.denom + 1);
    };
    int x0 = low(region.x), x1 = high(region.x + region.width, width);
    int y0 = low(region.y), y1 = high(region.y + region.height, height);
    char error[JMSG_LENGTH_MAX] = {};
    if (!decode_rows(jpeg, scale, x0, x1 - x0, y0, y1, out, error))
        throw DataError(source + ": corrupt JPEG (" + std::to_string(full.width) + "x" + std::to_string(full.height) +
                        ", " + std::to_string(jpeg.size()) + " bytes): " + error);
    return scale;
}

JpegEncoder::JpegEncoder() : handle_(tjInitCompress()) {
    if (!handle_) throw std::bad_alloc();
}

JpegEncoder::~JpegEncoder() { tjDestroy(static_cast<tjhandle>(handle_)); }

Bytes JpegEncoder::encode(const RgbImage& image, int quality) {
    if (image.width <= 0 || image.height <= 0 ||
        image.pixels.size() != static_cast<std::size_t>(image.width) * image.height * 3)
        throw DataError("JPEG encoder: image of " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                        " with " + std::to_string(image.pixels.size()) + " bytes (expected width*height*3)");
    unsigned char* buffer = nullptr;
    unsigned long size = 0;
    if (tjCompress2(static_cast<tjhandle>(handle_), image.pixels.data(), image.width, 0, image.height, TJPF_RGB,
                    &buffer, &size, TJSAMP_420, quality, 0) != 0) {
        std::string reason = turbojpeg_error(handle_);
        tjFree(buffer);
        throw DataError("JPEG encoder: " + reason);
    }
    Bytes bytes(buffer, buffer + size);
    tjFree(buffer);
    return bytes;
}

}  // namespace trellis::data
