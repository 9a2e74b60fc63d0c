#!/usr/bin/env python3
"""The chaos soak's clients: N clients over the daemon's JSON socket, MPD over TCP,
the web remote's WebSocket and MPRIS on D-Bus, each sending random valid and invalid commands
until told to stop. Each checks that every request gets a well-formed answer, or that the
connection closes cleanly (a daemon killed on purpose, a line too long), and reconnects.

  chaos_clients.py CONFIG.json

CONFIG: {"socket", "mpd_port", "http_port", "bus" (or null), "files": [paths], "clients": N,
"stop_file", "quiet_file", "down_file", "report"}. While `quiet_file` exists the clients send only
commands that change nothing (the soak then checks what the daemon saved against what was
heard). While `down_file` exists the daemon is being killed and restarted on purpose: a
connection refused then is expected. A hang (no answer for 20 s on an open connection while the
daemon is up) is a violation. The report: one JSON object a client, and the violations.
"""
import base64, json, os, random, socket, struct, subprocess, sys, threading, time

cfg = json.load(open(sys.argv[1]))
FILES = cfg["files"]
HANG = 20.0


def stopped():
    return os.path.exists(cfg["stop_file"])


def quiet():
    return os.path.exists(cfg["quiet_file"])


def daemon_down():
    return os.path.exists(cfg["down_file"])


class Closed(Exception):
    """The daemon closed the connection (cleanly or by dying)."""


class Violation(Exception):
    pass


def junk(rng):
    """A random line: bytes, an unknown word, or a huge line."""
    k = rng.random()
    if k < 0.4:
        line = bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 200))).replace(b"\n", b" ")
        # A blank line (blanks and a CR) gets no answer in either protocol, as in mpd: not one
        # to wait for (the 30-minute soak drew three).
        return line if line.strip(b" \t\r") else b"\x01" + line
    if k < 0.8:
        return ("frobnicate%d %s" % (rng.randrange(1000), "x" * rng.randrange(50))).encode()
    return b"a" * rng.randrange(70_000, 200_000)  # past max-request-bytes: the daemon closes


READ_ONLY_JSON = ["status", "list", "ping", "help", "outputs", "listpartitions", "stats", "playlists"]
READ_ONLY_MPD = ["status", "currentsong", "playlistinfo", "stats", "ping", "outputs", "listpartitions",
                 "commands", "tagtypes", "listplaylists", "lsinfo", "playlistid"]
NEVER = {"subscribe", "unsubscribe", "idle", "readpicture", "albumart", "close", "password"}


class Stats:
    def __init__(self, kind, n):
        self.d = {"client": "%s-%d" % (kind, n), "requests": 0, "answers": 0, "refusals": 0,
                  "closes": 0, "connects": 0, "violations": []}

    def bump(self, k, by=1):
        self.d[k] += by

    def violation(self, text):
        if len(self.d["violations"]) < 20:
            self.d["violations"].append(text[:400])


def recv_until(sock, buf, deadline, enough):
    """Reads into buf until enough(buf); TimeoutError at the deadline, Closed at the end."""
    while not enough(buf):
        left = deadline - time.time()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(min(left, 1.0))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            raise Closed
        if not chunk:
            raise Closed
        buf += chunk
    return buf


def recv_line(sock, buf, deadline):
    buf = recv_until(sock, buf, deadline, lambda b: b"\n" in b)
    line, _, rest = buf.partition(b"\n")
    return line, rest


def wait_answer(fn, stats, what):
    """Runs fn(deadline); a timeout is a hang unless the daemon was taken down meanwhile."""
    start = time.time()
    while True:
        try:
            return fn(start + HANG)
        except TimeoutError:
            if daemon_down() or stopped():
                raise Closed
            stats.violation("no answer in %.0f s to %s" % (HANG, what))
            raise Closed


