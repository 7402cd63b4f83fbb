// Fixture for tests/library_logger.cmake: library code that logs through
// spdlog's default logger, which the check must report. Never compiled.
void warn_the_old_way() { spdlog::warn("through the default logger"); }
