// "Did you mean": the nearest of some known names to a misspelt one, by
// Levenshtein distance (unknown config keys, unknown command-line flags).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace imgpipe {

// Levenshtein distance: the fewest insertions, deletions and substitutions
// that turn a into b.
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The known name nearest to `name`; empty when none is near enough to be a
// likely typo (more than max(2, |name| / 3) edits away).
inline std::string nearest_name(std::string_view name, const std::vector<std::string>& known) {
  std::string nearest;
  std::size_t best = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (const auto& k : known)
    if (const std::size_t d = edit_distance(name, k); d < best) {
      best = d;
      nearest = k;
    }
  return nearest;
}

}  // namespace imgpipe
