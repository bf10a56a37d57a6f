// SPDX-License-Identifier: Apache-2.0
#include "trainer/data/image_folder.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <system_error>

#include "trainer/data/data_error.hpp"
#include "trainer/data/read_only_file.hpp"

namespace trellis::data {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> sorted_entries(const fs::path& folder, bool want_directories) {
    std::vector<std::string> names;
    std::error_code error;
    fs::directory_iterator it(folder, error), end;
    if (error) throw DataError(folder.string() + ": cannot list: " + error.message());
    for (; it != end; it.increment(error)) {
        if (error) throw DataError(folder.string() + ": cannot list: " + error.message());
        std::string name = it->path().filename().string();
        if (name.empty() || name[0] == '.') continue;  // .DS_Store, .snapshot, editors' files
        std::error_code type_error;
        bool is_directory = it->is_directory(type_error);
        bool is_file = it->is_regular_file(type_error);
        if (want_directories ? is_directory : is_file) names.push_back(std::move(name));
    }
    std::sort(names.begin(), names.end());
    return names;
}

}  // namespace

bool has_jpeg_extension(const std::string& file_name) {
    auto dot = file_name.rfind('.');
    if (dot == std::string::npos) return false;
    std::string extension = file_name.substr(dot + 1);
    for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return extension == "jpeg" || extension == "jpg";
}

ImageFolderDataset::ImageFolderDataset(std::string root, std::string split)
    : split_dir_((fs::path(root) / split).string()) {
    const std::string layout = " (expected " + root + "/" + split + "/<class>/*.JPEG)";
    std::error_code error;
    if (!fs::is_directory(split_dir_, error)) throw DataSpecError(split_dir_ + ": no such folder" + layout);
    fs::path train_dir = fs::path(root) / "train";
    bool classes_from_train = split != "train" && fs::is_directory(train_dir, error);
    classes_ = sorted_entries(classes_from_train ? train_dir : fs::path(split_dir_), true);
    if (classes_.empty())
        throw DataSpecError((classes_from_train ? train_dir.string() : split_dir_) + ": no class folders" + layout);

    std::vector<std::string> present = sorted_entries(split_dir_, true);
    for (const std::string& name : present) {
        auto it = std::lower_bound(classes_.begin(), classes_.end(), name);
        if (it == classes_.end() || *it != name)
            throw DataSpecError(split_dir_ + "/" + name + ": class folder not in " + train_dir.string() + "'s " +
                                std::to_string(classes_.size()) + " classes: the labels would not match training");
        list_class(name, static_cast<int>(it - classes_.begin()));
    }
    if (labels_.empty())
        throw DataSpecError(split_dir_ + ": no .JPEG/.jpg/.jpeg files in its " + std::to_string(present.size()) +
                            " class folders" + layout);
}

void ImageFolderDataset::list_class(const std::string& name, int label) {
    for (const std::string& file : sorted_entries(fs::path(split_dir_) / name, false)) {
        if (!has_jpeg_extension(file)) continue;
        names_ += name;
        names_ += '/';
        names_ += file;
        name_ends_.push_back(names_.size());
        labels_.push_back(label);
    }
}

std::string ImageFolderDataset::path(std::size_t index) const {
    std::size_t begin = index == 0 ? 0 : name_ends_[index - 1];
    return split_dir_ + "/" + names_.substr(begin, name_ends_[index] - begin);
}

EncodedSample ImageFolderDataset::load(std::size_t index) const {
    std::string file = path(index);
    Bytes bytes = read_whole_file(file);
    return {std::move(bytes), labels_[index], std::move(file)};
}

std::string ImageFolderDataset::describe() const {
    return "image folder " + split_dir_ + ": " + std::to_string(size()) + " images, " +
           std::to_string(classes_.size()) + " classes";
}

}  // namespace trellis::data
