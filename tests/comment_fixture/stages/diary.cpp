// A file that breaks the comment rule, for tests/comment_figures.cmake: the
// check must report the two comment lines below and nothing else.
#include <cstdio>

int main() {
  std::printf("%d img/s\n", 5900);  // a string is not a comment: not reported

  // Larger calls: 5,900 img/s on the H200 in the eleventh session.
  // The engines' rules are in GPU-DECODE.md.
  return 0;
}
