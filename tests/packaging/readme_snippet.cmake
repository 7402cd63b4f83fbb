# packaging_readme_snippet: the README's library examples (its CMakeLists.txt,
# app.cpp and push.cpp, between <!-- readme-snippet: NAME --> and <!-- readme-snippet
# end -->), built against the installed prefix and run on the installed config.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
file(READ ${SOURCE_DIR}/README.md readme)

# The fenced code block of snippet `name`, written to ${WORK}/src/<name>.
function(extract name)
  set(begin "<!-- readme-snippet: ${name} -->")
  string(FIND "${readme}" "${begin}" b)
  if(b LESS 0)
    message(FATAL_ERROR "README.md has no snippet '${name}' (marker ${begin})")
  endif()
  string(LENGTH "${begin}" n)
  math(EXPR b "${b} + ${n}")
  string(SUBSTRING "${readme}" ${b} -1 rest)
  string(FIND "${rest}" "<!-- readme-snippet end -->" e)
  string(SUBSTRING "${rest}" 0 ${e} block)
  if(NOT block MATCHES "```[a-z]*\n(.*)```")
    message(FATAL_ERROR "snippet '${name}' holds no fenced code block")
  endif()
  file(WRITE ${WORK}/src/${name} "${CMAKE_MATCH_1}")
endfunction()

file(REMOVE_RECURSE ${WORK})
extract(CMakeLists.txt)
extract(app.cpp)
extract(push.cpp)
# The README's CMakeLists.txt builds app; push.cpp, on the same package, is added here.
file(APPEND ${WORK}/src/CMakeLists.txt "add_executable(push push.cpp)\ntarget_link_libraries(push PRIVATE imgpipe::imgpipe)\n")
build_project(${WORK}/src ${WORK}/build ${PREFIX})

# push.cpp: three sample images pushed as bytes with labels, pulled with next_for.
set(_data ${PREFIX}/share/imgpipe/samples/data)
run(NAME "push, three images" OUTPUT out COMMAND ${WORK}/build/push ${PREFIX}/share/imgpipe/pipeline.yaml
    ${_data}/img_00000.jpg ${_data}/img_00001.jpg ${_data}/img_00019.png)
expect_match("push output" "(^|\n)3 pushed images, 3 labelled, in 1 batches" "${out}")

run(NAME "app, installed config" OUTPUT out COMMAND ${WORK}/build/app ${PREFIX}/share/imgpipe/pipeline.yaml)
expect_match("app output" "(^|\n)20 images in [0-9]+ batches" "${out}")
# Errors are caught and reported, never an abort: a missing config (2), no inputs (2: a config error).
run(NAME "app, missing config" EXPECT 2 OUTPUT out COMMAND ${WORK}/build/app ${WORK}/missing.yaml)
expect_match("app output" "cannot open config file" "${out}")
file(MAKE_DIRECTORY ${WORK}/empty)
run(NAME "app, no inputs" EXPECT 2 OUTPUT out
    COMMAND ${WORK}/build/app ${PREFIX}/share/imgpipe/pipeline.yaml ${WORK}/empty)
expect_match("app output" "no inputs found" "${out}")