class JSONish:
    """Requests from the daemon's own command table (`help`), arguments of the right type or not."""

    def __init__(self, commands, rng):
        self.commands = [c for c in commands if c["name"] not in NEVER]
        self.rng = rng

    def value(self, arg):
        r = self.rng
        if r.random() < 0.1:  # the wrong type
            return r.choice([None, "x", 3, 2.5, [], {}, True, "\u0000\n"])
        t, name = arg["type"], arg["name"]
        if t == "string":
            if name in ("mode",):
                return r.choice(["off", "one", "all", "oneshot", "on", "x"])
            return r.choice(FILES + ["../etc/passwd", "/etc/shadow", "", "a\nb", "chaos", "(Artist == 'x')"])
        if t == "number":
            return r.choice([0, 1.5, -3, 30, 1e9, 0.25, r.uniform(-5, 120)])
        if t == "integer":
            return r.choice([0, 1, 2, 3, -1, 50, 100, 2**40, r.randrange(0, 200)])
        if t == "boolean":
            return r.choice([True, False])
        if t == "strings":
            return r.sample(FILES, r.randrange(0, min(3, len(FILES)) + 1))
        if t == "integers":
            return [r.randrange(0, 30) for _ in range(r.randrange(0, 4))]
        return None

    def request(self, rid):
        r = self.rng
        if quiet():
            return {"id": rid, "command": r.choice(READ_ONLY_JSON)}
        c = r.choice(self.commands)
        req = {"id": rid, "command": c["name"]}
        for a in c["arguments"]:
            if r.random() < 0.6:
                req[a["name"]] = self.value(a)
        if r.random() < 0.05:
            req["bogus"] = 1
        return req


def check_json_reply(line, rid, stats):
    try:
        v = json.loads(line)
    except ValueError:
        stats.violation("not JSON: %r" % line[:200])
        return None
    if not isinstance(v, dict):
        stats.violation("not an object: %r" % line[:200])
        return None
    return v


def await_json_answer(next_text, want_id, stats, what):
    """Reads messages with next_text(deadline) (a message's text, None for one that is not an
    answer) until the request's answer, passing over events; checks it."""
    while True:
        text = wait_answer(next_text, stats, what)
        if text is None:
            continue
        v = check_json_reply(text, want_id, stats)
        if v is None or "event" in v:
            continue
        check_answer(v, want_id, stats)
        return


def check_answer(v, want_id, stats):
    """A JSON reply (over the socket or the WebSocket): its id is the request's; a refusal
    carries an error code and message."""
    if want_id is not None and v.get("id") != want_id:
        stats.violation("reply id %r for request %r" % (v.get("id"), want_id))
    if v.get("ok") is False:
        e = v.get("error")
        if not (isinstance(e, dict) and isinstance(e.get("code"), str) and isinstance(e.get("message"), str)):
            stats.violation("malformed error: %r" % json.dumps(v)[:200])
        stats.bump("refusals")
    stats.bump("answers")


def json_client(n, stats, rng, commands):
    gen = JSONish(commands, rng)
    while not stopped():
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(cfg["socket"])
        except OSError:
            time.sleep(0.2)
            continue
        stats.bump("connects")
        box = [b""]  # what was read past the last line

        def next_line(deadline):
            line, box[0] = recv_line(s, box[0], deadline)
            return line
        try:
            for rid in range(1, 1_000_000):
                if stopped():
                    break
                if rng.random() < 0.05 and not quiet():
                    line = junk(rng)
                    want_id = None
                else:
                    line = json.dumps(gen.request(rid)).encode()
                    want_id = rid
                stats.bump("requests")
                try:
                    s.sendall(line + b"\n")
                except OSError:
                    raise Closed
                await_json_answer(next_line, want_id, stats, line[:80])
                time.sleep(rng.uniform(0, 0.05))
        except Closed:
            stats.bump("closes")
        finally:
            s.close()


def mpd_words(rng, commands):
    if quiet():
        return rng.choice(READ_ONLY_MPD)
    k = rng.random()
    files = FILES
    if k < 0.5:
        c = rng.choice(["status", "currentsong", "play", "pause 1", "pause 0", "next", "previous", "stop",
                        "setvol %d" % rng.randrange(-5, 110), "seekcur %s" % rng.choice(["+5", "-5", "10", "abc"]),
                        "random %d" % rng.randrange(0, 3), "repeat 1", "single oneshot", "consume 0",
                        "add \"%s\"" % rng.choice(files), "playlistinfo", "playlistinfo 0:3", "delete %d" % rng.randrange(0, 9),
                        "move 0 %d" % rng.randrange(0, 5), "find \"(Artist == 'x')\"", "search any \"a\"",
                        "list album", "lsinfo", "update", "save chaos%d" % rng.randrange(3), "load chaos%d" % rng.randrange(3),
                        "rm chaos%d" % rng.randrange(3), "listplaylists", "outputs", "crossfade %d" % rng.randrange(0, 3),
                        "tagtypes", "stats", "partition default", "seek 0 %d" % rng.randrange(0, 50),
                        "playid %d" % rng.randrange(0, 30), "prio 5 0", "clear" if rng.random() < 0.02 else "ping"])
        return c
    if k < 0.8:
        return rng.choice(commands) + " " + " ".join(rng.choice(["1", "x", "-1", "0:2", "\"a b\"", "\"", "(", ""]) for _ in range(rng.randrange(0, 4)))
    return None


