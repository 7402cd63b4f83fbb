# Fails when library code logs through spdlog's process-wide default logger
# (spdlog::warn(...) and the like) or changes it, instead of logging through
# imgpipe::logger() (core/include/imgpipe/log.hpp). The CLI (pipeline/src/main.cpp)
# configures imgpipe's logger and is checked too.
#   cmake -DROOT=<source dir> -P tests/library_logger.cmake
if(NOT ROOT)
  message(FATAL_ERROR "library_logger.cmake: pass -DROOT=<source dir>")
endif()
set(found "")
foreach(layer IN ITEMS core kernels memory stages pipeline)
  file(GLOB_RECURSE sources "${ROOT}/${layer}/*.hpp" "${ROOT}/${layer}/*.h" "${ROOT}/${layer}/*.cpp"
       "${ROOT}/${layer}/*.cu" "${ROOT}/${layer}/*.cuh")
  foreach(src IN LISTS sources)
    file(STRINGS "${src}" hits REGEX
         "spdlog::(trace|debug|info|warn|error|critical|log|default_logger|set_default_logger|set_level|set_pattern)\\(")
    if(hits)
      file(RELATIVE_PATH rel "${ROOT}" "${src}")
      list(APPEND found "  ${rel}")
    endif()
  endforeach()
endforeach()
if(found)
  list(JOIN found "\n" text)
  message(FATAL_ERROR "spdlog's default logger used instead of imgpipe::logger():\n${text}")
endif()
