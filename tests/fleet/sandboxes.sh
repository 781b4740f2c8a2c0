# sandboxes.sh - sandbox connections held open or closed on command, for the
# fleet tests that need a connection's life in their hands (sourced after
# lib.sh). One python3 process keeps them; say sends it a command and waits
# until it is done:
#
#   sandboxes_start    starts it ($dir/sandboxes.py, fed through fd 7)
#   say open NAME SOCKET   connects to SOCKET and does the handshake
#   say send NAME N        N events (container/start messages, empty)
#   say close NAME         closes it
#   sandboxes_end      closes fd 7 (the process ends with it)

sandboxes_start() {
    cat >"$dir/sandboxes.py" <<'PY'
import socket, struct, sys
conns = {}
for k, line in enumerate(open(sys.argv[1]), 1):
    cmd, name, *arg = line.split()
    if cmd == "open":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(10)
        s.connect(arg[0])
        s.send(b"\x08\x01")   # Handshake{version: 1}
        s.recv(64)
        conns[name] = s
    elif cmd == "send":
        for _ in range(int(arg[0])):
            conns[name].send(struct.pack("<HHI", 8, 1, 0))
    elif cmd == "close":
        conns.pop(name).close()
    print("done", k, flush=True)
PY
    mkfifo "$dir/commands"
    exec 7<>"$dir/commands"
    said=0
    spawn sandboxes /usr/bin/python3 "$dir/sandboxes.py" "$dir/commands"
}

say() {   # say COMMAND...: one command, and wait for its answer
    echo "$*" >&7
    said=$((said + 1))
    wait_for 20 grep -qx "done $said" "$dir/sandboxes.log" || { fail "the sandboxes did not do '$*'"; return 1; }
}

sandboxes_end() { exec 7>&-; }
