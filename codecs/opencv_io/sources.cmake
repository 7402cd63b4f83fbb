# codecs/opencv_io: OpenCV's imgcodecs and videoio, loaded on first use from
# a module of their own (opencv_io.hpp says why and where it is looked for).
# The library holds the loader; the module, libimgpipe_opencv_io.so, links
# the two and is built, installed and bundled beside what uses it.
# Includes nothing of image/, video/ or route/; image/opencv/ and the stages
# reach OpenCV's codecs and capture through it.
target_sources(imgpipe_codecs PRIVATE ${CMAKE_CURRENT_LIST_DIR}/opencv_io.cpp)
target_link_libraries(imgpipe_codecs PRIVATE ${CMAKE_DL_LIBS})

add_library(imgpipe_opencv_io MODULE ${CMAKE_CURRENT_LIST_DIR}/module.cpp)
target_link_libraries(imgpipe_opencv_io PRIVATE opencv_core opencv_imgcodecs opencv_videoio
                      $<BUILD_INTERFACE:imgpipe_warnings>)
target_include_directories(imgpipe_opencv_io PRIVATE ${CMAKE_CURRENT_LIST_DIR})
set_target_properties(imgpipe_opencv_io PROPERTIES PREFIX "lib" OUTPUT_NAME imgpipe_opencv_io
                      CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON
                      LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
install(TARGETS imgpipe_opencv_io LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# Where the loader looks (opencv_io.hpp): the installed library folder,
# relative to the installed CLI and absolute, and the build tree.
file(RELATIVE_PATH _imgpipe_io_from_bin ${CMAKE_INSTALL_FULL_BINDIR}
     ${CMAKE_INSTALL_FULL_LIBDIR}/libimgpipe_opencv_io.so)
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/opencv_io.cpp PROPERTIES COMPILE_DEFINITIONS
  "IMGPIPE_OPENCV_IO_FROM_BIN=\"${_imgpipe_io_from_bin}\";IMGPIPE_OPENCV_IO_INSTALLED=\"${CMAKE_INSTALL_FULL_LIBDIR}/libimgpipe_opencv_io.so\";IMGPIPE_OPENCV_IO_BUILT=\"${PROJECT_BINARY_DIR}/lib/libimgpipe_opencv_io.so\"")
# Whatever links the codecs gets the module built too.
add_dependencies(imgpipe_codecs imgpipe_opencv_io)
