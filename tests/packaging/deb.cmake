# packaging_deb: `cpack -G DEB` of this build; the package's name, version,
# dependencies and files, and samples/consumer built against its contents.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
foreach(tool dpkg-deb dpkg-shlibdeps file)
  find_program(_found_${tool} ${tool})
  if(NOT _found_${tool})
    message(FATAL_ERROR "${tool} not found: install Debian's dpkg-dev and file (setup.sh test does)")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK})
run(NAME cpack COMMAND ${CPACK} -G DEB --config ${BUILD_DIR}/CPackConfig.cmake -B ${WORK})
file(GLOB debs ${WORK}/*.deb)
list(LENGTH debs n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "expected one .deb in ${WORK}, found ${n}: ${debs}")
endif()
get_filename_component(name ${debs} NAME)
expect_match("package file name" "^imgpipe_${VERSION}_[a-z0-9]+\\.deb$" "${name}")

run(NAME fields OUTPUT fields COMMAND dpkg-deb -f ${debs} Package Version Depends Recommends)
expect_match("Package" "Package: imgpipe\n" "${fields}")
expect_match("Version" "Version: ${VERSION}\n" "${fields}")
foreach(dep libc6 libstdc\\+\\+6 libopencv-core libopencv-imgcodecs libtbb libyaml-cpp libspdlog libfmt libjpeg)
  expect_match("Depends (dpkg-shlibdeps)" "Depends:[^\n]*${dep}" "${fields}")
endforeach()
expect_match("Recommends" "Recommends:[^\n]*libopencv-dev" "${fields}")

run(NAME contents OUTPUT list COMMAND dpkg-deb -c ${debs})
foreach(f usr/bin/imgpipe usr/include/imgpipe/pipeline.hpp usr/include/imgpipe/config.hpp
          usr/include/imgpipe/memory/resources.hpp usr/${LIBDIR}/libimgpipe_pipeline.a usr/${LIBDIR}/libimgpipe_core.a
          usr/${LIBDIR}/cmake/imgpipe/imgpipeConfig.cmake usr/${LIBDIR}/cmake/imgpipe/imgpipeTargets.cmake
          usr/${LIBDIR}/pkgconfig/imgpipe.pc usr/${LIBDIR}/libimgpipe_opencv_io.so usr/share/imgpipe/pipeline.yaml
          usr/share/imgpipe/samples/data/img_00019.png usr/share/imgpipe/samples/data/LICENSE
          usr/share/doc/imgpipe/copyright usr/share/doc/imgpipe/LICENSE)
  string(REPLACE "+" "\\+" re "${f}")
  expect_match("dpkg-deb -c lists ${f}" " \\./${re}\n" "${list}")
endforeach()

if(WITH_PYTHON)
  foreach(f usr/${LIBDIR}/libimgpipe_c.so usr/lib/python3/dist-packages/imgpipe/__init__.py
            usr/lib/python3/dist-packages/imgpipe/py.typed)
    expect_match("dpkg-deb -c lists ${f}" " \\./${f}\n" "${list}")
  endforeach()
endif()

# The files as installed under /usr: the config names /usr's sample folder,
# nothing names cpack's staging folder.
run(NAME extract COMMAND dpkg-deb -x ${debs} ${WORK}/root)
file(READ ${WORK}/root/usr/share/imgpipe/pipeline.yaml yaml)
expect_match("packaged pipeline.yaml" "paths: \\[/usr/share/imgpipe/samples/data\\]" "${yaml}")
foreach(f ${LIBDIR}/pkgconfig/imgpipe.pc ${LIBDIR}/cmake/imgpipe/imgpipeConfig.cmake
          ${LIBDIR}/cmake/imgpipe/imgpipeTargets.cmake share/imgpipe/pipeline.yaml)
  file(READ ${WORK}/root/usr/${f} text)
  if(text MATCHES "_CPack_Packages|${WORK}|${BUILD_DIR}")
    message(FATAL_ERROR "usr/${f} names a build or staging path")
  endif()
endforeach()
# The package's CMake files find it wherever it is unpacked.
build_project(${SOURCE_DIR}/samples/consumer ${WORK}/consumer ${WORK}/root/usr)
run(NAME "consumer against the .deb's files" OUTPUT out COMMAND ${WORK}/consumer/imgpipe_consumer)
expect_match("consumer output" "20 images delivered" "${out}")
# The package's Python package, unpacked, imported by Debian's python3 (the
# library found where the .deb puts it, relative to the package).
if(WITH_PYTHON)
  check_python(".deb's package" ${WORK}/root/usr/lib/python3/dist-packages ${WORK}/root/usr/share/imgpipe/samples/data
               ${WORK}/root/usr/${LIBDIR}/libimgpipe_c.so)
endif()
