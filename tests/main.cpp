#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <spdlog/logger.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common.hpp"
#include "imgpipe/log.hpp"

namespace {

// How many test cases the filters let through (and, for the skip line of
// test::skip_unless, the name of the case running): CTest runs each case by
// name (-tc=NAME), and a name CTest cut (at a ';') or a filter that matches
// nothing would otherwise pass with no case run.
std::atomic<unsigned> g_selected{0};

struct SelectedCounter : doctest::IReporter {
  explicit SelectedCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& s) override { g_selected = s.numTestCasesPassingFilters; }
  void test_case_start(const doctest::TestCaseData& t) override { imgpipe::test::set_current_test_case(t.m_name); }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("selected_counter", 1, SelectedCounter);

bool has_case_filter(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "-tc=", 4) == 0 || std::strncmp(argv[i], "--test-case=", 12) == 0) return true;
  return false;
}

bool is_query(int argc, char** argv) {  // --list-test-cases and the like run nothing by design
  for (int i = 1; i < argc; ++i)
    if (std::strstr(argv[i], "list") || std::strstr(argv[i], "help") || std::strstr(argv[i], "version") ||
        std::strstr(argv[i], "count"))
      return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  imgpipe::logger()->set_level(spdlog::level::err);  // tests check failures through reports, not logs
  // IMGPIPE_TEST_LOG=debug (or info, warn): the library's log lines, to follow a failing case.
  if (const char* level = std::getenv("IMGPIPE_TEST_LOG"); level != nullptr && *level != '\0')
    imgpipe::logger()->set_level(spdlog::level::from_str(level));
  // A suite started by a launcher (srun, torchrun) must not shard its inputs.
  for (const auto& v : imgpipe::test::launcher_variables()) ::unsetenv(v.c_str());
  doctest::Context ctx(argc, argv);
  const int rc = ctx.run();
  if (rc == 0 && has_case_filter(argc, argv) && !is_query(argc, argv) && g_selected == 0 && !ctx.shouldExit()) {
    std::fprintf(stderr, "imgpipe_tests: the test-case filter matched no test case (a name cut at a ';'?)\n");
    return 3;
  }
  return rc;
}
