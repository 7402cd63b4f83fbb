# Helpers of the packaging test scripts (cmake -P).

# run(NAME <step> [OUTPUT <var>] [EXPECT <rc>] COMMAND <cmd> <args>...): runs
# the command, prints its output, fails the test unless it exits with EXPECT
# (default 0); OUTPUT receives stdout and stderr together.
function(run)
  cmake_parse_arguments(R "" "NAME;OUTPUT;EXPECT" "COMMAND" ${ARGN})
  if(NOT DEFINED R_EXPECT)
    set(R_EXPECT 0)
  endif()
  string(REPLACE ";" " " _shown "${R_COMMAND}")
  message(STATUS "${R_NAME}: ${_shown}")
  execute_process(COMMAND ${R_COMMAND} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  message("${_out}")
  if(NOT "${_rc}" STREQUAL "${R_EXPECT}")
    message(FATAL_ERROR "${R_NAME}: exit ${_rc}, expected ${R_EXPECT}")
  endif()
  if(R_OUTPUT)
    set(${R_OUTPUT} "${_out}" PARENT_SCOPE)
  endif()
endfunction()

# expect_match(<what> <regex> <text>): fails unless the text matches.
function(expect_match what regex text)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: expected to match '${regex}'")
  endif()
endfunction()

# Configures and builds the CMake project in <src> into <bin> against
# <prefix>: CMAKE_PREFIX_PATH is all it is told of imgpipe.
function(build_project src bin prefix)
  file(REMOVE_RECURSE ${bin})
  run(NAME "configure ${src}" COMMAND ${CMAKE_COMMAND} -S ${src} -B ${bin} -G ${GENERATOR}
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
      -DCMAKE_PREFIX_PATH=${prefix})
  run(NAME "build ${src}" COMMAND ${CMAKE_COMMAND} --build ${bin})
endfunction()

# check_python(<what> <pythonpath> <samples> <library>): Debian's python3, with
# only <pythonpath> added to its path, imports the installed package, which
# must load <library>, and delivers batches of <samples> (python_deliver.py).
function(check_python what pythonpath samples library)
  run(NAME "${what}: import imgpipe, deliver batches" OUTPUT out
      COMMAND ${CMAKE_COMMAND} -E env --unset=IMGPIPE_C_LIBRARY --unset=LD_LIBRARY_PATH
              PYTHONPATH=${pythonpath} PYTHONDONTWRITEBYTECODE=1
              ${PYTHON} ${CMAKE_CURRENT_LIST_DIR}/python_deliver.py ${samples} ${library})
  expect_match("${what}" "imgpipe [0-9.]+ from ${pythonpath}/imgpipe: 20 images in 3 batches" "${out}")
endfunction()
