# GPU JPEG decode with nvJPEG, loaded at run time (no nvjpeg.h or libnvjpeg
# needed to build): the loader (dlopen) and the batched decoder. In a build
# without CUDA the decoder compiles to a stub that reports itself
# unavailable; the loader builds either way.
target_sources(imgpipe_codecs PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/nvjpeg_loader.cpp
  ${CMAKE_CURRENT_LIST_DIR}/jpeg_gpu.cpp)
target_link_libraries(imgpipe_codecs PUBLIC ${CMAKE_DL_LIBS})
