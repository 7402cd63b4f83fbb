#!/usr/bin/env bash
# Test and benchmark videos for the video routes (issue 27), made with
# Debian's ffmpeg CLI (libx264, libx265, libvpx-vp9, an AV1 encoder when
# there is one), and OUT/manifest.json describing every file: what it is,
# what a decoder must deliver, and what FFmpeg itself makes of it.
#
#   samples/make_videos.sh [options] PHOTOS_DIR OUT_DIR
#
# PHOTOS_DIR: real photos (.jpg/.png) the clips pan and zoom over, e.g.
# ../shared/data/photos, samples/data or /usr/share/doc/opencv-doc/examples/data.
# Parts (folders of OUT_DIR):
#   w2/       the W2 corpus: CLIPS 1080p 30 fps H.264 High clips (B-frames,
#             5 Mbit/s, BT.709 limited), each a different pan/zoom over a photo
#   long/     long.mp4: one long clip of the same kind
#   codecs/   the first CODEC_CLIPS W2 clips again as HEVC 8-bit, HEVC 10-bit
#             and VP9, and one as AV1 and one as H.264 4:4:4 (the engines'
#             fallback cases)
#   colour/   flat (200,50,80) and colour-bar clips, H.264 and HEVC, tagged
#             BT.601 / BT.709, limited / full range, 320x240 and 1280x720,
#             10 frames; flat ones carry the expected RGB, every one a
#             reference frame (first frame, FFmpeg's decode with the matrix and
#             range named explicitly) as *.ref.png
#   hostile/  truncated MP4 / MKV / TS with and without B-frames, flipped bytes
#             mid-stream, zero-length, wrong extensions, odd sizes, a mid-stream
#             resolution change, rotated phone clips (90/180/270), interlaced,
#             variable frame rate
#   w4/       only when named: W4's Kinetics-like corpus (docs/benchmarks.md,
#             "W4"): --w4-videos videos of --w4-seconds, sizes by index i mod 20:
#             0-2 480x360, 3-7 640x360, 8-14 1280x720, 15-19 1920x1080 (600k,
#             800k, 2M, 4M bit/s); H.264 High (x264 superfast, -bf 3 for even
#             i and 2 for odd, 2 s closed GOPs, no scene cuts); --w4-hevc percent
#             of them (i mod 10 = 3 at 10%) HEVC (x265 ultrafast, same B-frames
#             and GOP length) when libx265 encodes here, else H.264 (said on
#             stderr and in the manifest's "meant"); each a pan over a photo
#             scaled once (cheap: 256 x 10 s take about a minute on 16 cores).
#             The manifest's frames are what was encoded: w4 files are not
#             probed (no ffprobe needed; 256 full decodes would cost more
#             than the encodes)
# Options (defaults: the full W2 corpus; tests pass tiny values):
#   --parts LIST        comma-separated subset of w2,long,codecs,colour,hostile
#                       (default), and w4
#   --clips N           W2 clips (16)
#   --seconds S         seconds per W2 clip (10); fractions allowed
#   --long S            seconds of long/long.mp4 (60)
#   --codec-clips N     W2 clips re-encoded per extra codec (2)
#   --codec-seconds S   seconds per codec clip (the W2 --seconds)
#   --size WxH          W2 / long / codecs size (1920x1080)
#   --fps F             (30)
#   --bitrate B         W2 / long bitrate (5M)
#   --colour-sizes L    comma-separated sizes of the colour clips (320x240,1280x720)
#   --hostile-frames N  frames of the hostile clips' base clips (60)
#   --w4-videos N       W4 videos (256)
#   --w4-seconds S      seconds per W4 video (10)
#   --w4-hevc P         percent of the W4 videos in HEVC (10; 0: none)
#   --jobs N            encodes in parallel (nproc)
# Idempotent: a file that exists is kept (each is written under a temporary
# name and renamed), a part whose options changed is made again, and FFmpeg's
# verdict on a file is cached by size and time (OUT/.probe). The manifest is
# written again on every run. Needs ffmpeg, ffprobe and python3.
#
# manifest.json: {"files": [{file (relative to OUT), part, codec, container,
# width, height, frames (what was encoded), pix_fmt, matrix, range, expect
# (ok | break | fail | damaged | wrong_extension), ..., "ffprobe": {frames,
# width, height, codec, pix_fmt, color_space, color_range, rotation,
# field_order, errors}, "ffmpeg": {frames, errors, exit}}]}: ffprobe's frames
# are `ffprobe -count_frames` (nb_read_frames), ffmpeg's the `frame=` of
# `ffmpeg -v error -progress - -i F -f null -`; errors the lines either
# printed at -v error.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit "${1:-2}"; }

parts=w2,long,codecs,colour,hostile clips=16 seconds=10 long=60 codec_clips=2 codec_seconds=""
size=1920x1080 fps=30 bitrate=5M colour_sizes=320x240,1280x720 hostile_frames=60 jobs=$(nproc)
w4_videos=256 w4_seconds=10 w4_hevc=10
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage 0 ;;
    --parts) parts=$2; shift 2 ;;
    --clips) clips=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --long) long=$2; shift 2 ;;
    --codec-clips) codec_clips=$2; shift 2 ;;
    --codec-seconds) codec_seconds=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --fps) fps=$2; shift 2 ;;
    --bitrate) bitrate=$2; shift 2 ;;
    --colour-sizes) colour_sizes=$2; shift 2 ;;
    --hostile-frames) hostile_frames=$2; shift 2 ;;
    --w4-videos) w4_videos=$2; shift 2 ;;
    --w4-seconds) w4_seconds=$2; shift 2 ;;
    --w4-hevc) w4_hevc=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --*) echo "make_videos.sh: unknown option $1" >&2; usage ;;
    *) args+=("$1"); shift ;;
  esac
