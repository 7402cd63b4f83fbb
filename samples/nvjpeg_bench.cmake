# Raw batched nvJPEG decode throughput (GPU builds only; libnvjpeg is loaded
# at run time):
#   imgpipe_bench_nvjpeg --dir FOLDER [--backends hardware_device,hardware,gpu_hybrid]
#                        [--batches 32,128,256] [--passes 7] [--json FILE]
if(IMGPIPE_HAS_CUDA)
  add_executable(imgpipe_bench_nvjpeg ${CMAKE_CURRENT_LIST_DIR}/bench_nvjpeg.cpp)
  target_link_libraries(imgpipe_bench_nvjpeg PRIVATE imgpipe::codecs CUDA::cudart imgpipe_warnings)
endif()

# Where a fresh process's time goes before nvJPEG's hardware decoder is ready:
#   imgpipe_nvjpeg_startup [seq|overlap|repeat]
if(IMGPIPE_HAS_CUDA)
  add_executable(imgpipe_nvjpeg_startup ${CMAKE_CURRENT_LIST_DIR}/nvjpeg_startup.cpp)
  target_link_libraries(imgpipe_nvjpeg_startup PRIVATE imgpipe::codecs CUDA::cudart imgpipe_warnings)
endif()
