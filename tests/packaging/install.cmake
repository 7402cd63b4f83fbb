# packaging_install: `cmake --install` of this build into a scratch prefix.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(REMOVE_RECURSE ${PREFIX})
run(NAME install COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX})
foreach(f bin/imgpipe ${LIBDIR}/libimgpipe_opencv_io.so include/imgpipe/pipeline.hpp ${LIBDIR}/cmake/imgpipe/imgpipeConfig.cmake
          ${LIBDIR}/pkgconfig/imgpipe.pc share/imgpipe/pipeline.yaml share/imgpipe/samples/data/img_00000.jpg
          share/imgpipe/samples/data/LICENSE share/doc/imgpipe/LICENSE)
  if(NOT EXISTS ${PREFIX}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
# The Python package, for Debian's python3, finding the installed library.
if(WITH_PYTHON)
  foreach(f ${LIBDIR}/libimgpipe_c.so lib/python3/dist-packages/imgpipe/__init__.py
            lib/python3/dist-packages/imgpipe/py.typed)
    if(NOT EXISTS ${PREFIX}/${f})
      message(FATAL_ERROR "not installed: ${f}")
    endif()
  endforeach()
  check_python("installed package" ${PREFIX}/lib/python3/dist-packages ${PREFIX}/share/imgpipe/samples/data
               ${PREFIX}/${LIBDIR}/libimgpipe_c.so)
endif()