done
[ ${#args[@]} -eq 2 ] || usage
photos_dir=${args[0]}; out=${args[1]}
codec_seconds=${codec_seconds:-$seconds}
# ffprobe: the manifest's verdicts on every part but w4 (the GPU machine, which
# makes W4's corpus, has ffmpeg alone)
need=(ffmpeg python3); [ -z "$(tr ',' '\n' <<< "$parts" | grep -vx w4)" ] || need+=(ffprobe)
for t in "${need[@]}"; do
  command -v "$t" > /dev/null || { echo "make_videos.sh: $t not found" >&2; exit 1; }
done
[[ $size =~ ^([0-9]+)x([0-9]+)$ ]] || { echo "make_videos.sh: --size $size: expected WxH" >&2; exit 2; }
W=${BASH_REMATCH[1]} H=${BASH_REMATCH[2]}
for v in clips codec_clips hostile_frames jobs fps w4_videos w4_hevc; do
  [[ ${!v} =~ ^[0-9]+$ ]] || { echo "make_videos.sh: --${v//_/-} ${!v}: expected a whole number" >&2; exit 2; }
done
for v in seconds long codec_seconds w4_seconds; do
  [[ ${!v} =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "make_videos.sh: --${v//_/-} ${!v}: expected seconds" >&2; exit 2; }
done
mapfile -t photos < <(find "$photos_dir" -maxdepth 1 -type f \( -iname '*.jpg' -o -iname '*.jpeg' -o -iname '*.png' \) | sort)
[ ${#photos[@]} -gt 0 ] || { echo "make_videos.sh: no .jpg/.png photos in $photos_dir" >&2; exit 2; }
frames_of() { python3 -c "import sys; print(max(1, round(float(sys.argv[1]) * int(sys.argv[2]))))" "$1" "$fps"; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
encoders=$(ffmpeg -hide_banner -encoders 2>/dev/null)
has_encoder() { grep -q " $1 " <<< "$encoders"; }
meta=$out/.meta.tsv; : > "$meta"
ff=(ffmpeg -nostdin -hide_banner -v error -y)

# --- helpers ----------------------------------------------------------------
# A part's recipe version: raise it when the part's recipe changes, and its
# files are made again.
declare -A recipe=([w2]=1 [long]=1 [codecs]=1 [colour]=1 [hostile]=2 [w4]=1)
# part NAME PARAMS: (re)start folder NAME when its recipe or parameters changed.
part() {
  local dir=$out/$1 params="${recipe[$1]} $2"
  if [ ! -f "$dir/.params" ] || [ "$(cat "$dir/.params")" != "$params" ]; then
    rm -rf "$dir"; mkdir -p "$dir"; printf '%s' "$params" > "$dir/.params"
  fi
}
want() { [[ ,$parts, == *,$1,* ]]; }
# note REL JSON: the manifest facts of OUT/REL known here (a JSON object).
note() { printf '%s\t%s\n' "$1" "$2" >> "$meta"; }
# run_bg: run "$@" in the background, at most $jobs at a time; failures are
# collected and reported by wait_all.
failures=$out/.failures; : > "$failures"
run_bg() {
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  ( "$@" || echo "$*" >> "$failures" ) &
}
wait_all() {
  wait
  if [ -s "$failures" ]; then
    echo "make_videos.sh: these steps failed:" >&2; cat "$failures" >&2; exit 1
  fi
}
# made FILE CMD...: run CMD (whose last argument is FILE) writing a temporary
# name first, unless FILE exists.
made() {
  local f=${*: -1}
  [ -s "$f" ] && return 0
  local tmp; tmp=$(dirname "$f")/.tmp.$$.$(basename "$f")
  "${@:1:$#-1}" "$tmp" || { rm -f "$tmp"; return 1; }
  mv "$tmp" "$f"
}
# The pan/zoom over photo (I mod photos) that makes clip I, W x H, N frames:
# each I pans or zooms its own way, so no two clips are alike.
pan_filter() {
  local i=$1 w=$2 h=$3 n=$4 z x y
  local m=$((n > 1 ? n - 1 : 1))
  case $(( (i / ${#photos[@]}) % 4 )) in
    0) z="1+0.4*on/$m"; x="(iw-iw/zoom)*on/$m"; y="(ih-ih/zoom)/2" ;;
    1) z="1.4-0.4*on/$m"; x="(iw-iw/zoom)*(1-on/$m)"; y="(ih-ih/zoom)*on/$m" ;;
    2) z="1.25"; x="(iw-iw/zoom)*on/$m"; y="(ih-ih/zoom)*(1-on/$m)" ;;
    3) z="1+0.3*on/$m"; x="(iw-iw/zoom)/2"; y="(ih-ih/zoom)/2" ;;
  esac
  local sw=$(( (w * 3 / 2 + 1) / 2 * 2 )) sh=$(( (h * 3 / 2 + 1) / 2 * 2 ))
  [ "$sw" -ge 2 ] || sw=2; [ "$sh" -ge 2 ] || sh=2
  printf '%s' "scale=$sw:$sh:force_original_aspect_ratio=increase,crop=$sw:$sh,zoompan=z='$z':x='$x':y='$y':d=$n:s=${w}x$h:fps=$fps"
}
photo_of() { printf '%s' "${photos[$(( $1 % ${#photos[@]} ))]}"; }
bt709=(-colorspace bt709 -color_primaries bt709 -color_trc bt709)
x264_w2=(-c:v libx264 -preset medium -profile:v high -bf 3 -pix_fmt yuv420p)
# pan_clip I W H N FILTER_TAIL OUT ENC...: clip I encoded with ENC.
pan_clip() {
  local i=$1 w=$2 h=$3 n=$4 tail=$5 f=$6; shift 6
  made "${ff[@]}" -i "$(photo_of "$i")" -vf "$(pan_filter "$i" "$w" "$h" "$n")$tail" -frames:v "$n" "$@" "$f"
}
json_str() { python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }

# --- w2: the corpus ---------------------------------------------------------
n_w2=$(frames_of "$seconds")
if want w2; then
  part w2 "$clips $n_w2 $size $fps $bitrate"
  for i in $(seq 0 $((clips - 1))); do
    f=$(printf 'w2/w2_%03d.mp4' "$i")
    run_bg pan_clip "$i" "$W" "$H" "$n_w2" ",format=yuv420p" "$out/$f" "${x264_w2[@]}" -b:v "$bitrate" \
      "${bt709[@]}" -color_range tv
    note "$f" "{\"part\":\"w2\",\"codec\":\"h264\",\"container\":\"mp4\",\"width\":$W,\"height\":$H,\"frames\":$n_w2,\"pix_fmt\":\"yuv420p\",\"b_frames\":3,\"matrix\":\"bt709\",\"range\":\"tv\",\"photo\":$(json_str "$(basename "$(photo_of "$i")")"),\"expect\":\"ok\"}"
  done
fi
if want long; then
  n_long=$(frames_of "$long")
  part long "$n_long $size $fps $bitrate"
  # One clip, not a concatenation: a photo per 5 s, each its own pan (a cut
  # every 5 s, as in real footage), encoded in one go.
  per=$(frames_of 5); [ "$per" -le "$n_long" ] || per=$n_long
  segs=$(( (n_long + per - 1) / per )); inputs=(); chain=""
  for s in $(seq 0 $((segs - 1))); do
    inputs+=(-i "$(photo_of $((s + 3)))")
    chain+="[$s:v]$(pan_filter $((s + 3)) "$W" "$H" "$per"),format=yuv420p,setsar=1[v$s];"
  done
  for s in $(seq 0 $((segs - 1))); do chain+="[v$s]"; done
  chain+="concat=n=$segs:v=1:a=0[v]"
  run_bg made "${ff[@]}" "${inputs[@]}" -filter_complex "$chain" -map '[v]' -frames:v "$n_long" "${x264_w2[@]}" \
    -b:v "$bitrate" "${bt709[@]}" -color_range tv "$out/long/long.mp4"
  note long/long.mp4 "{\"part\":\"long\",\"codec\":\"h264\",\"container\":\"mp4\",\"width\":$W,\"height\":$H,\"frames\":$n_long,\"pix_fmt\":\"yuv420p\",\"b_frames\":3,\"matrix\":\"bt709\",\"range\":\"tv\",\"expect\":\"ok\"}"
fi

# --- codecs: the same content in other codecs -------------------------------
if want codecs; then
  n_c=$(frames_of "$codec_seconds")
  av1=""; for e in libsvtav1 libaom-av1 librav1e; do has_encoder "$e" && { av1=$e; break; }; done
  part codecs "$codec_clips $n_c $size $fps $bitrate $av1"
  # name codec pix_fmt encoder-args (NVDEC: HEVC 8/10-bit and VP9 yes; AV1 and
  # H.264 4:4:4 are the CPU fallback cases).
  specs=("hevc8|hevc|yuv420p|-c:v libx265 -preset fast -x265-params log-level=error:bframes=3 -b:v $bitrate"
         "hevc10|hevc|yuv420p10le|-c:v libx265 -preset fast -x265-params log-level=error:bframes=3 -b:v $bitrate"
         "vp9|vp9|yuv420p|-c:v libvpx-vp9 -deadline realtime -cpu-used 8 -row-mt 1 -b:v $bitrate")
  for i in $(seq 0 $((codec_clips - 1))); do
    for spec in "${specs[@]}"; do
      IFS='|' read -r name codec pix enc <<< "$spec"
      ext=mp4; [ "$codec" = vp9 ] && ext=webm
      f=$(printf 'codecs/%s_%03d.%s' "$name" "$i" "$ext")
      # shellcheck disable=SC2086  # enc is a list of words
      run_bg pan_clip "$i" "$W" "$H" "$n_c" ",format=$pix" "$out/$f" $enc -pix_fmt "$pix" "${bt709[@]}" -color_range tv
      note "$f" "{\"part\":\"codecs\",\"codec\":\"$codec\",\"container\":\"$ext\",\"width\":$W,\"height\":$H,\"frames\":$n_c,\"pix_fmt\":\"$pix\",\"matrix\":\"bt709\",\"range\":\"tv\",\"nvdec\":true,\"expect\":\"ok\"}"
    done
  done
  if [ -n "$av1" ]; then
    case $av1 in
      libsvtav1) export SVT_LOG=1; enc=(-c:v libsvtav1 -preset 10 -b:v "$bitrate") ;;
      libaom-av1) enc=(-c:v libaom-av1 -cpu-used 8 -row-mt 1 -b:v "$bitrate") ;;
      *) enc=(-c:v "$av1" -b:v "$bitrate") ;;
    esac
    run_bg pan_clip 0 "$W" "$H" "$n_c" ",format=yuv420p" "$out/codecs/av1_000.mp4" "${enc[@]}" -pix_fmt yuv420p \
      "${bt709[@]}" -color_range tv
    note codecs/av1_000.mp4 "{\"part\":\"codecs\",\"codec\":\"av1\",\"encoder\":\"$av1\",\"container\":\"mp4\",\"width\":$W,\"height\":$H,\"frames\":$n_c,\"pix_fmt\":\"yuv420p\",\"matrix\":\"bt709\",\"range\":\"tv\",\"nvdec\":false,\"expect\":\"ok\"}"
  fi
  run_bg pan_clip 1 "$W" "$H" "$n_c" ",format=yuv444p" "$out/codecs/h264_444_000.mp4" -c:v libx264 -preset medium \
    -profile:v high444 -bf 3 -pix_fmt yuv444p -b:v "$bitrate" "${bt709[@]}" -color_range tv
  note codecs/h264_444_000.mp4 "{\"part\":\"codecs\",\"codec\":\"h264\",\"container\":\"mp4\",\"width\":$W,\"height\":$H,\"frames\":$n_c,\"pix_fmt\":\"yuv444p\",\"matrix\":\"bt709\",\"range\":\"tv\",\"nvdec\":false,\"expect\":\"ok\"}"
fi
wait_all

# --- colour: flat and bars, each matrix and range ---------------------------
if want colour; then
  part colour "$colour_sizes"
  # The tags and the conversion agree: RGB -> YUV with the named matrix and range.
  for sz in ${colour_sizes//,/ }; do
    [[ $sz =~ ^([0-9]+)x([0-9]+)$ ]] || { echo "make_videos.sh: --colour-sizes: $sz is not WxH" >&2; exit 2; }
    for content in flat bars; do
      case $content in
        flat) src="color=c=0xC83250:s=$sz:r=$fps"; expect_rgb="[200,50,80]" ;;
        bars) src="smptehdbars=s=$sz:r=$fps"; expect_rgb=null ;;
      esac
      for mat in bt601 bt709; do
        tag=$mat; [ "$mat" = bt601 ] && tag=smpte170m
        sws=$mat; [ "$mat" = bt601 ] && sws=bt601
        for range in tv pc; do
          for codec in h264 hevc; do
            case $codec in
              h264) enc=(-c:v libx264 -preset medium -profile:v high -bf 3 -qp 8) ;;
              hevc) enc=(-c:v libx265 -preset fast -x265-params log-level=error:bframes=3 -qp 8) ;;
            esac
            base=colour/${content}_${sz}_${mat}_${range}_$codec
            run_bg made "${ff[@]}" -f lavfi -i "$src" -frames:v 10 \
              -vf "scale=out_color_matrix=$sws:out_range=$range:flags=accurate_rnd+full_chroma_int,format=yuv420p" \
              "${enc[@]}" -pix_fmt yuv420p -colorspace "$tag" -color_primaries "$tag" -color_trc "$tag" \
              -color_range "$range" "$out/$base.mp4"
            note "$base.mp4" "{\"part\":\"colour\",\"content\":\"$content\",\"codec\":\"$codec\",\"container\":\"mp4\",\"width\":${BASH_REMATCH[1]},\"height\":${BASH_REMATCH[2]},\"frames\":10,\"pix_fmt\":\"yuv420p\",\"matrix\":\"$mat\",\"range\":\"$range\",\"expected_rgb\":$expect_rgb,\"reference\":\"$base.ref.png\",\"expect\":\"ok\"}"
          done
        done
      done
    done
  done
  wait_all
  # Reference frames: FFmpeg's decode of frame 0 with the matrix and range
  # named explicitly (not left to the tags).
  while IFS=$'\t' read -r rel js; do
    [[ $rel == colour/* ]] || continue
    mat=$(sed -E 's/.*"matrix":"([a-z0-9]+)".*/\1/' <<< "$js"); range=$(sed -E 's/.*"range":"([a-z]+)".*/\1/' <<< "$js")
    run_bg made "${ff[@]}" -i "$out/$rel" -frames:v 1 \
      -vf "scale=in_color_matrix=$mat:in_range=$range:flags=accurate_rnd+full_chroma_int,format=rgb24" \
      "$out/${rel%.mp4}.ref.png"
  done < "$meta"
  wait_all
fi

# --- hostile ----------------------------------------------------------------
# cut FILE OUT: the first 60% of FILE's bytes.
cut60() { head -c $(( $(stat -c %s "$1") * 60 / 100 )) "$1" > "$2"; }
# flip FILE OUT: FILE with 8 bytes inverted inside the key frame nearest the
# middle of the video stream (ffprobe's packet positions), at the first of
# 1/2, 1/3, 2/3, 1/4 ... of the packet where FFmpeg's decoder reports the
# damage (it conceals it and goes on): damage a decoder can see.
flip() {
  python3 - "$1" "$2" <<'PY'
import json, subprocess, sys
src, dst = sys.argv[1], sys.argv[2]
pk = json.loads(subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                                "packet=pos,size,flags", "-of", "json", src],
                               capture_output=True, text=True, check=True).stdout)["packets"]
keys = [i for i, p in enumerate(pk) if "K" in p["flags"] and i > 0] or [len(pk) // 2]
p = pk[min(keys, key=lambda i: abs(i - len(pk) // 2))]
pos, size = int(p["pos"]), int(p["size"])
orig = open(src, "rb").read()
for num, den in ((1, 2), (1, 3), (2, 3), (1, 4), (3, 4), (1, 5), (2, 5), (3, 5), (4, 5)):
    data = bytearray(orig)
    at = pos + size * num // den
    for k in range(at, min(at + 8, len(data))):
        data[k] ^= 0xFF
    open(dst, "wb").write(data)
    r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", dst, "-f", "null", "-"], capture_output=True, text=True)
    if r.stderr.strip():
        break
PY
}
if want hostile; then
  nh=$hostile_frames
  part hostile "$nh $fps"
  hw=320 hh=240
  # Base clips, real content: H.264 with and without B-frames in MP4 (moov
  # first, so a cut file still opens), MKV and TS.
  for bf in 3 0; do
    for ext in mp4 mkv ts; do
      flags=(); [ "$ext" = mp4 ] && flags=(-movflags +faststart)
      run_bg pan_clip 5 "$hw" "$hh" "$nh" ",format=yuv420p" "$out/hostile/.base_bf${bf}.$ext" -c:v libx264 \
        -preset medium -bf "$bf" -g 30 -pix_fmt yuv420p "${bt709[@]}" -color_range tv "${flags[@]}"
    done
  done
  # MP4 with the moov at the end: cut, it cannot be opened at all.
  run_bg pan_clip 5 "$hw" "$hh" "$nh" ",format=yuv420p" "$out/hostile/.base_moov_end.mp4" -c:v libx264 -preset medium \
    -bf 3 -g 30 -pix_fmt yuv420p "${bt709[@]}" -color_range tv
  wait_all
  common="\"codec\":\"h264\",\"width\":$hw,\"height\":$hh,\"pix_fmt\":\"yuv420p\",\"matrix\":\"bt709\",\"range\":\"tv\""
  for bf in 3 0; do
    for ext in mp4 mkv ts; do
      made cut60 "$out/hostile/.base_bf${bf}.$ext" "$out/hostile/truncated_bf${bf}.$ext"
      note "hostile/truncated_bf${bf}.$ext" "{\"part\":\"hostile\",\"case\":\"truncated\",\"container\":\"$ext\",$common,\"b_frames\":$bf,\"frames\":$nh,\"expect\":\"break\",\"note\":\"first 60% of the bytes; deliver every frame FFmpeg decodes, then one failure\"}"
    done
    for ext in mp4 mkv ts; do
      made flip "$out/hostile/.base_bf${bf}.$ext" "$out/hostile/flipped_bf${bf}.$ext"
      note "hostile/flipped_bf${bf}.$ext" "{\"part\":\"hostile\",\"case\":\"flipped\",\"container\":\"$ext\",$common,\"b_frames\":$bf,\"frames\":$nh,\"expect\":\"damaged\",\"note\":\"8 bytes inverted inside the key frame nearest the middle; FFmpeg reports decode errors, conceals and goes on\"}"
    done
  done
  made cut60 "$out/hostile/.base_moov_end.mp4" "$out/hostile/truncated_moov_at_end.mp4"
  note hostile/truncated_moov_at_end.mp4 "{\"part\":\"hostile\",\"case\":\"truncated\",\"container\":\"mp4\",$common,\"b_frames\":3,\"frames\":$nh,\"expect\":\"fail\",\"note\":\"first 60% of an MP4 whose moov is at the end: no index, nothing decodable\"}"
  [ -f "$out/hostile/zero_length.mp4" ] || : > "$out/hostile/zero_length.mp4"
  note hostile/zero_length.mp4 "{\"part\":\"hostile\",\"case\":\"zero_length\",\"container\":\"mp4\",\"frames\":0,\"expect\":\"fail\"}"
  made cp "$out/hostile/.base_bf3.mp4" "$out/hostile/mp4_named.jpg"
  note hostile/mp4_named.jpg "{\"part\":\"hostile\",\"case\":\"wrong_extension\",\"content\":\"mp4\",\"container\":\"mp4\",$common,\"frames\":$nh,\"expect\":\"wrong_extension\",\"note\":\"an MP4 named .jpg: decoded as the video it is, or one failure naming it; never garbage\"}"
  made cp "$(photo_of 0)" "$out/hostile/jpeg_named.mp4"
  note hostile/jpeg_named.mp4 "{\"part\":\"hostile\",\"case\":\"wrong_extension\",\"content\":\"image\",\"expect\":\"wrong_extension\",\"note\":\"a photo named .mp4: decoded as the image it is (one frame), or one failure naming it\"}"
  # Odd sizes: 4:2:0 H.264/HEVC need even sizes, so H.264 4:4:4 and VP9 4:2:0
  # (any size) carry them; each tried, kept if the encoder takes it.
  for sz in 321x241 2x2 1x1; do
    w=${sz%x*} h=${sz#*x}
    for kind in h264_444 vp9; do
      case $kind in
        h264_444) f=hostile/odd_${sz}_h264_444.mp4; pix=yuv444p
                  enc=(-c:v libx264 -preset medium -profile:v high444 -bf 3 -pix_fmt yuv444p) ;;
        vp9) f=hostile/odd_${sz}_vp9.webm; pix=yuv420p
             enc=(-c:v libvpx-vp9 -deadline realtime -cpu-used 8 -b:v 200k -pix_fmt yuv420p) ;;
      esac
      if pan_clip 7 "$w" "$h" 30 ",format=$pix" "$out/$f" "${enc[@]}" "${bt709[@]}" -color_range tv 2> "$out/.enc.log"; then
        note "$f" "{\"part\":\"hostile\",\"case\":\"odd_size\",\"codec\":\"${kind%%_*}\",\"container\":\"${f##*.}\",\"width\":$w,\"height\":$h,\"frames\":30,\"pix_fmt\":\"$pix\",\"matrix\":\"bt709\",\"range\":\"tv\",\"expect\":\"ok\"}"
      else
        echo "make_videos.sh: $kind does not encode $sz (left out): $(head -c 300 "$out/.enc.log")" >&2
      fi
    done
  done
  # A resolution change mid-stream: two TS segments (320x240 then 640x360)
  # joined byte for byte, as a broadcast stream switches.
  pan_clip 8 320 240 30 ",format=yuv420p" "$out/hostile/.res_a.ts" -c:v libx264 -preset medium -bf 3 -pix_fmt yuv420p \
    "${bt709[@]}" -color_range tv
  pan_clip 9 640 360 30 ",format=yuv420p" "$out/hostile/.res_b.ts" -c:v libx264 -preset medium -bf 3 -pix_fmt yuv420p \
    "${bt709[@]}" -color_range tv -output_ts_offset 1.1
  [ -s "$out/hostile/resolution_change.ts" ] || cat "$out/hostile/.res_a.ts" "$out/hostile/.res_b.ts" > "$out/hostile/resolution_change.ts"
  note hostile/resolution_change.ts "{\"part\":\"hostile\",\"case\":\"resolution_change\",\"codec\":\"h264\",\"container\":\"ts\",\"width\":320,\"height\":240,\"width_after\":640,\"height_after\":360,\"frames\":60,\"frames_before_change\":30,\"pix_fmt\":\"yuv420p\",\"matrix\":\"bt709\",\"range\":\"tv\",\"expect\":\"ok\"}"
  # Rotated phone clips: a 320x240 clip with a display matrix (MP4 'rotate'
  # tag, FFmpeg 5.1): displayed upright it is 240x320 for 90 and 270.
  for r in 90 180 270; do
    made "${ff[@]}" -i "$out/hostile/.base_bf3.mp4" -c copy -metadata:s:v:0 rotate=$r "$out/hostile/rotated_$r.mp4"
    dw=$hw dh=$hh; [ "$r" = 180 ] || { dw=$hh; dh=$hw; }
    note "hostile/rotated_$r.mp4" "{\"part\":\"hostile\",\"case\":\"rotated\",\"rotate_tag\":$r,\"container\":\"mp4\",$common,\"b_frames\":3,\"frames\":$nh,\"display_width\":$dw,\"display_height\":$dh,\"expect\":\"ok\",\"note\":\"rotate clockwise by rotate_tag to display upright (FFmpeg 5.1's ffprobe prints the display matrix rotation as rotate_tag mod 360, e.g. 270 as -90)\"}"
  done
  # Interlaced (field-coded, top field first) and variable frame rate.
  pan_clip 10 "$hw" "$hh" "$nh" ",format=yuv420p" "$out/hostile/interlaced_tff.mp4" -c:v libx264 -preset medium -bf 3 \
    -flags +ilme+ildct -x264-params tff=1 -pix_fmt yuv420p "${bt709[@]}" -color_range tv
  note hostile/interlaced_tff.mp4 "{\"part\":\"hostile\",\"case\":\"interlaced\",$common,\"container\":\"mp4\",\"frames\":$nh,\"expect\":\"ok\"}"
  # VFR: frames 3k+2 dropped and 20..29 kept, timestamps kept (gaps of 1-2 frames).
  nv=$(python3 -c "import sys; n=int(sys.argv[1]); print(sum(1 for i in range(n) if i % 3 != 2 or 20 <= i < 30))" "$nh")
  pan_clip 11 "$hw" "$hh" "$nh" ",select='not(eq(mod(n\,3)\,2))+between(n\,20\,29)',format=yuv420p" \
    "$out/hostile/vfr.mp4" -fps_mode vfr -c:v libx264 -preset medium -bf 3 -pix_fmt yuv420p "${bt709[@]}" -color_range tv
  note hostile/vfr.mp4 "{\"part\":\"hostile\",\"case\":\"vfr\",$common,\"container\":\"mp4\",\"frames\":$nv,\"expect\":\"ok\",\"note\":\"frames counted from the stream, not duration x fps\"}"
fi
# --- w4: W4's Kinetics-like corpus (only when named) -------------------------
# Video I: a pan over photo (I mod photos) scaled once to 1.3..1.7 times the
# frame (the loop filter repeats it; crop moves: no resampling per frame, so
# 1080p encodes fast), its path and speed by I.
w4_filter() {
  local i=$1 w=$2 h=$3 n=$4 k x y np=${#photos[@]}
  local m=$((n > 1 ? n - 1 : 1))
  k=$(( 13 + (i / np / 4) % 5 ))  # tenths
  case $(( (i / np) % 4 )) in
    0) x="(iw-ow)*n/$m"; y="(ih-oh)*(0.5+0.4*sin(n/37))" ;;
    1) x="(iw-ow)*(1-n/$m)"; y="(ih-oh)*n/$m" ;;
    2) x="(iw-ow)*(0.5+0.45*sin(2*PI*n/$m))"; y="(ih-oh)*(1-n/$m)" ;;
    3) x="(iw-ow)*(0.5+0.45*sin(2*PI*n/$m))"; y="(ih-oh)*(0.5+0.45*cos(2*PI*n/$m))" ;;
  esac
  local sw=$(( (w * k / 10 + 1) / 2 * 2 )) sh=$(( (h * k / 10 + 1) / 2 * 2 ))
  printf '%s' "scale=$sw:$sh:force_original_aspect_ratio=increase,crop=$sw:$sh,loop=loop=$m:size=1:start=0,setpts=N/$fps/TB,crop=$w:$h:x='$x':y='$y',format=yuv420p"
}
if want w4; then
  n_w4=$(frames_of "$w4_seconds"); gop=$((2 * fps))
  # gpu-bundle stubs libraries it was not told to keep: a stubbed libx265
  # is listed by -encoders and crashes on use, so encode a little to know.
  x265=0
  timeout 30 "${ff[@]}" -f lavfi -i testsrc2=s=64x64:d=0.2 -pix_fmt yuv420p -c:v libx265 -x265-params log-level=error \
    -f null - > /dev/null 2>&1 && x265=1
  [ "$x265" = 1 ] || [ "$w4_hevc" = 0 ] ||
    echo "make_videos.sh: w4: libx265 does not encode here: the ${w4_hevc}% meant as HEVC are H.264 (manifest: \"meant\": \"hevc\")" >&2
  part w4 "$w4_videos $n_w4 $fps $w4_hevc x265=$x265 photos=${#photos[@]}"
  # The costliest first, so that the last jobs to start are short ones.
  order=$(for i in $(seq 0 $((w4_videos - 1))); do
            c=$(( i % 20 < 8 ? 1 : i % 20 < 15 ? 2 : 4 ))
            (( (i * w4_hevc + 70) % 100 < w4_hevc )) && c=$((c * 2))
            echo "$c $i"
          done | sort -k1,1nr -k2,2n | cut -d' ' -f2)
  for i in $order; do
    case $(( i % 20 )) in
      0|1|2) w=480 h=360 br=600 ;;
      3|4|5|6|7) w=640 h=360 br=800 ;;
      8|9|10|11|12|13|14) w=1280 h=720 br=2000 ;;
      *) w=1920 h=1080 br=4000 ;;
    esac
    bf=$(( i % 2 ? 2 : 3 )); codec=h264; meant=h264
    (( (i * w4_hevc + 70) % 100 < w4_hevc )) && meant=hevc
    [ "$meant" = hevc ] && [ "$x265" = 1 ] && codec=hevc
    if [ "$codec" = hevc ]; then
      enc=(-c:v libx265 -preset ultrafast -b:v "${br}k" -tag:v hvc1
           -x265-params "log-level=error:bframes=$bf:keyint=$gop:min-keyint=$gop:scenecut=0:pools=1:frame-threads=1")
    else
      enc=(-c:v libx264 -preset superfast -profile:v high -bf "$bf" -g "$gop" -keyint_min "$gop" -sc_threshold 0
           -b:v "${br}k" -maxrate "$((br * 3 / 2))k" -bufsize "$((br * 2))k" -threads 1)
    fi
    f=$(printf 'w4/w4_%03d_%dp_%s.mp4' "$i" "$h" "$codec")
    pj=$(basename "$(photo_of "$i")"); pj=${pj//\\/\\\\}; pj=${pj//\"/\\\"}  # JSON-escaped (json_str: a python a file)
    run_bg made "${ff[@]}" -filter_threads 1 -i "$(photo_of "$i")" -vf "$(w4_filter "$i" "$w" "$h" "$n_w4")" \
      -r "$fps" -frames:v "$n_w4" "${enc[@]}" -pix_fmt yuv420p -movflags +faststart "$out/$f"
    note "$f" "{\"part\":\"w4\",\"codec\":\"$codec\",\"meant\":\"$meant\",\"container\":\"mp4\",\"width\":$w,\"height\":$h,\"frames\":$n_w4,\"fps\":$fps,\"gop\":$gop,\"b_frames\":$bf,\"kbit_s\":$br,\"pix_fmt\":\"yuv420p\",\"photo\":\"$pj\",\"expect\":\"ok\"}"
  done
  wait_all
fi
rm -f "$out/.enc.log" "$failures"

# --- manifest: the facts above plus FFmpeg's verdicts ------------------------
python3 - "$out" "$meta" <<'PY'
import concurrent.futures, json, os, re, subprocess, sys
out, meta = sys.argv[1], sys.argv[2]
cache_dir = os.path.join(out, ".probe")
os.makedirs(cache_dir, exist_ok=True)
entries = []
for line in open(meta):
    rel, js = line.rstrip("\n").split("\t", 1)
    e = {"file": rel}
    e.update(json.loads(js))
    entries.append(e)

def errors(text):
    return [l for l in text.splitlines() if l.strip()][:20]

def probe(rel):
    path = os.path.join(out, rel)
    st = os.stat(path)
    key = os.path.join(cache_dir, rel.replace("/", "__") + ".json")
    stamp = [st.st_size, st.st_mtime_ns]
    if os.path.exists(key):
        c = json.load(open(key))
        if c.get("stamp") == stamp:
            return c["ffprobe"], c["ffmpeg"]
    p = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
                        "stream=codec_name,width,height,pix_fmt,color_space,color_range,field_order,nb_read_frames"
                        ":stream_side_data=rotation:stream_side_data_list", "-of", "json", path],
                       capture_output=True, text=True)
    fp = {"exit": p.returncode, "errors": errors(p.stderr)}
    try:
        streams = json.loads(p.stdout or "{}").get("streams", [])
    except json.JSONDecodeError:
        streams = []
    if streams:
        s = streams[0]
        fp.update({"codec": s.get("codec_name"), "width": s.get("width"), "height": s.get("height"),
                   "pix_fmt": s.get("pix_fmt"), "color_space": s.get("color_space"),
                   "color_range": s.get("color_range"), "field_order": s.get("field_order"),
                   "frames": int(s["nb_read_frames"]) if str(s.get("nb_read_frames", "")).isdigit() else None})
        rot = [sd.get("rotation") for sd in s.get("side_data_list", []) if "rotation" in sd]
        fp["rotation"] = rot[0] if rot else None
        fp["displaymatrix"] = any(sd.get("side_data_type") == "Display Matrix" for sd in s.get("side_data_list", []))
    else:
        fp["frames"] = None
    p = subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-v", "error", "-progress", "pipe:1", "-i", path,
                        "-map", "0:v:0", "-f", "null", "-"], capture_output=True, text=True)
    frames = re.findall(r"^frame=(\d+)$", p.stdout, re.M)
    fm = {"exit": p.returncode, "frames": int(frames[-1]) if frames else 0, "errors": errors(p.stderr)}
    json.dump({"stamp": stamp, "ffprobe": fp, "ffmpeg": fm}, open(key, "w"))
    return fp, fm

