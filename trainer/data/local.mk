# SPDX-License-Identifier: Apache-2.0
# libtrellis-data: the trainer's input pipeline: datasets (ImageNet folder tree, TFRecord
# shards, IDX files, synthetic), JPEG decoding, augmentation and the prefetching pipeline. Its protobuf
# wire helpers also serve the TensorBoard event writer.
noinst_LTLIBRARIES += trainer/libtrellis-data.la
trainer_libtrellis_data_la_SOURCES = \
	trainer/data/augment.cpp trainer/data/augment.hpp \
	trainer/data/batch.hpp \
	trainer/data/batch_plan.cpp trainer/data/batch_plan.hpp \
	trainer/data/bytes.hpp \
	trainer/data/crc32c.cpp trainer/data/crc32c.hpp \
	trainer/data/crop_box.cpp trainer/data/crop_box.hpp \
	trainer/data/data_error.hpp \
	trainer/data/dataset.hpp \
	trainer/data/example.cpp trainer/data/example.hpp \
	trainer/data/grey_transform.cpp trainer/data/grey_transform.hpp \
	trainer/data/pixel_output.cpp trainer/data/pixel_output.hpp \
	trainer/data/idx_dataset.cpp trainer/data/idx_dataset.hpp \
	trainer/data/idx_file.cpp trainer/data/idx_file.hpp \
	trainer/data/image_folder.cpp trainer/data/image_folder.hpp \
	trainer/data/jpeg.cpp trainer/data/jpeg.hpp \
	trainer/data/open_dataset.cpp trainer/data/open_dataset.hpp \
	trainer/data/pipeline.cpp trainer/data/pipeline.hpp \
	trainer/data/protobuf_wire.cpp trainer/data/protobuf_wire.hpp \
	trainer/data/read_only_file.cpp trainer/data/read_only_file.hpp \
	trainer/data/rng.hpp \
	trainer/data/synthetic.cpp trainer/data/synthetic.hpp \
	trainer/data/tfrecord.cpp trainer/data/tfrecord.hpp \
	trainer/data/tfrecord_dataset.cpp trainer/data/tfrecord_dataset.hpp \
	trainer/data/tfrecord_index.cpp trainer/data/tfrecord_index.hpp \
	trainer/data/warning.cpp trainer/data/warning.hpp
trainer_libtrellis_data_la_CPPFLAGS = $(AM_CPPFLAGS) $(TURBOJPEG_CFLAGS) $(LIBJPEG_CFLAGS) $(ZLIB_CFLAGS)
trainer_libtrellis_data_la_CXXFLAGS = $(AM_CXXFLAGS) -pthread
# libtool passes -pthread on to whatever links the library (inherited_linker_flags).
trainer_libtrellis_data_la_LDFLAGS = $(AM_LDFLAGS) -pthread
trainer_libtrellis_data_la_LIBADD = $(TURBOJPEG_LIBS) $(LIBJPEG_LIBS) $(ZLIB_LIBS)
DATA_LIBS = trainer/libtrellis-data.la common/libtrellis-common.la

# Its unit tests, in one binary (the JPEG test calls TurboJPEG directly to make a CMYK file).
unit_tests += tests/unit/data_test
tests_unit_data_test_SOURCES = tests/unit/crc32c_test.cpp tests/unit/protobuf_wire_test.cpp \
	tests/unit/tfrecord_test.cpp tests/unit/example_test.cpp tests/unit/jpeg_test.cpp tests/unit/augment_test.cpp \
	tests/unit/batch_plan_test.cpp tests/unit/image_folder_test.cpp tests/unit/tfrecord_dataset_test.cpp \
	tests/unit/pipeline_test.cpp tests/unit/synthetic_test.cpp tests/unit/data_fixtures.hpp tests/unit/idx_test.cpp
tests_unit_data_test_CPPFLAGS = $(UNIT_CPPFLAGS) $(TURBOJPEG_CFLAGS) $(ZLIB_CFLAGS)
tests_unit_data_test_CXXFLAGS = $(AM_CXXFLAGS) -pthread
tests_unit_data_test_LDFLAGS = $(AM_LDFLAGS) -pthread
tests_unit_data_test_LDADD = tests/unit/libcatch-main.la $(DATA_LIBS) $(ZLIB_LIBS)

# A small learnable ImageNet-shaped dataset (folder tree and TFRecord shards) for the
# trainer's tests: make_dataset --out DIR --classes K --train-per-class N --val-per-class M --size S
check_PROGRAMS += tests/data/make_dataset
tests_data_make_dataset_SOURCES = tests/data/make_dataset.cpp
tests_data_make_dataset_LDADD = $(DATA_LIBS)