def mpd_response(s, buf, deadline, stats):
    """Reads one response: lines then OK or ACK; checks each line's shape."""
    lines = []
    while True:
        line, buf = recv_line(s, buf, deadline)
        t = line.decode("utf-8", "replace")
        if t == "OK" or t.startswith("ACK ["):
            return t, lines, buf
        if t.startswith("binary: "):
            stats.violation("binary answer not asked for")
            raise Closed
        if t == "list_OK":
            continue
        key = t.split(": ", 1)[0] if ": " in t else ""
        if key.split(":", 1)[0].isdigit() and key.endswith(":file"):
            key = "file"  # `playlist`: POS:file: URI
        if not key or not key.replace("_", "").replace("-", "").isalnum():
            stats.violation("malformed MPD line: %r" % t[:200])
        lines.append(t)


def mpd_client(n, stats, rng):
    commands = None
    while not stopped():
        try:
            s = socket.create_connection(("127.0.0.1", cfg["mpd_port"]), timeout=5)
        except OSError:
            time.sleep(0.2)
            continue
        stats.bump("connects")
        buf = b""
        try:
            def hello(deadline):
                return recv_line(s, b"", deadline)
            greeting, buf = wait_answer(hello, stats, "greeting")
            if not greeting.startswith(b"OK MPD "):
                stats.violation("greeting %r" % greeting[:80])
            if commands is None:
                s.sendall(b"commands\n")
                _, lines, buf = wait_answer(lambda d: mpd_response(s, buf, d, stats), stats, "commands")
                commands = [l.split(": ", 1)[1] for l in lines if l.startswith("command: ")]
                commands = [c for c in commands if c not in NEVER and c not in ("kill", "noidle")]
            while not stopped():
                words = mpd_words(rng, commands)
                if rng.random() < 0.05 and not quiet():
                    # A command list, or idle then noidle.
                    if rng.random() < 0.5:
                        body = ["status", words or "ping", "currentsong"]
                        line = ("command_list_ok_begin\n" + "\n".join(body) + "\ncommand_list_end").encode()
                    else:
                        s.sendall(b"idle\n")
                        time.sleep(rng.uniform(0, 0.3))
                        line = b"noidle"
                elif words is None:
                    line = junk(rng)
                else:
                    line = words.encode()
                stats.bump("requests")
                try:
                    s.sendall(line + b"\n")
                except OSError:
                    raise Closed
                end, _, buf = wait_answer(lambda d: mpd_response(s, buf, d, stats), stats, line[:80].decode("utf-8", "replace"))
                stats.bump("answers")
                if end.startswith("ACK"):
                    stats.bump("refusals")
                time.sleep(rng.uniform(0, 0.05))
        except Closed:
            stats.bump("closes")
        except OSError:
            stats.bump("closes")
        finally:
            s.close()


def ws_frame(payload, opcode=1):
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws_read(s, buf, deadline):
    """One server frame: (opcode, payload, rest)."""
    def need(k, buf):
        return recv_until(s, buf, deadline, lambda b: len(b) >= k)
    buf = need(2, buf)
    op, n = buf[0] & 0x0F, buf[1] & 0x7F
    at = 2
    if n == 126:
        buf = need(4, buf)
        n, at = struct.unpack(">H", buf[2:4])[0], 4
    elif n == 127:
        buf = need(10, buf)
        n, at = struct.unpack(">Q", buf[2:10])[0], 10
    buf = need(at + n, buf)
    return op, buf[at:at + n], buf[at + n:]