# W4's files are not probed: frames are what was encoded (-frames:v).
unprobed = {"skipped": "w4: not probed"}
with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
    results = list(pool.map(lambda e: (unprobed, unprobed) if e["part"] == "w4" else probe(e["file"]), entries))
for e, (fp, fm) in zip(entries, results):
    e["bytes"] = os.path.getsize(os.path.join(out, e["file"]))
    e["ffprobe"], e["ffmpeg"] = fp, fm
# Facts the files must have, checked here so that a wrong file never ships.
bad = []
for e in entries:
    fp, fm = e["ffprobe"], e["ffmpeg"]
    if fp is unprobed:
        continue
    if e["expect"] == "ok":
        if fm["frames"] != e["frames"] or fp["frames"] != e["frames"]:
            bad.append(f"{e['file']}: made with {e['frames']} frames, ffprobe counts {fp['frames']}, ffmpeg decodes {fm['frames']}")
        if "matrix" in e and fp.get("color_space") != {"bt601": "smpte170m"}.get(e["matrix"], e["matrix"]):
            bad.append(f"{e['file']}: tagged {fp.get('color_space')}, meant {e['matrix']}")
        if "range" in e and fp.get("color_range") != e["range"]:
            bad.append(f"{e['file']}: range {fp.get('color_range')}, meant {e['range']}")
    if e.get("case") == "rotated" and (fp.get("rotation") is None or fp["rotation"] % 360 != e["rotate_tag"] % 360):
        bad.append(f"{e['file']}: no display matrix rotation {e['rotate_tag']} (ffprobe: {fp.get('rotation')})")
    if e.get("case") == "truncated" and e["expect"] == "break" and not (0 < fm["frames"] < e["frames"]):
        bad.append(f"{e['file']}: truncated, yet ffmpeg decodes {fm['frames']} of {e['frames']} frames")
def middle_rgb(png):
    p = subprocess.run(["ffmpeg", "-v", "error", "-i", png, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True)
    w, h = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", png],
                          capture_output=True, text=True).stdout.strip().split(",")
    at = 3 * (int(h) // 2 * int(w) + int(w) // 2)
    return list(p.stdout[at:at + 3])
for e in entries:
    if e.get("expected_rgb"):
        got = middle_rgb(os.path.join(out, e["reference"]))
        e["reference_rgb"] = got
        if max(abs(a - b) for a, b in zip(got, e["expected_rgb"])) > 2:
            bad.append(f"{e['file']}: FFmpeg decodes {got}, made from {e['expected_rgb']}")
with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump({"generator": "samples/make_videos.sh", "files": entries}, f, indent=1)
sizes = {}
for e in entries:
    sizes[e["part"]] = sizes.get(e["part"], 0) + e["bytes"]
print(f"make_videos.sh: {len(entries)} files in {out} (" +
      ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in sizes.items()) + "); manifest.json")
if bad:
    sys.exit("make_videos.sh: files not as meant:\n  " + "\n  ".join(bad))
PY
