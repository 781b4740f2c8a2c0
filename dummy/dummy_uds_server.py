#!/usr/bin/env python3
"""Baseline discard listener, as gVisor's dummy_uds_server.py: Python stdlib,
one thread per connection, recv and discard. Kept to compare seccheck-dummy
against it side by side (bench/). Usage: dummy_uds_server.py [SOCKET]"""
import argparse
import os
import signal
import socket
import struct
import threading

lock = threading.Lock()
totals = {"connections": 0, "messages": 0, "bytes": 0, "dropped": 0}


def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def parse_args():
    parser = argparse.ArgumentParser(
        description="Listens on SOCKET like gVisor's dummy_uds_server.py: answers each sandbox's "
                    "handshake and discards every message. Prints per-connection counts on "
                    "disconnect and totals on SIGINT/SIGTERM; removes the socket on exit.")
    parser.add_argument("socket", nargs="?", default="/tmp/seccheck.sock", metavar="SOCKET",
                        help="the SOCK_SEQPACKET socket to listen on (default: %(default)s)")
    return parser.parse_args()   # --help: exit 0; an unknown option: exit 2, named


def serve(conn, seq):
    conn.recv(10240)                    # client handshake
    conn.send(b"\x08\x01")              # Handshake{version: 1}
    messages = size = dropped = 0
    while True:
        msg = conn.recv(1 << 20)
        if not msg:
            break
        messages += 1
        size += len(msg)
        if len(msg) >= 8:
            dropped = struct.unpack_from("<I", msg, 4)[0]
    conn.close()
    with lock:
        totals["connections"] += 1
        totals["messages"] += messages
        totals["bytes"] += size
        totals["dropped"] += dropped
    print(f"connection {seq} closed: {plural(messages, 'message')}, {plural(size, 'byte')}, "
          f"{dropped} dropped by the sandbox", flush=True)


def main():
    path = parse_args().socket

    def stop(*_):
        print(f"total: {plural(totals['connections'], 'connection')}, {plural(totals['messages'], 'message')}, "
              f"{plural(totals['bytes'], 'byte')}, {totals['dropped']} dropped by the sandbox", flush=True)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        os._exit(0)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    server.bind(path)
    server.listen(128)
    print(f"listening on {path}", flush=True)
    seq = 0
    while True:
        conn, _ = server.accept()
        seq += 1
        threading.Thread(target=serve, args=(conn, seq), daemon=True).start()


if __name__ == "__main__":
    main()
