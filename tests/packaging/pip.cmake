# packaging_pip: `pip install` of the repository (pyproject.toml, setup.py)
# into a fresh venv of Debian's python3, offline (--no-build-isolation
# --no-index: setuptools and wheel from python3-setuptools, python3-wheel;
# --system-site-packages: NumPy from python3-numpy), on the host backend; then
# `import imgpipe` in that venv loads the library inside the package and
# delivers batches. setup.py's CMake build folder (PIP_BUILD) is kept between
# runs (the first run compiles the C API and its layers, later ones only what
# changed); the venv is made afresh.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(REMOVE_RECURSE ${WORK})
run(NAME venv COMMAND ${PYTHON} -m venv --system-site-packages ${WORK}/venv)
# No IMGPIPE_WITH_CUDA here: setup.py picks the backend (the host one on a
# machine without a GPU, as CI's and the development machine) and says so.
set(cmake_args "-DCMAKE_CXX_COMPILER=${CXX} ${PIP_CMAKE_ARGS}")
string(TIMESTAMP t0 "%s")
run(NAME "pip install" COMMAND ${CMAKE_COMMAND} -E env IMGPIPE_PIP_BUILD_DIR=${PIP_BUILD}
    "IMGPIPE_CMAKE_ARGS=${cmake_args}" PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
    ${WORK}/venv/bin/python -m pip install -v --no-build-isolation --no-index ${SOURCE_DIR} OUTPUT pip_out)
expect_match("pip -v shows the backend's choice"
             "imgpipe: (no GPU found \\([^)]*\\): building the host backend alone|building for this machine's GPU)"
             "${pip_out}")
execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE smi_rc OUTPUT_QUIET ERROR_QUIET)
if(NOT smi_rc EQUAL 0)
  expect_match("no GPU: no CUDA compiled" "-DIMGPIPE_WITH_CUDA=off" "${pip_out}")
endif()
string(TIMESTAMP t1 "%s")
math(EXPR took "${t1} - ${t0}")
message(STATUS "pip install took ${took} s")
run(NAME "import imgpipe, deliver batches" OUTPUT out
    COMMAND ${CMAKE_COMMAND} -E env --unset=IMGPIPE_C_LIBRARY --unset=PYTHONPATH --unset=LD_LIBRARY_PATH
            PYTHONDONTWRITEBYTECODE=1
            ${WORK}/venv/bin/python ${CMAKE_CURRENT_LIST_DIR}/python_deliver.py ${SOURCE_DIR}/samples/data in-package)
expect_match("venv package" "imgpipe [0-9.]+ from ${WORK}/venv/lib/python3[.0-9]*/site-packages/imgpipe: 20 images in 3 batches"
             "${out}")
# OpenCV's codecs ride in the package beside the library, which loads them
# from there (the samples' PNGs above needed them).
file(GLOB _module ${WORK}/venv/lib/python3*/site-packages/imgpipe/libimgpipe_opencv_io.so)
if(NOT _module)
  message(FATAL_ERROR "the installed package holds no libimgpipe_opencv_io.so beside libimgpipe_c.so")
endif()
