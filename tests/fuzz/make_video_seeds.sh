#!/usr/bin/env bash
# Makes fuzz_video's seeds (tests/fuzz/corpus_video) with Debian's ffmpeg:
# tiny 64x48 clips of 10 frames (5 for the second half of the joined
# MPEG-TS), a few KB each, one per path of the reader the fuzzer should start
# from. Usage: tests/fuzz/make_video_seeds.sh [DIR] (default: corpus_video
# beside this script; files of the same name are replaced). Made with
# ffmpeg 5.1 (Debian 12); another version makes other bytes, not other kinds.
# The regress-* files in corpus_video are not made here: they are inputs the
# fuzzer found, kept as found (fuzz_video.cpp says what each shows).
set -euo pipefail
out=${1:-"$(dirname "$0")/corpus_video"}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ff() { ffmpeg -hide_banner -loglevel error -nostdin -y "$@"; }
src=(-f lavfi -i testsrc2=s=64x48:r=10 -t 1)

# H.264 with B-frames, closed GOPs, MP4 (length-prefixed: h264_mp4toannexb).
ff "${src[@]}" -pix_fmt yuv420p -c:v libx264 -bf 2 -g 5 -x264-params scenecut=0 "$out/h264_bframes.mp4"
# The same cut with an edit list (frames decoded, not shown).
ff -ss 0.35 -i "$out/h264_bframes.mp4" -c copy "$out/h264_editlist.mp4"
# Full range BT.709 tags and a display matrix (90 degrees).
ff "${src[@]}" -pix_fmt yuv420p -c:v libx264 -bf 2 -g 5 -color_range pc -colorspace bt709 \
  -color_primaries bt709 -color_trc bt709 "$tmp/tagged.mp4"
ff -i "$tmp/tagged.mp4" -c copy -metadata:s:v:0 rotate=90 "$out/h264_rotated_tagged.mp4"
# H.264 open GOPs (non-IDR I-frames) in Matroska, two clusters each with
# FFmpeg's CRC-32; and a copy whose last cluster's stored CRC-32 has a bit
# flipped (its data whole: damage no decoder sees, the break at the cluster).
ff "${src[@]}" -pix_fmt yuv420p -c:v libx264 -bf 2 -x264-params keyint=5:min-keyint=5:open-gop=1:scenecut=0 \
  -cluster_time_limit 400 "$out/h264_opengop.mkv"
python3 - "$out/h264_opengop.mkv" "$out/h264_crc_damaged.mkv" <<'EOF'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
crc = d.find(b'\xbf\x84', d.rfind(b'\x1f\x43\xb6\x75'))  # the last Cluster's CRC-32 element
d[crc + 2] ^= 0x10
open(sys.argv[2], 'wb').write(d)
EOF
# H.264 with B-frames in MPEG-TS (no index: seeks decode from the start),
# and two streams of different sizes joined, times overlapping (segments).
ff "${src[@]}" -pix_fmt yuv420p -c:v libx264 -bf 2 -g 5 "$out/h264_bframes.ts"
ff -f lavfi -i testsrc2=s=48x32:r=10 -t 0.5 -pix_fmt yuv420p -c:v libx264 -bf 2 -g 5 -output_ts_offset 0.3 "$tmp/b.ts"
cat "$out/h264_bframes.ts" "$tmp/b.ts" >"$out/h264_joined.ts"
# HEVC with B-frames in MP4 (hvcC: hevc_mp4toannexb), and 10-bit 4:2:2 in Matroska.
ff "${src[@]}" -pix_fmt yuv420p -c:v libx265 -x265-params log-level=none:bframes=2:keyint=5 -tag:v hvc1 \
  "$out/hevc_bframes.mp4"
ff "${src[@]}" -pix_fmt yuv422p10le -c:v libx265 -x265-params log-level=none:bframes=2:keyint=5 "$out/hevc_422p10.mkv"
# VP9 with hidden alt-ref frames in WebM (no CRC-32).
ff "${src[@]}" -pix_fmt yuv420p -c:v libvpx-vp9 -auto-alt-ref 1 -lag-in-frames 8 -g 5 -deadline realtime \
  -cpu-used 8 "$out/vp9_altref.webm"
# MPEG-4 part 2 with B-frames in AVI (packets without presentation times;
# mpeg4_unpack_bframes).
ff "${src[@]}" -pix_fmt yuv420p -c:v mpeg4 -bf 1 -g 5 -q:v 8 "$out/mpeg4_bframes.avi"
ls -l "$out"
