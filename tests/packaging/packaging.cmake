# Packaging tests (included by tests/CMakeLists.txt). packaging_install puts
# this build into a scratch prefix (a fixture); the others use it as an
# application would: find_package from a separate project (samples/consumer,
# the README's snippet, both with CMAKE_PREFIX_PATH only), pkg-config from a
# bare compiler command, and the .deb that cpack makes.
set(_pkg_work ${CMAKE_CURRENT_BINARY_DIR}/packaging)
set(_pkg_dir ${CMAKE_CURRENT_SOURCE_DIR}/packaging)
# The applications are compiled with this build's compiler, and with its
# sanitizers, whose runtime the installed static libraries call.
set(_pkg_flags "")
if(IMGPIPE_SANITIZE)
  set(_pkg_flags "-fsanitize=${IMGPIPE_SANITIZE}")
endif()
# The installed Python package is run by Debian's python3 (the python3 first
# on PATH may be a pyenv build without NumPy), when this build has it.
set(_pkg_python /usr/bin/python3)
if(NOT EXISTS ${_pkg_python})
  find_program(_pkg_python python3 REQUIRED)
endif()
set(_pkg_args -DPYTHON=${_pkg_python} -DWITH_PYTHON=$<TARGET_EXISTS:imgpipe_c> -DPREFIX=${_pkg_work}/prefix -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DBUILD_DIR=${PROJECT_BINARY_DIR}
    -DLIBDIR=${CMAKE_INSTALL_LIBDIR} -DVERSION=${PROJECT_VERSION} -DCXX=${CMAKE_CXX_COMPILER}
    "-DCXX_FLAGS=${_pkg_flags}" "-DGENERATOR=${CMAKE_GENERATOR}" -DCPACK=${CMAKE_CPACK_COMMAND})

add_test(NAME packaging_install COMMAND ${CMAKE_COMMAND} ${_pkg_args} -P ${_pkg_dir}/install.cmake)
set_tests_properties(packaging_install PROPERTIES FIXTURES_SETUP imgpipe_installed)
foreach(_t consumer readme_snippet pkg_config)
  add_test(NAME packaging_${_t}
           COMMAND ${CMAKE_COMMAND} ${_pkg_args} -DWORK=${_pkg_work}/${_t} -P ${_pkg_dir}/${_t}.cmake)
  set_tests_properties(packaging_${_t} PROPERTIES FIXTURES_REQUIRED imgpipe_installed TIMEOUT 600)
endforeach()
add_test(NAME packaging_deb COMMAND ${CMAKE_COMMAND} ${_pkg_args} -DWORK=${_pkg_work}/deb -P ${_pkg_dir}/deb.cmake)
set_tests_properties(packaging_deb PROPERTIES TIMEOUT 600)
