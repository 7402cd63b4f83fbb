# packaging_pkg_config: a program compiled with one compiler command and
# `pkg-config --cflags --libs imgpipe` against the installed prefix, then run.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
find_program(PKG_CONFIG pkg-config)
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found: install Debian's pkg-config (setup.sh does)")
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(ENV{PKG_CONFIG_PATH} ${PREFIX}/${LIBDIR}/pkgconfig)
run(NAME modversion OUTPUT v COMMAND ${PKG_CONFIG} --modversion imgpipe)
expect_match("pkg-config --modversion" "^${VERSION}\n" "${v}")
execute_process(COMMAND ${PKG_CONFIG} --variable=datadir imgpipe OUTPUT_VARIABLE datadir
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT EXISTS ${datadir}/samples/data/img_00000.jpg)
  message(FATAL_ERROR "pkg-config's datadir '${datadir}' holds no samples/data")
endif()
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs imgpipe OUTPUT_VARIABLE flags RESULT_VARIABLE rc
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs imgpipe failed")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
separate_arguments(extra UNIX_COMMAND "${CXX_FLAGS}")
file(WRITE ${WORK}/prog.cpp [=[
#include <iostream>
#include <imgpipe/pipeline.hpp>
int main(int argc, char** argv) {
  imgpipe::Config cfg;
  cfg.input.paths.assign(argv + 1, argv + argc);
  cfg.transform.resize.width = 64;
  cfg.transform.resize.height = 48;
  const imgpipe::Report r = imgpipe::Pipeline(cfg).run();
  std::cout << "imgpipe " << imgpipe::version() << ": " << r.inputs.delivered << " images\n";
  return r.inputs.delivered > 0 ? 0 : 1;
}
]=])
run(NAME compile COMMAND ${CXX} -std=c++20 ${extra} ${WORK}/prog.cpp -o ${WORK}/prog ${flags})
run(NAME "run" OUTPUT out COMMAND ${WORK}/prog ${datadir}/samples/data)
expect_match("prog output" "imgpipe ${VERSION}: 20 images" "${out}")
