# Fails when a file includes a header of a layer above its own, or breaks a
# rule of the codecs layer's folders (codecs/README.md):
#  - codecs/parse/ is below the decoders: it includes nothing of image/,
#    video/ or route/;
#  - image/ and video/ include nothing of each other;
#  - a backend (a folder inside image/ or video/: libjpeg/, opencv/,
#    nvjpeg/, nvdec/, libav/) includes no other backend's headers;
#  - a backend's private headers are included only inside its kind's folder:
#    nvJPEG's declarations and loader (image/nvjpeg/nvjpeg_api.hpp,
#    nvjpeg_loader.hpp) only in image/nvjpeg/, the CPU image backends
#    (image/libjpeg/, image/opencv/) only in image/, the video decoders
#    (video/nvdec/, video/libav/) only in video/. Stages and the pipeline
#    reach them through the interfaces (image/image_decoder.hpp,
#    video/video_file.hpp, video/video_devices.hpp, ...).
# An include without a folder ("x.hpp") is taken as the including file's own
# folder's. Layers, lowest first: core < kernels < memory < codecs < stages < pipeline.
#   cmake -DROOT=<source dir> -P tests/layers.cmake
# Run by the build (target imgpipe_check_layers) and by CTest (layers_check).
if(NOT ROOT)
  message(FATAL_ERROR "layers.cmake: pass -DROOT=<source dir>")
endif()
set(layers core kernels memory codecs stages pipeline)
# Where each layer's headers are reachable by an include string: "<layer>/..."
# from the source root, and the public headers "imgpipe/..." under include/.
set(public_core "imgpipe/(types|error|config|batch|report|log)\\.hpp")
set(public_memory "imgpipe/memory/[a-z_]+\\.hpp")
set(public_pipeline "imgpipe/pipeline\\.hpp")
set(errors "")

# The codecs folders' rules for one include `inc` of file `rel` (both
# relative to ROOT); appends to `errors` in the caller's scope.
macro(codecs_rules rel inc)
  set(_why "")
  if("${rel}" MATCHES "^codecs/parse/" AND "${inc}" MATCHES "^codecs/(image|video|route)/")
    set(_why "codecs/parse/ is below the decoders")
  elseif("${rel}" MATCHES "^codecs/image/" AND "${inc}" MATCHES "^codecs/video/")
    set(_why "image/ and video/ are apart")
  elseif("${rel}" MATCHES "^codecs/video/" AND "${inc}" MATCHES "^codecs/image/")
    set(_why "image/ and video/ are apart")
  elseif("${inc}" MATCHES "^codecs/image/nvjpeg/nvjpeg_(api|loader)\\.hpp$" AND NOT "${rel}" MATCHES "^codecs/image/nvjpeg/")
    set(_why "nvJPEG's declarations are private to codecs/image/nvjpeg/")
  elseif("${inc}" MATCHES "^codecs/image/(libjpeg|opencv)/" AND NOT "${rel}" MATCHES "^codecs/image/")
    set(_why "a CPU image backend is reached through codecs/image/image_decoder.hpp")
  elseif("${inc}" MATCHES "^codecs/video/(nvdec|libav)/" AND NOT "${rel}" MATCHES "^codecs/video/")
    set(_why "a video decoder is reached through codecs/video/'s interfaces")
  elseif("${rel}" MATCHES "^codecs/(image|video)/([a-z0-9_]+)/")
    set(_from "${CMAKE_MATCH_1}/${CMAKE_MATCH_2}")
    if("${inc}" MATCHES "^codecs/(image|video)/([a-z0-9_]+)/")
      # (a second if: ${CMAKE_MATCH_n} in the same condition would be the old match)
      if(NOT "${CMAKE_MATCH_1}/${CMAKE_MATCH_2}" STREQUAL "${_from}")
        set(_why "a backend includes no other backend")
      endif()
    endif()
  endif()
  if(_why)
    list(APPEND errors "  ${rel} includes \"${inc}\": ${_why}")
  endif()
endmacro()

set(rank 0)
foreach(layer IN LISTS layers)
  file(GLOB_RECURSE sources "${ROOT}/${layer}/*.hpp" "${ROOT}/${layer}/*.h" "${ROOT}/${layer}/*.cpp"
       "${ROOT}/${layer}/*.cu" "${ROOT}/${layer}/*.cuh")
  foreach(src IN LISTS sources)
    file(STRINGS "${src}" includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[^\"]+\"")
    file(RELATIVE_PATH rel "${ROOT}" "${src}")
    get_filename_component(dir "${rel}" DIRECTORY)
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" inc "${line}")
      if(NOT inc MATCHES "/" AND EXISTS "${ROOT}/${dir}/${inc}")
        set(inc "${dir}/${inc}")
      endif()
      codecs_rules("${rel}" "${inc}")
      set(other_rank 0)
      foreach(other IN LISTS layers)
        set(hit OFF)
        if(inc MATCHES "^${other}/")
          set(hit ON)
        elseif(DEFINED public_${other} AND inc MATCHES "^${public_${other}}$")
          set(hit ON)
        endif()
        if(hit AND other_rank GREATER rank)
          list(APPEND errors "  ${rel} (${layer}) includes \"${inc}\" (${other})")
        endif()
        math(EXPR other_rank "${other_rank} + 1")
      endforeach()
    endforeach()
  endforeach()
  math(EXPR rank "${rank} + 1")
endforeach()
if(errors)
  list(JOIN errors "\n" text)
  message(FATAL_ERROR "includes that climb a layer (core < kernels < memory < codecs < stages < pipeline) "
                      "or break a rule of codecs/'s folders (codecs/README.md):\n${text}")
endif()
