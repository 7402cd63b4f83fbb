"""input.video.clips through Python (host backend): 5-D batches, len() and labels per clip,
Batch.clips with each clip's video, frame indices and times, and a new draw every epoch."""
import math
import shutil
import subprocess

import pytest

import imgpipe

np = pytest.importorskip("numpy")


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    if shutil.which("ffmpeg") is None:
        pytest.fail("ffmpeg is needed (setup.sh test installs it)")
    d = tmp_path_factory.mktemp("clips")
    for cls, n in (("a", 2), ("b", 1)):
        (d / cls).mkdir()
        for i in range(n):
            subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
                            f"testsrc2=size=64x48:rate=25:duration={2 + i}", "-pix_fmt", "yuv420p",
                            "-c:v", "libx264", "-bf", "2", "-g", "10", str(d / cls / f"v{i}.mp4")], check=True)
    return d


def pipeline(videos, **clips):
    c = {"length": 4, "stride": 2, "per_video": 2, **clips}
    return imgpipe.Pipeline(None, inputs=[str(videos)], device="cpu", batch={"size": 2},
                            transform={"resize": {"width": 16, "height": 16}},
                            input={"labels": "folders", "video": {"clips": c}})


def test_clip_batches_are_5d_and_count_clips(videos):
    p = pipeline(videos)
    assert len(p) == 3  # 3 videos x 2 clips, 2 a batch
    seen = []
    stream = p.start()
    for b in stream:
        assert b.clip_length == 4
        assert b.clip_layout == "cthw"
        assert b.shape == (len(b), 3, 4, 16, 16)
        assert len(b.samples) == 4 * len(b)
        assert len(b.labels) == len(b)
        clips = b.clips
        assert len(clips) == len(b)
        for c, label in zip(clips, b.labels):
            assert c.label == label
            assert len(c.frames) == 4
            assert [f2 - f1 for f1, f2 in zip(c.frames, c.frames[1:])] == [2, 2, 2]
            assert all(not math.isnan(t) for t in c.pts)
            assert c.pts == sorted(c.pts)
            assert [s.clip for s in c.samples] == [c.clip] * 4
            seen.append((c.path, tuple(c.frames)))
    assert len(seen) == 6
    report = stream.report()
    assert report["samples"]["unit"] == "clips"
    assert report["samples"]["clips"] == 6
    assert report["video"]["cpu_decoded"] >= report["video"]["cpu_delivered"] == 24


def test_epochs_draw_new_clips_and_layouts_follow_the_key(videos):
    p = pipeline(videos)
    def draw():
        return sorted((c.path, tuple(c.frames)) for b in p for c in b.clips)
    e0, e1 = draw(), draw()
    assert e0 != e1
    p.set_epoch(0)
    assert draw() == e0
    t = pipeline(videos, layout="tchw")
    b = next(iter(t))
    assert b.shape == (2, 4, 3, 16, 16)
    assert b.clip_layout == "tchw"
