// imgpipe's own logger: the library logs through imgpipe::logger(), never
// through spdlog's default logger, so an application's default logger neither
// receives nor changes imgpipe's messages, and imgpipe never touches it.
#include <doctest/doctest.h>

#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "common.hpp"
#include "imgpipe/log.hpp"
#include "imgpipe/memory/resources.hpp"
#include "imgpipe/pipeline.hpp"
#include "memory/slot_resource.hpp"

namespace {

// An application's own default logger, installed while alive (the previous one restored after).
class AppDefaultLogger {
 public:
  AppDefaultLogger() : old_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
    logger_ = std::make_shared<spdlog::logger>("app", sink);
    logger_->set_level(spdlog::level::trace);
    spdlog::set_default_logger(logger_);
  }
  ~AppDefaultLogger() { spdlog::set_default_logger(old_); }
  AppDefaultLogger(const AppDefaultLogger&) = delete;
  AppDefaultLogger& operator=(const AppDefaultLogger&) = delete;
  std::string text() const { return text_.str(); }
  const std::shared_ptr<spdlog::logger>& logger() const { return logger_; }

 private:
  std::shared_ptr<spdlog::logger> old_;
  std::shared_ptr<spdlog::logger> logger_;
  std::ostringstream text_;
};

// A library warning through a real call site: a pointer that is not a slot.
void provoke_library_error() {
  imgpipe::memory::PageableResource pageable;
  imgpipe::memory::FixedSlotResource slots(pageable, 4096, 1);
  int x = 0;
  slots.deallocate(&x, sizeof x);
}

}  // namespace

TEST_CASE("log: imgpipe's logger is its own, named imgpipe and registered with spdlog") {
  const auto l = imgpipe::logger();
  REQUIRE(l != nullptr);
  CHECK(l == imgpipe::logger());
  CHECK(l->name() == "imgpipe");
  CHECK(spdlog::get("imgpipe") == l);
  CHECK(l != spdlog::default_logger());
}

TEST_CASE("log: an application's default logger neither receives nor changes imgpipe's messages") {
  AppDefaultLogger app;
  imgpipe::test::LogCapture imgpipe_log;  // imgpipe's logger, at warn
  provoke_library_error();
  spdlog::info("the application's own message");
  CHECK(imgpipe_log.count("not a slot") == 1);
  CHECK(imgpipe_log.count("the application's own message") == 0);
  CHECK(app.text().find("not a slot") == std::string::npos);
  CHECK(app.text().find("the application's own message") != std::string::npos);
}

TEST_CASE("log: a run leaves the application's default logger as it was") {
  AppDefaultLogger app;
  app.logger()->set_level(spdlog::level::critical);
  const auto sinks = app.logger()->sinks();
  imgpipe::Config c;
  c.input.paths = {imgpipe::test::sample_dir().string()};
  c.transform.resize.width = 32;
  c.transform.resize.height = 24;
  c.batch.size = 1;
  c.staging.slots = 2;
  c.pipeline.max_tokens = 16;  // more than 2 slots x 1 frame: the plan says so at level info
  c.devices = imgpipe::DeviceSelection::parse("cpu");
  const auto l = imgpipe::logger();
  const auto level = l->level();
  l->set_level(spdlog::level::info);
  std::ostringstream seen;
  const auto capture = std::make_shared<spdlog::sinks::ostream_sink_mt>(seen);
  const auto own_sinks = l->sinks();
  l->sinks() = {capture};
  const imgpipe::Report r = imgpipe::Pipeline(c).run();
  l->sinks() = own_sinks;
  l->set_level(level);
  CHECK(r.inputs.delivered == 20);
  CHECK(seen.str().find("frames in flight limited to") != std::string::npos);  // imgpipe logged...
  CHECK(app.text().empty());                                                   // ...not to the application
  CHECK(spdlog::default_logger() == app.logger());
  CHECK(app.logger()->level() == spdlog::level::critical);
  CHECK(app.logger()->sinks() == sinks);
}

TEST_CASE("log: a run that delivers nothing is nothing_delivered(), each failed input a warning (20, then a count)") {
  imgpipe::test::TempDir d;
  for (int i = 0; i < 22; ++i) std::ofstream(d / ("bad" + std::to_string(10 + i) + ".jpg")) << "not a JPEG";
  imgpipe::Config c;
  c.input.paths = {d.path().string()};
  c.transform.resize.width = 32;
  c.transform.resize.height = 24;
  c.devices = imgpipe::DeviceSelection::parse("cpu");
  const auto l = imgpipe::logger();
  const auto level = l->level();
  l->set_level(spdlog::level::warn);
  std::ostringstream seen;
  const auto capture = std::make_shared<spdlog::sinks::ostream_sink_mt>(seen);
  capture->set_pattern("%l: %v");
  const auto own_sinks = l->sinks();
  l->sinks() = {capture};
  const imgpipe::Report r = imgpipe::Pipeline(c).run();
  l->sinks() = own_sinks;
  l->set_level(level);
  CHECK(r.inputs.failed == 22);
  CHECK(r.nothing_delivered());
  const std::string text = seen.str();
  CAPTURE(text);
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = text.find("warning: " + d.path().string(), at)) != std::string::npos; ++at) ++lines;
  CHECK(lines == 20);
  CHECK(text.find("warning: " + (d / "bad10.jpg").string() + ": ") != std::string::npos);
  CHECK(text.find("warning: 2 more failed inputs") != std::string::npos);

  imgpipe::Report ok;  // delivered one: not nothing_delivered; interrupted: neither
  ok.inputs.discovered = 3;
  ok.inputs.delivered = 1;
  CHECK_FALSE(ok.nothing_delivered());
  ok.inputs.delivered = 0;
  CHECK(ok.nothing_delivered());
  ok.interrupted = true;
  CHECK_FALSE(ok.nothing_delivered());
}

TEST_CASE("log: set_log_handler routes imgpipe's messages to the handler, with their level, until it is cleared") {
  const auto l = imgpipe::logger();
  const auto old_level = l->level();
  l->set_level(spdlog::level::info);
  std::vector<std::pair<int, std::string>> got;
  std::mutex m;
  REQUIRE(imgpipe::set_log_handler([&](int level, std::string_view message) {
    std::lock_guard lock(m);
    got.emplace_back(level, std::string(message));
  }));
  provoke_library_error();
  l->info("an info line for the handler");
  l->debug("below the level: not passed on");
  REQUIRE(imgpipe::set_log_handler({}));
  l->warn("after the handler was cleared");
  l->set_level(old_level);
  REQUIRE(got.size() == 2);
  CHECK(got[0].first == spdlog::level::err);  // a misuse the library survived
  CHECK(got[0].second.find("not a slot") != std::string::npos);
  CHECK(got[0].second.find("[imgpipe]") == std::string::npos);  // the bare message: no time, no name
  CHECK(got[1] == std::pair<int, std::string>{spdlog::level::info, "an info line for the handler"});
}
