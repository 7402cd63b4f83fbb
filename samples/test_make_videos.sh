#!/usr/bin/env bash
# CTest sample_make_videos: samples/make_videos.sh at tiny sizes, its manifest
# checked (samples/check_video_manifest.py); a second run keeps every file; a
# clip cut behind its back is caught by both. Skipped without ffmpeg.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v ffmpeg > /dev/null && command -v ffprobe > /dev/null || { echo "IMGPIPE-SKIPPED: no ffmpeg/ffprobe"; exit 0; }
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
a=(--clips 2 --seconds 0.4 --long 0.5 --codec-clips 1 --size 192x108 --colour-sizes 32x24 --hostile-frames 40 --jobs 2)
"$here/make_videos.sh" "${a[@]}" "$here/data" "$d/v"
python3 "$here/check_video_manifest.py" "$d/v" 2 1
# Idempotent: nothing made again.
find "$d/v" -type f ! -name manifest.json ! -name '.meta.tsv' -printf '%P %T@\n' | sort > "$d/before"
"$here/make_videos.sh" "${a[@]}" "$here/data" "$d/v"
find "$d/v" -type f ! -name manifest.json ! -name '.meta.tsv' -printf '%P %T@\n' | sort > "$d/after"
diff "$d/before" "$d/after" || { echo "FAIL: a second run changed files"; exit 1; }
# A clip that no longer decodes every frame is caught.
head -c $(( $(stat -c %s "$d/v/w2/w2_001.mp4") / 2 )) "$d/v/w2/w2_001.mp4" > "$d/cut" && mv "$d/cut" "$d/v/w2/w2_001.mp4"
if "$here/make_videos.sh" "${a[@]}" "$here/data" "$d/v" > "$d/log" 2>&1; then
  echo "FAIL: make_videos.sh accepted a cut W2 clip"; exit 1
fi
grep -q "w2/w2_001.mp4: made with" "$d/log" || { echo "FAIL: make_videos.sh did not name the cut clip:"; cat "$d/log"; exit 1; }
if python3 "$here/check_video_manifest.py" "$d/v" 2 1 > "$d/log"; then
  echo "FAIL: check_video_manifest.py accepted a cut W2 clip"; exit 1
fi
grep -q "w2/w2_001.mp4: made with" "$d/log" || { echo "FAIL: the check did not name the cut clip:"; cat "$d/log"; exit 1; }
echo "sample_make_videos: OK"
