# codecs/parse: the JPEG parsers (markers, structural checks, entropy walk).
target_sources(imgpipe_codecs PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/jpeg_markers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jpeg_checks.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jpeg_entropy.cpp)
