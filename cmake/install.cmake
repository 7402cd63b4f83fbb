# What `cmake --install build --prefix P` puts under P, and the .deb that
# `cpack -G DEB` (in the build folder) makes of it:
#   bin/imgpipe
#   include/imgpipe/...                      the public headers
#   lib/libimgpipe_{core,kernels,memory,codecs,stages,pipeline}.a
#   lib/libimgpipe_opencv_io.so              OpenCV's image codecs and video capture, loaded
#                                            when first needed (codecs/opencv_io)
#   lib/libimgpipe_c.so, lib/python3/dist-packages/imgpipe/   the C API and the Python package
#                                            (python/CMakeLists.txt; with IMGPIPE_BUILD_PYTHON)
#   lib/cmake/imgpipe/                       find_package(imgpipe): imgpipe::imgpipe, imgpipe::core, ...
#   lib/pkgconfig/imgpipe.pc                 pkg-config --cflags --libs imgpipe
#   share/imgpipe/pipeline.yaml              the default config, reading ...
#   share/imgpipe/samples/data/              ... the sample images (GPL-2+, their LICENSE beside them)
#   share/doc/imgpipe/                       LICENSE (Apache-2.0), README.md, copyright
include(CMakePackageConfigHelpers)

set(IMGPIPE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/imgpipe)
install(TARGETS imgpipe_core imgpipe_kernels imgpipe_memory imgpipe_codecs imgpipe_stages imgpipe_pipeline
        EXPORT imgpipeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS imgpipe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Public headers only: core's value types, the memory resources, the Pipeline.
install(DIRECTORY core/include/imgpipe memory/include/imgpipe pipeline/include/imgpipe
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT imgpipeTargets NAMESPACE imgpipe:: DESTINATION ${IMGPIPE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/imgpipeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/imgpipeConfig.cmake
  INSTALL_DESTINATION ${IMGPIPE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/imgpipeConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/imgpipeConfig.cmake ${PROJECT_BINARY_DIR}/imgpipeConfigVersion.cmake
        DESTINATION ${IMGPIPE_CMAKE_DIR})

# pkg-config: relocatable (the prefix is found from the .pc file's folder).
# The libraries are static, so the packages they use are public requirements
# (Debian ships opencv4.pc, tbb.pc, yaml-cpp.pc, spdlog.pc, fmt.pc,
# libjpeg.pc); CUDA's runtime has no .pc file: its folder is named.
file(RELATIVE_PATH IMGPIPE_PC_TO_PREFIX /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
string(REGEX REPLACE "/$" "" IMGPIPE_PC_TO_PREFIX "${IMGPIPE_PC_TO_PREFIX}")
set(IMGPIPE_PC_REQUIRES "opencv4 tbb yaml-cpp spdlog fmt libjpeg libavformat libavcodec libavutil libswscale")
set(IMGPIPE_PC_LIBS "-ldl -pthread")
if(IMGPIPE_HAS_CUDA)
  set(IMGPIPE_PC_LIBS "-L${CUDAToolkit_LIBRARY_DIR} -lcudart ${IMGPIPE_PC_LIBS}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/imgpipe.pc.in ${PROJECT_BINARY_DIR}/imgpipe.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/imgpipe.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The sample images, and the default config with its input path pointing at
# them where they are installed (configs/pipeline.yaml says samples/data,
# relative to a source tree). Written at install time: the prefix is known
# only then (cmake --install --prefix P; /usr inside cpack's staging folder).
install(DIRECTORY samples/data/ DESTINATION ${CMAKE_INSTALL_DATADIR}/imgpipe/samples/data)
install(CODE "
  set(_data \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/imgpipe\")
  file(READ \"${PROJECT_SOURCE_DIR}/configs/pipeline.yaml\" _yaml)
  string(REPLACE \"paths: [samples/data]\" \"paths: [\${_data}/samples/data]\" _out \"\${_yaml}\")
  if(_out STREQUAL _yaml)
    message(FATAL_ERROR \"configs/pipeline.yaml no longer says 'paths: [samples/data]': update cmake/install.cmake\")
  endif()
  message(STATUS \"Installing: \$ENV{DESTDIR}\${_data}/pipeline.yaml (input.paths: \${_data}/samples/data)\")
  file(WRITE \"\$ENV{DESTDIR}\${_data}/pipeline.yaml\" \"\${_out}\")
")
install(FILES LICENSE README.md cmake/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})

# cpack -G DEB: one package, imgpipe_<version>_<arch>.deb, with the CLI, the
# static libraries, headers, CMake and pkg-config files, config and samples.
# Depends: the shared libraries the CLI uses, from dpkg-shlibdeps. Recommends:
# the -dev packages an application needs to link the static libraries. A CUDA
# build's CLI also needs NVIDIA's libcudart.so (no Debian package provides
# CUDA 12/13's; dpkg-shlibdeps skips it).
set(IMGPIPE_PACKAGE_CONTACT "imgpipe maintainers <imgpipe@invalid>" CACHE STRING
    "Maintainer field of the .deb (cpack -G DEB)")
set(CPACK_PACKAGE_NAME imgpipe)
set(CPACK_PACKAGE_VENDOR imgpipe)
set(CPACK_PACKAGE_CONTACT "${IMGPIPE_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "streaming image preprocessing: folders of images to normalised tensor batches on the GPU")
# The long description (CPack puts the summary line before it).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "imgpipe decodes images and videos in parallel (oneTBB stages, OpenCV, the GPU's JPEG engines through \
nvJPEG), resizes and normalises them and delivers batches in GPU memory, reporting every stage's throughput. \
This package holds the imgpipe command, the C++ library (static, with headers, a CMake package and \
imgpipe.pc), the default config and sample images.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
# Staged with DESTDIR, so that CMAKE_INSTALL_PREFIX is /usr while installing
# (the installed pipeline.yaml names its sample folder from it).
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "libopencv-dev, libtbb-dev, libyaml-cpp-dev, libspdlog-dev, libfmt-dev, libjpeg-dev, pkg-config")
include(CPack)
