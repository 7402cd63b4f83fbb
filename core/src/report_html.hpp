// Pieces of the HTML report (Report::to_html, report_html.cpp).
#pragma once

#include <string>
#include <string_view>

namespace imgpipe::report_html {

// The page's inline style sheet and script (report_html_assets.cpp).
extern const char* const kStyle;
extern const char* const kScript;

// Text for HTML element content and quoted attribute values: & < > " ' escaped.
std::string escape(std::string_view text);

// JSON text made safe inside <script type="application/json">: < > & written
// as \u003c \u003e \u0026 (the same string to JSON.parse), so no "</script>"
// or "<!--" in a path can end the element.
std::string script_safe_json(std::string_view json);

}  // namespace imgpipe::report_html
