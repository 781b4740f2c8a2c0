#!/usr/bin/env python3
"""A real HTTP(S) alert receiver for the delivery tests (test_deliver.c).

Listens on 127.0.0.1 (a free port, written to --port-file), takes POSTs the
way falcosidekick does (one JSON alert per request), and records every
request as one JSON line in --log: its sequence number, what it did with it,
the path, the headers and the body. What it does with each request: the
next item of --plan, else the first line of --control (re-read for every
request, so a test changes the receiver's behaviour while it runs), else ok.

Behaviours:
  ok            200
  NNN           that status (500, 503, 400, 429, ...)
  hang S        read the request, answer only after S seconds (too late)
  slow S        answer 200 after S seconds
  close         send the start of a 200 answer, then close the connection
  redirect URL  307 to URL
  dropconn      close the connection without answering
"""
import argparse
import json
import os
import socketserver
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self, args):
        self.lock = threading.Lock()
        self.plan = [p for p in (args.plan or "").split(",") if p]
        self.control = args.control
        self.log = open(args.log, "a", buffering=1)
        self.seq = 0

    def next_action(self):
        with self.lock:
            self.seq += 1
            if self.plan:
                return self.seq, self.plan.pop(0)
        if self.control and os.path.exists(self.control):
            with open(self.control) as f:
                line = f.readline().strip()
            if line:
                return self.seq, line
        return self.seq, "ok"

    def record(self, seq, action, handler, body):
        entry = {"seq": seq, "action": action, "path": handler.path,
                 "headers": {k.lower(): v for k, v in handler.headers.items()},
                 "body": body.decode("utf-8", "surrogateescape")}
        with self.lock:
            self.log.write(json.dumps(entry) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, as falcosidekick
    disable_nagle_algorithm = True  # the answer's header and body in separate writes: no 40 ms delayed-ACK wait

    def log_message(self, fmt, *args):
        pass

    def answer(self, status, body=b"ok", extra=()):
        self.send_response(status)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def do_POST(self):
        state = self.server.state
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        seq, action = state.next_action()
        state.record(seq, action, self, body)
        word, _, arg = action.partition(" ")
        if word == "ok":
            self.answer(200)
        elif word.isdigit():
            self.answer(int(word), b"refused by the test receiver")
        elif word in ("hang", "slow"):
            time.sleep(float(arg))
            try:
                self.answer(200)
            except OSError:
                pass   # the client gave up
            if word == "hang":
                self.close_connection = True
        elif word == "close":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart")
            self.wfile.flush()
            self.close_connection = True
        elif word == "redirect":
            self.answer(307, b"", (("Location", arg),))
        elif word == "dropconn":
            self.close_connection = True
        else:
            self.answer(500, b"unknown action " + action.encode())


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--plan")
    ap.add_argument("--control")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    args = ap.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    server.state = State(args)
    if args.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.cert, args.key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{port}\n")
    os.rename(tmp, args.port_file)
    print(f"listening on {port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
