// The box and point mapping of imgpipe/geometry.hpp on hand-made geometries:
// the affine map and its inverse, clipping, the eight EXIF orientations
// between displayed and stored coordinates (checked against cv::rotate /
// cv::flip on a real pixel grid, not against the formulas), and bad input.
// The mapping against the kernels' real output: tests/pipeline/test_geometry_boxes.cpp.
#include <doctest/doctest.h>

#include <stdexcept>

#include <opencv2/core.hpp>

#include "imgpipe/geometry.hpp"
#include "oriented.hpp"

using namespace imgpipe;

namespace {

// A letterbox of a 200 x 100 image into 64 x 64: scale 0.32, 16 rows of padding above.
SampleGeometry letterbox_200x100() {
  SampleGeometry g;
  g.width = g.stored_width = 200;
  g.height = g.stored_height = 100;
  g.resize = ResizeMode::letterbox;
  g.scale_x = g.scale_y = 0.32;
  g.offset_x = 0;
  g.offset_y = 16;
  g.resized_width = 64;
  g.resized_height = 32;
  g.pad_top = 16;
  g.tensor_width = g.tensor_height = 64;
  return g;
}

}  // namespace

TEST_CASE("geometry: tensor_to_image inverts image_to_tensor and clips to the image") {
  const SampleGeometry g = letterbox_200x100();
  const Point p = tensor_to_image(g, Point{32, 32});
  CHECK(p.x == doctest::Approx(100));
  CHECK(p.y == doctest::Approx(50));
  const Point t = image_to_tensor(g, Point{150, 25});
  CHECK(t.x == doctest::Approx(48));
  CHECK(t.y == doctest::Approx(24));
  // A point in the padding lands on the nearest edge.
  const Point top = tensor_to_image(g, Point{10, 2});
  CHECK(top.y == 0);
  CHECK(top.x == doctest::Approx(31.25));
  const Point far = tensor_to_image(g, Point{70, 63});
  CHECK(far.x == 200);
  CHECK(far.y == 100);
  // A box that reaches into the padding is cut at the image.
  const Box b = tensor_to_image(g, Box{16, 8, 16, 16});
  CHECK(b.x == doctest::Approx(50));
  CHECK(b.y == 0);
  CHECK(b.width == doctest::Approx(50));
  CHECK(b.height == doctest::Approx(25));
  // Wholly in the padding: empty.
  const Box none = tensor_to_image(g, Box{0, 0, 64, 10});
  CHECK(none.height == 0);
  // The round trip inside the image.
  const Box in{12.5, 40.25, 30, 20};
  const Box back = tensor_to_image(g, image_to_tensor(g, in));
  CHECK(back.x == doctest::Approx(in.x));
  CHECK(back.y == doctest::Approx(in.y));
  CHECK(back.width == doctest::Approx(in.width));
  CHECK(back.height == doctest::Approx(in.height));
}

TEST_CASE("geometry: displayed and stored coordinates of the eight EXIF orientations match cv::rotate/flip") {
  // A 5 x 3 stored image whose pixel values name their stored position; for
  // every displayed pixel the mapping of its centre must land on the centre of
  // the stored pixel the viewer shows there.
  cv::Mat stored(3, 5, CV_32SC1);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x) stored.at<int>(y, x) = y * 5 + x;
  for (int o = 1; o <= 8; ++o) {
    CAPTURE(o);
    const cv::Mat shown = imgpipe::test::oriented(stored, o);
    SampleGeometry g;
    g.orientation = o;
    g.stored_width = 5;
    g.stored_height = 3;
    g.width = shown.cols;
    g.height = shown.rows;
    g.scale_x = g.scale_y = 1;
    CHECK((o >= 5) == (g.width == 3));
    for (int y = 0; y < shown.rows; ++y) {
      for (int x = 0; x < shown.cols; ++x) {
        const Point s = displayed_to_stored(g, Point{x + 0.5, y + 0.5});
        const int v = shown.at<int>(y, x);
        CHECK(s.x == doctest::Approx(v % 5 + 0.5));
        CHECK(s.y == doctest::Approx(v / 5 + 0.5));
        const Point d = stored_to_displayed(g, s);
        CHECK(d.x == doctest::Approx(x + 0.5));
        CHECK(d.y == doctest::Approx(y + 0.5));
        // Through the tensor (identity scale): the same stored pixel.
        const Point t = tensor_to_image(g, Point{x + 0.5, y + 0.5}, ImageCoords::stored);
        CHECK(t.x == doctest::Approx(s.x));
        CHECK(t.y == doctest::Approx(s.y));
      }
    }
    // A displayed box is a box of stored pixels: one displayed pixel is one stored pixel.
    const Box one = tensor_to_image(g, Box{1, 0, 1, 1}, ImageCoords::stored);
    const int v = shown.at<int>(0, 1);
    CHECK(one.x == doctest::Approx(v % 5));
    CHECK(one.y == doctest::Approx(v / 5));
    CHECK(one.width == doctest::Approx(1));
    CHECK(one.height == doctest::Approx(1));
    const Box round = tensor_to_image(g, image_to_tensor(g, one, ImageCoords::stored), ImageCoords::stored);
    CHECK(round == one);
  }
}

TEST_CASE("geometry: a default geometry or an orientation outside 1..8 is refused") {
  CHECK_THROWS_AS(tensor_to_image(SampleGeometry{}, Point{1, 1}), std::invalid_argument);
  SampleGeometry g = letterbox_200x100();
  g.orientation = 9;
  CHECK_THROWS_AS(tensor_to_image(g, Box{0, 0, 1, 1}), std::invalid_argument);
  CHECK_THROWS_AS(image_to_tensor(g, Point{0, 0}), std::invalid_argument);
  g.orientation = 1;
  g.scale_y = 0;
  CHECK_THROWS_WITH_AS(image_to_tensor(g, Box{}), doctest::Contains("scale"), std::invalid_argument);
}
