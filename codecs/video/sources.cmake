# codecs/video: the video frame (frame.cpp), the frame index (frame_index.cpp:
# frames in display order and their keyframes, for seeking), the reader (video_file.cpp,
# video_seek.cpp for seeks, with demuxer.cpp and damage.cpp, driving a decoder of video_decoder.hpp),
# NVDEC's packet filter, the libavcodec backend (libav/) and the NVDEC
# backend (nvdec/).
# May include route/ (NVDEC's capability table), never image/; libav/ and
# nvdec/ are reached from outside video/ only through its interfaces.
target_sources(imgpipe_codecs PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/frame.cpp
  ${CMAKE_CURRENT_LIST_DIR}/demuxer.cpp
  ${CMAKE_CURRENT_LIST_DIR}/frame_index.cpp
  ${CMAKE_CURRENT_LIST_DIR}/damage.cpp
  ${CMAKE_CURRENT_LIST_DIR}/video_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/video_seek.cpp
  ${CMAKE_CURRENT_LIST_DIR}/packet_filter.cpp
  ${CMAKE_CURRENT_LIST_DIR}/libav/libav_decoder.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvdec/cuvid.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvdec/nvdec_cache.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvdec/nvdec_decoder.cpp)
