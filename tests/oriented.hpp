// What EXIF orientation `o` asks a viewer to do with the stored image, made
// with OpenCV's own flips and turns (EXIF 2.3: where stored row 0 and column 0
// go. 2 mirror, 3 turn 180, 4 flip upside down, 5 transpose, 6 turn 90
// clockwise, 7 turn 90 clockwise then flip upside down (stored (0,0) ends
// bottom right), 8 turn 90 anticlockwise): a reference independent of
// imgpipe's decoder and of core/src/geometry.cpp.
#pragma once

#include <opencv2/core.hpp>

namespace imgpipe::test {

inline cv::Mat oriented(const cv::Mat& m, int o) {
  cv::Mat r;
  switch (o) {
    case 2: cv::flip(m, r, 1); break;
    case 3: cv::rotate(m, r, cv::ROTATE_180); break;
    case 4: cv::flip(m, r, 0); break;
    case 5: cv::transpose(m, r); break;
    case 6: cv::rotate(m, r, cv::ROTATE_90_CLOCKWISE); break;
    case 7: cv::rotate(m, r, cv::ROTATE_90_CLOCKWISE); cv::flip(r, r, 0); break;
    case 8: cv::rotate(m, r, cv::ROTATE_90_COUNTERCLOCKWISE); break;
    default: r = m.clone();
  }
  return r;
}

}  // namespace imgpipe::test
