# Fails when a C/C++/CUDA comment in the product folders quotes a measured
# figure (img/s, frames/s, "on the H200", "W1: 5900"), a date or a count of
# stretches of work ("this session"), or names a design document that is not
# in the repository (GPU-DECODE.md, VIDEO-DECODE.md, ARCHITECTURE.md). A
# comment says why; the figures belong in docs/benchmarks.md (link an entry
# there, docs/benchmarks.md#<entry>) and the facts in docs/. See
# docs/style.md, "Names and comments"; tests/comment_fixture proves the check
# catches one.
#   cmake -DROOT=<source dir> [-DFILES=<a;list;of;files>] -P tests/comment_figures.cmake
# FILES (relative to ROOT) checks only those files instead of the folders.
if(NOT ROOT)
  message(FATAL_ERROR "comment_figures.cmake: pass -DROOT=<source dir>")
endif()

# What a comment must not say. CMake regular expressions: no \b, no {n}, no
# case-insensitive flag, hence the spelled-out forms.
set(figure_patterns
  "[Ii]mg/s"
  "[Ff]rames/s"
  "[0-9] ?[GT]B/s"
  "[Oo]n (the|an|a) [HA]100"
  "[Oo]n (the|an|a) H200"
  "H200 (machine|benchmark|figure)"
  "W[1-4]-?[0-9]*: [0-9]"
  "(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|[0-9]+th|this|last|previous|earlier) session"
  "[Ss]ession [0-9]"
  "20[0-9][0-9]-[01][0-9]-[0-3][0-9]"
  "GPU-DECODE\\.md"
  "VIDEO-DECODE\\.md"
  "ARCHITECTURE\\.md"
  "shared/design")
list(JOIN figure_patterns "|" any_pattern)

if(DEFINED FILES)
  set(sources "")
  foreach(f IN LISTS FILES)
    list(APPEND sources "${ROOT}/${f}")
  endforeach()
else()
  set(sources "")
  foreach(layer IN ITEMS core kernels memory codecs stages pipeline capi)
    file(GLOB_RECURSE found "${ROOT}/${layer}/*.hpp" "${ROOT}/${layer}/*.h" "${ROOT}/${layer}/*.cpp"
         "${ROOT}/${layer}/*.cc" "${ROOT}/${layer}/*.c" "${ROOT}/${layer}/*.cu" "${ROOT}/${layer}/*.cuh")
    list(APPEND sources ${found})
  endforeach()
endif()

set(hits "")
foreach(src IN LISTS sources)
  file(READ "${src}" text)
  # Quick reject: nothing in the file matches, comment or not.
  string(REGEX MATCH "${any_pattern}" any "${text}")
  if(NOT any)
    continue()
  endif()
  # One list item per line: characters CMake's list handling would act on
  # are replaced first (';' splits items, '[' ']' and '\' change splitting).
  string(REPLACE "\\" "/" text "${text}")
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "[" "(" text "${text}")
  string(REPLACE "]" ")" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  file(RELATIVE_PATH rel "${ROOT}" "${src}")
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    # The comment part of the line: after "//" or "/*", or all of a line of
    # a block comment (one that starts with "*" or "/*").
    set(comment "")
    if(line MATCHES "^[ \t]*(/\\*|\\*)")
      set(comment "${line}")
    else()
      string(FIND "${line}" "//" at)
      if(at LESS 0)
        string(FIND "${line}" "/*" at)
      endif()
      if(at GREATER_EQUAL 0)
        string(SUBSTRING "${line}" ${at} -1 comment)
      endif()
    endif()
    if(comment AND comment MATCHES "${any_pattern}")
      string(STRIP "${line}" shown)
      list(APPEND hits "  ${rel}:${n}: ${shown}")
    endif()
  endforeach()
endforeach()

if(hits)
  list(LENGTH hits count)
  list(JOIN hits "\n" listing)
  message(FATAL_ERROR "${count} comment line(s) quote measured figures, dates or sessions, or name documents "
          "outside the repository (say why instead; figures go to docs/benchmarks.md, facts to docs/):\n"
          "${listing}")
endif()
