# codecs/route: which route decodes what, and the meters it decides by.
# May include video/'s frame and info types (frame.hpp).
target_sources(imgpipe_codecs PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/route_steering.cpp
  ${CMAKE_CURRENT_LIST_DIR}/decode_meter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/video_route.cpp)
