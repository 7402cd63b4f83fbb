# codecs/image: the image decoder interface and its backends.
target_sources(imgpipe_codecs PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/libjpeg/jpeg_decode.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvjpeg/jpeg_engines.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvjpeg/engine_cache.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvjpeg/engine_scheduler.cpp)
include(${CMAKE_CURRENT_LIST_DIR}/nvjpeg/nvjpeg.cmake)
