# Sourced by scripts/demo and scripts/bench: a private PulseAudio server with one null sink.
#   null_sink_start NAME   starts it (its own runtime dir), exports PULSE_SERVER & co; ALSA's
#                          "pulse" device then plays into sink NAME. Stopped on exit.
#   null_sink_record FILE  records the sink's monitor (S16LE stereo 44.1 kHz) until null_sink_stop_recording.
_ns_dir=""; _ns_pa=""; _ns_rec=""; _ns_keep=""

null_sink_start() {
  local name=$1
  _ns_dir=$(mktemp -d)
  cat > "$_ns_dir/default.pa" <<PA
load-module module-native-protocol-unix auth-anonymous=1 socket=$_ns_dir/native
load-module module-null-sink sink_name=$name rate=44100 channels=2 norewinds=1
set-default-sink $name
PA
  export PULSE_RUNTIME_PATH="$_ns_dir/run" PULSE_STATE_PATH="$_ns_dir/state" PULSE_SERVER="unix:$_ns_dir/native"
  pulseaudio -n -F "$_ns_dir/default.pa" --daemonize=no --exit-idle-time=-1 --use-pid-file=no \
    --log-target=file:"$_ns_dir/log" 2>/dev/null &
  _ns_pa=$!
  trap null_sink_stop EXIT
  for _ in $(seq 100); do pactl info >/dev/null 2>&1 && break; sleep 0.1; done
  # A silent stream kept open avoids the idle sink's start-up stall for the streams that follow.
  pacat --playback --raw --format=s16le --rate=44100 --channels=2 --latency-msec=100 /dev/zero &
  _ns_keep=$!
  sleep 0.5
}

null_sink_record() {
  parec -d "$(pactl get-default-sink).monitor" --raw --format=s16le --rate=44100 --channels=2 > "$1" &
  _ns_rec=$!
  sleep 0.3
}

null_sink_stop_recording() {
  [ -n "$_ns_rec" ] && { kill -INT "$_ns_rec" 2>/dev/null; wait "$_ns_rec" 2>/dev/null || true; }
  _ns_rec=""
}

null_sink_stop() {
  null_sink_stop_recording
  [ -n "$_ns_keep" ] && kill "$_ns_keep" 2>/dev/null || true
  [ -n "$_ns_pa" ] && { kill "$_ns_pa" 2>/dev/null; wait "$_ns_pa" 2>/dev/null || true; }
  [ -n "$_ns_dir" ] && rm -rf "$_ns_dir"
  _ns_keep=""; _ns_pa=""; _ns_dir=""
}
