# codecs/video: the video frame, the reader (demuxer, damage checks, the
# libav decoder) and the NVDEC backend.
target_sources(imgpipe_codecs PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/video_file.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nvdec/nvdec_decoder.cpp)
