#!/bin/bash
# Drives Debian's Cantata 2.5 (a Qt MPD client) under Xvfb, for LibraryClientTests.cantata:
# connects it to an MPD server, waits until it has listed the library, plays a song from its
# Library page, and takes a screenshot of that page.
#   scripts/lib/cantata.sh PORT MUSIC_DIR WORK_DIR DISPLAY SHOT.png
# Prints "library: N songs" and "playing"; exits 1 with "cantata.sh: …" on stderr when a step fails.
#
# What Cantata needs (found by experiment): a session bus (without one it exits at once); a
# config with General/version set (else its first-run wizard); a fresh home (a cached library
# whose version is the server's db_update is not listed again). It lists the library with
# `stats`, `list genre`, then `lsinfo` of every directory, and keeps it in an SQLite file whose
# `versions.collection` is set when the listing is complete: that is how this script knows.
set -u
[ $# -eq 5 ] || { echo "usage: $0 PORT MUSIC_DIR WORK_DIR DISPLAY SHOT.png" >&2; exit 2; }
PORT=$1 MUSIC=$2 WORK=$3 DNUM=${4#:} SHOT=$5
fail() { echo "cantata.sh: $*" >&2; exit 1; }
for t in Xvfb dbus-run-session dbus-send cantata xdotool xwd xwdtopnm pnmtopng mpc sqlite3; do
    command -v "$t" >/dev/null || fail "$t is not installed (scripts/bootstrap --test)"
done
mpc -h 127.0.0.1 -p "$PORT" status >/dev/null 2>&1 || fail "no MPD server on 127.0.0.1:$PORT"

mkdir -p "$WORK"
HOME_DIR=$WORK/home
rm -rf "$HOME_DIR"
mkdir -p "$HOME_DIR/.config/cantata" "$HOME_DIR/.cache" "$HOME_DIR/.local/share" "$HOME_DIR/run"
chmod 700 "$HOME_DIR/run"
cat > "$HOME_DIR/.config/cantata/cantata.conf" <<EOF
[General]
version=2.5.0
fetchCovers=false
page=LibraryPage
mainWindowPos=@Point(0 0)
mainWindowSize=@Size(1280 800)

[Connection]
host=127.0.0.1
port=$PORT
passwd=
dir=${MUSIC%/}/
EOF

# -noreset: Xvfb would otherwise reset when the readiness probe (its first client) leaves.
Xvfb ":$DNUM" -screen 0 1280x800x24 -nolisten tcp -noreset > "$WORK/xvfb.log" 2>&1 &
XVFB=$!
trap 'kill $XVFB 2>/dev/null; wait $XVFB 2>/dev/null' EXIT
for _ in $(seq 100); do DISPLAY=":$DNUM" xdotool getdisplaygeometry >/dev/null 2>&1 && break; sleep 0.1; done
DISPLAY=":$DNUM" xdotool getdisplaygeometry >/dev/null 2>&1 || fail "Xvfb :$DNUM did not start ($(cat "$WORK/xvfb.log"))"

cat > "$WORK/session.sh" <<'SESSION'
set -u
fail() { echo "cantata.sh: $*" >&2; quit; exit 1; }
action() { dbus-send --session --print-reply --dest=mpd.cantata /cantata mpd.cantata.triggerAction "string:$1" >/dev/null; }
quit() {
    [ -n "${CANTATA:-}" ] || return 0
    action quit 2>/dev/null
    for _ in $(seq 50); do kill -0 "$CANTATA" 2>/dev/null || break; sleep 0.1; done
    kill "$CANTATA" 2>/dev/null; wait "$CANTATA" 2>/dev/null; CANTATA=
}
export HOME=$HOME_DIR XDG_CONFIG_HOME=$HOME_DIR/.config XDG_CACHE_HOME=$HOME_DIR/.cache \
       XDG_DATA_HOME=$HOME_DIR/.local/share XDG_RUNTIME_DIR=$HOME_DIR/run DISPLAY=:$DNUM
MPC="mpc -h 127.0.0.1 -p $PORT"
cantata --no-network > "$WORK/cantata.log" 2>&1 &
CANTATA=$!
WINDOW=
for _ in $(seq 600); do
    kill -0 "$CANTATA" 2>/dev/null || fail "cantata exited: $(tail -5 "$WORK/cantata.log")"
    xdotool search --name 'First Run' >/dev/null 2>&1 && fail "cantata showed its first-run wizard"
    WINDOW=$(xdotool search --onlyvisible --classname '^cantata$' 2>/dev/null | head -1)
    [ -n "$WINDOW" ] && break
    sleep 0.1
done
[ -n "$WINDOW" ] || fail "no Cantata window after 60 s"
SONGS=0
for _ in $(seq 2400); do
    kill -0 "$CANTATA" 2>/dev/null || fail "cantata exited: $(tail -5 "$WORK/cantata.log")"
    DB=$(ls "$XDG_DATA_HOME"/cantata/library/*.sql 2>/dev/null | head -1)
    if [ -n "$DB" ]; then
        VERSION=$(sqlite3 -cmd '.timeout 2000' "$DB" 'select collection from versions' 2>/dev/null)
        if [ "${VERSION:-0}" -gt 0 ] 2>/dev/null; then
            SONGS=$(sqlite3 -cmd '.timeout 2000' "$DB" 'select count(*) from songs' 2>/dev/null)
            break
        fi
    fi
    sleep 0.05
done
[ "${SONGS:-0}" -gt 0 ] 2>/dev/null || fail "Cantata did not list the library within 120 s"
echo "library: $SONGS songs"
# The Library page: the first artist's first album's first song, then "replace the play queue".
action showlibrarytab || fail "Cantata's D-Bus actions are not there"
xdotool windowfocus --sync "$WINDOW" 2>/dev/null
eval "$(xdotool getwindowgeometry --shell "$WINDOW")"
xdotool mousemove $((X + 150)) $((Y + 77)) click 1
sleep 0.3
for key in Home Left Right Right Right Right; do xdotool key "$key"; sleep 0.2; done
$MPC -q repeat on  # (the songs last 0.2–0.5 s)
action replaceplayqueue
PLAYING=
for _ in $(seq 200); do
    case "$($MPC status 2>/dev/null)" in *"[playing]"*) PLAYING=1; break ;; esac
    sleep 0.05
done
[ -n "$PLAYING" ] || fail "nothing plays after Cantata replaced the queue: $($MPC status 2>&1 | tr '\n' ' ')"
echo "playing: $($MPC current)"
sleep 1
xwd -root -silent | xwdtopnm 2>/dev/null | pnmtopng > "$SHOT" 2>/dev/null
[ -s "$SHOT" ] || fail "no screenshot"
$MPC -q repeat off
$MPC -q stop
quit
SESSION
export HOME_DIR PORT DNUM SHOT WORK
dbus-run-session -- bash "$WORK/session.sh" 2> >(grep -v 'Failed to set fd limit' >&2)
