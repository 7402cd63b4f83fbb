# packaging_consumer: samples/consumer, a project of its own, built against
# the installed prefix and run.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
build_project(${SOURCE_DIR}/samples/consumer ${WORK}/build ${PREFIX})
set(bin ${WORK}/build)

# The sample images installed with imgpipe (imgpipe_DATA_DIR of the package).
run(NAME "consumer, installed samples" OUTPUT out COMMAND ${bin}/imgpipe_consumer)
expect_match("consumer output" "batch 0: 8 x \\[3,224,224\\] float32 nchw" "${out}")
expect_match("consumer output" "20 images delivered in 3 batches, 0 failed" "${out}")
# Paths from the command line. A PNG: OpenCV's codecs come from
# libimgpipe_opencv_io.so, which the package's run path lets it find.
find_program(_readelf readelf)
if(_readelf)
  run(NAME "consumer's run path" OUTPUT out COMMAND ${_readelf} -d ${bin}/imgpipe_consumer)
  string(REPLACE "+" "\\+" _libre "${PREFIX}/${LIBDIR}")
  expect_match("consumer's RUNPATH (imgpipeConfig.cmake)" "(RUNPATH|RPATH)[^\n]*${_libre}" "${out}")
endif()
run(NAME "consumer, one file" OUTPUT out COMMAND ${bin}/imgpipe_consumer ${PREFIX}/share/imgpipe/samples/data/img_00009.png)
expect_match("consumer output" "1 images delivered in 1 batches" "${out}")
# No images: exit 1, saying so.
file(MAKE_DIRECTORY ${WORK}/empty)
run(NAME "consumer, empty folder" EXPECT 2 OUTPUT out COMMAND ${bin}/imgpipe_consumer ${WORK}/empty)
expect_match("consumer output" "no inputs found" "${out}")
# imgpipe::core alone.
run(NAME "print_config" OUTPUT out COMMAND ${bin}/imgpipe_print_config)
expect_match("print_config output" "sink:.*overwrite: false" "${out}")
