# codecs/image: the image decoder interface and its backends: libjpeg/ and
# opencv/ (the CPU's), nvjpeg/ (the GPU's JPEG engines).
# May include parse/ and route/ (the decode meter), never video/; a backend
# no other backend; nvjpeg/'s declarations and loader stay inside nvjpeg/.
target_sources(imgpipe_codecs PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/image_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/libjpeg/jpeg_decode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/libjpeg/libjpeg_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/opencv/opencv_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvjpeg/jpeg_engines.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvjpeg/engine_cache.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvjpeg/engine_scheduler.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvjpeg/nvjpeg_backend.cpp)
include(${CMAKE_CURRENT_LIST_DIR}/nvjpeg/nvjpeg.cmake)
