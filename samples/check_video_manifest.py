#!/usr/bin/env python3
"""Check what samples/make_videos.sh wrote against what it was asked for.

  python3 samples/check_video_manifest.py OUT_DIR CLIPS COLOUR_SIZES_COUNT

Exit 0 when every file is in the manifest with FFmpeg's verdict and the
verdicts are what each case means (a clean clip decodes every frame it was
made with, a truncated one stops part-way, a zero-length one fails, rotated
clips carry a display matrix, flat colour clips decode to their RGB); 1 with
the list of what is wrong.
"""
import hashlib
import json
import os
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    out, clips, colour_sizes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    files = json.load(open(os.path.join(out, "manifest.json")))["files"]
    bad = []
    by_part = {}
    for e in files:
        by_part.setdefault(e["part"], []).append(e)
        if not os.path.isfile(os.path.join(out, e["file"])):
            bad.append(f"{e['file']}: in the manifest, not on disk")
    want = {"w2": clips, "long": 1, "colour": 16 * colour_sizes}
    for part, n in want.items():
        if len(by_part.get(part, [])) != n:
            bad.append(f"part {part}: {len(by_part.get(part, []))} files, expected {n}")
    codecs = {(e["codec"], e["pix_fmt"]) for e in by_part.get("codecs", [])}
    for c in [("hevc", "yuv420p"), ("hevc", "yuv420p10le"), ("vp9", "yuv420p"), ("h264", "yuv444p")]:
        if c not in codecs:
            bad.append(f"codecs: no {c[0]} {c[1]} clip")
    cases = {e.get("case") for e in by_part.get("hostile", [])}
    for c in ["truncated", "flipped", "zero_length", "wrong_extension", "odd_size", "resolution_change", "rotated",
              "interlaced", "vfr"]:
        if c not in cases:
            bad.append(f"hostile: no {c} case")
    digests = {}
    for e in by_part.get("w2", []):
        d = hashlib.sha256(open(os.path.join(out, e["file"]), "rb").read()).hexdigest()
        if d in digests:
            bad.append(f"{e['file']}: the same bytes as {digests[d]} (each W2 clip must differ)")
        digests[d] = e["file"]
    for e in files:
        fp, fm, f = e["ffprobe"], e["ffmpeg"], e["file"]
        if e["expect"] == "ok":
            if not (fp["frames"] == fm["frames"] == e["frames"]) or fm["exit"] != 0:
                bad.append(f"{f}: made with {e['frames']} frames; ffprobe {fp['frames']}, ffmpeg {fm['frames']} (exit {fm['exit']})")
            if (fp.get("width"), fp.get("height")) != (e["width"], e["height"]):
                bad.append(f"{f}: {fp.get('width')}x{fp.get('height')}, made {e['width']}x{e['height']}")
            if fp.get("pix_fmt") not in (e["pix_fmt"], e["pix_fmt"].replace("yuv", "yuvj")):
                bad.append(f"{f}: pixel format {fp.get('pix_fmt')}, made {e['pix_fmt']}")
        elif e["expect"] == "break" and not 0 < fm["frames"] < e["frames"]:
            bad.append(f"{f}: truncated, yet ffmpeg decodes {fm['frames']} of {e['frames']} frames")
        elif e["expect"] == "fail" and (fm["exit"] == 0 or fm["frames"] != 0 or not fm["errors"]):
            bad.append(f"{f}: expected to fail, ffmpeg: exit {fm['exit']}, {fm['frames']} frames")
        elif e["expect"] == "damaged" and (fm["frames"] == 0 or not fm["errors"]):
            bad.append(f"{f}: damaged mid-stream; ffmpeg decodes {fm['frames']} frames with {len(fm['errors'])} errors")
        if e.get("case") == "rotated" and not fp.get("displaymatrix"):
            bad.append(f"{f}: no display matrix")
        if e.get("expected_rgb"):
            got = e.get("reference_rgb") or [-99] * 3
            if max(abs(a - b) for a, b in zip(got, e["expected_rgb"])) > 2:
                bad.append(f"{f}: decodes to {got}, expected {e['expected_rgb']}")
        if "matrix" in e and e["expect"] == "ok":
            tag = {"bt601": "smpte170m"}.get(e["matrix"], e["matrix"])
            if fp.get("color_space") != tag or fp.get("color_range") != e["range"]:
                bad.append(f"{f}: tagged {fp.get('color_space')}/{fp.get('color_range')}, made {tag}/{e['range']}")
        if e["part"] == "colour" and not os.path.isfile(os.path.join(out, e["reference"])):
            bad.append(f"{f}: no reference frame {e['reference']}")
    if bad:
        print("check_video_manifest: " + str(len(bad)) + " problem(s):\n  " + "\n  ".join(bad))
        sys.exit(1)
    print(f"check_video_manifest: {len(files)} files as meant")


if __name__ == "__main__":
    main()
