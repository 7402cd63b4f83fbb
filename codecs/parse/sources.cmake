# codecs/parse: the parsers (image headers; JPEG markers, structural checks,
# entropy walk).
# Below the decoders: includes nothing of image/, video/ or route/.
target_sources(imgpipe_codecs PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/image_header.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jpeg_markers.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jpeg_checks.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jpeg_entropy.cpp)