def ws_client(n, stats, rng, commands):
    gen = JSONish(commands, rng)
    while not stopped():
        try:
            s = socket.create_connection(("127.0.0.1", cfg["http_port"]), timeout=5)
            key = base64.b64encode(os.urandom(16)).decode()
            s.sendall(("GET /ws HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (cfg["http_port"], key)).encode())
            head = b""
            deadline = time.time() + HANG
            while b"\r\n\r\n" not in head and time.time() < deadline:
                c = s.recv(4096)
                if not c:
                    break
                head += c
            if not head.startswith(b"HTTP/1.1 101"):
                s.close()
                time.sleep(0.2)
                continue
            box = [head.split(b"\r\n\r\n", 1)[1]]  # what was read past the last frame
        except OSError:
            time.sleep(0.2)
            continue
        stats.bump("connects")

        def next_text(deadline):
            op, data, box[0] = ws_read(s, box[0], deadline)
            if op == 8:
                raise Closed
            return data if op == 1 else None  # (a ping or pong: not an answer)
        try:
            for rid in range(1, 1_000_000):
                if stopped():
                    break
                k = rng.random()
                if k < 0.03 and not quiet():
                    payload, opcode, want = junk(rng)[:60000], 2, None  # a binary frame: refused
                elif k < 0.06 and not quiet():
                    payload, opcode, want = junk(rng)[:60000], 1, None  # not JSON (or not UTF-8)
                else:
                    payload, opcode, want = json.dumps(gen.request(rid)).encode(), 1, rid
                stats.bump("requests")
                try:
                    s.sendall(ws_frame(payload, opcode))
                except OSError:
                    raise Closed
                await_json_answer(next_text, want, stats, payload[:80])
                time.sleep(rng.uniform(0, 0.05))
        except Closed:
            stats.bump("closes")
        finally:
            s.close()


def mpris_client(n, stats, rng):
    env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=cfg["bus"])
    base = ["busctl", "--user", "--timeout=20", "call", "org.mpris.MediaPlayer2.backline", "/org/mpris/MediaPlayer2"]
    while not stopped():
        p = "org.mpris.MediaPlayer2.Player"
        if quiet():
            args = ["org.freedesktop.DBus.Properties", "Get", "ss", p, rng.choice(["PlaybackStatus", "Metadata", "Position"])]
        else:
            args = rng.choice([
                [p, "PlayPause"], [p, "Next"], [p, "Previous"], [p, "Play"], [p, "Pause"],
                [p, "Seek", "x", str(rng.choice([5_000_000, -5_000_000, 10**12]))],
                ["org.freedesktop.DBus.Properties", "Get", "ss", p, rng.choice(["PlaybackStatus", "Metadata", "Volume", "Position", "Bogus"])],
                ["org.freedesktop.DBus.Properties", "Set", "ssv", p, "Volume", "d", str(rng.choice([0.5, 1.5, -1, 0.9]))],
                [p, "NoSuchMethod"], [p, "OpenUri", "s", rng.choice(FILES)],
            ])
        stats.bump("requests")
        try:
            r = subprocess.run(base + args, env=env, capture_output=True, text=True, timeout=HANG + 5)
        except subprocess.TimeoutExpired:
            if not daemon_down():
                stats.violation("busctl hung: %s" % " ".join(args))
            continue
        if r.returncode == 0:
            stats.bump("answers")
        elif "was not provided" in r.stderr or "not activatable" in r.stderr or "Connection" in r.stderr or daemon_down():
            stats.bump("closes")  # the daemon is not on the bus (killed, restarting)
        elif r.stderr.strip():
            stats.bump("answers")
            stats.bump("refusals")  # an error reply with its message
        else:
            stats.violation("busctl failed with no message: %s" % " ".join(args))
        time.sleep(rng.uniform(0.05, 0.3))


def main():
    # The command table, once (retried while the daemon starts).
    commands = None
    while commands is None and not stopped():
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(cfg["socket"])
            s.sendall(b'{"id":1,"command":"help"}\n')
            line, _ = recv_line(s, b"", time.time() + 10)
            commands = json.loads(line)["commands"]
            s.close()
        except (OSError, Closed, TimeoutError, ValueError, KeyError):
            time.sleep(0.3)
    n = cfg["clients"]
    kinds = ["json", "mpd", "ws"] + (["mpris"] if cfg.get("bus") else [])
    threads, all_stats = [], []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        st = Stats(kind, i)
        all_stats.append(st)
        rng = random.Random(1000 + i)
        if kind == "json":
            t = threading.Thread(target=json_client, args=(i, st, rng, commands))
        elif kind == "mpd":
            t = threading.Thread(target=mpd_client, args=(i, st, rng))
        elif kind == "ws":
            t = threading.Thread(target=ws_client, args=(i, st, rng, commands))
        else:
            t = threading.Thread(target=mpris_client, args=(i, st, rng))
        t.daemon = True
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    with open(cfg["report"] + ".tmp", "w") as f:
        json.dump([s.d for s in all_stats], f)
    os.rename(cfg["report"] + ".tmp", cfg["report"])


main()
