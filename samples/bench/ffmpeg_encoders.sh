# Sourced by gpu_prepare.sh (on the bundle, here) and gpu_suite.sh (on the GPU
# machine's ffmpeg): the encoders the video cases make their clips with.
#   missing_encoders FFMPEG_CMD...   prints those FFMPEG_CMD cannot encode with, one a line
video_case_encoders=(libx264 libx265 libaom-av1 libvpx-vp9)
missing_encoders() {
  local enc
  for enc in "${video_case_encoders[@]}"; do
    timeout 30 "$@" -nostdin -v error -f lavfi -i testsrc2=s=64x64:d=0.2 -pix_fmt yuv420p -c:v "$enc" -f null - \
      > /dev/null 2>&1 || echo "$enc"
  done
}
