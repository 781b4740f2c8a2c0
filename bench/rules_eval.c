/* rules_eval.c - the detection engine's cost per event: decodes
 * mixed_syscalls.trace and redis_rw.trace once, then times
 * rules_engine_eval over them with 0, 20 and 500 rules of the usual kind
 * (file opens, spawned processes, network, privilege changes; the 500 are
 * generated variants), and the rules files given after ROUNDS (the same
 * best-of-ROUNDS figure for bench/rules/usual-20.yaml against
 * usual-20-regex.yaml, say). Prints ns per event for each set.
 * Usage: bench-rules-eval TRACES_DIR [ROUNDS [RULES.yaml...]]   (default 20 rounds) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "decode.h"
#include "replay.h"
#include "rules.h"
#include "strbuf.h"

static const char *const usual_rules[] = {
    "- rule: read sensitive %d\n  desc: d\n  condition: evt.type in (open, openat, openat2) and evt.dir = < and "
    "evt.is_open_read = true and fd.name in (/etc/shadow, /etc/sudoers, /etc/pam.conf%s) and not proc.name in "
    "(sshd, sudo)\n  output: '%%fd.name by %%proc.cmdline parent %%proc.pname'\n  priority: Warning\n",
    "- rule: shell spawned %d\n  desc: d\n  condition: evt.type in (execve, execveat) and evt.dir = < and proc.name in "
    "(sh, bash, dash, zsh%s) and proc.pname exists and not proc.pname in (cron, sshd)\n"
    "  output: '%%proc.cmdline parent %%proc.pname %%container.id'\n  priority: Notice\n",
    "- rule: write below etc %d\n  desc: d\n  condition: evt.type in (open, openat) and evt.dir = < and "
    "evt.is_open_write = true and fd.name pmatch (/etc, /usr/bin%s)\n  output: '%%fd.name %%proc.name'\n"
    "  priority: Error\n",
    "- rule: outbound %d\n  desc: d\n  condition: evt.type = connect and evt.dir = < and fd.typechar in (4, 6) and not "
    "fd.sip in (127.0.0.1, 10.0.0.0/8%s)\n  output: '%%fd.name %%proc.name'\n  priority: Notice\n",
    "- rule: setuid %d\n  desc: d\n  condition: evt.type in (setuid, setresuid) and evt.arg.id = 0 and not proc.name in "
    "(sudo%s)\n  output: '%%proc.name %%user.uid'\n  priority: Notice\n",
    "- rule: tmp exec %d\n  desc: d\n  condition: evt.type = execve and proc.exepath startswith /tmp/ and proc.name glob "
    "'*x%s*'\n  output: '%%proc.exepath'\n  priority: Critical\n",
    "- rule: chroot %d\n  desc: d\n  condition: evt.type in (chroot, mount, unshare, ptrace%s) and evt.dir = <\n"
    "  output: '%%proc.name %%evt.type'\n  priority: Warning\n",
    "- rule: redis write %d\n  desc: d\n  condition: evt.type in (write, pwrite64) and fd.name icontains "
    "'.rdb%s' and proc.name = redis-server\n  output: '%%fd.name'\n  priority: Notice\n",
    "- rule: read from socket %d\n  desc: d\n  condition: evt.type = read and fd.num > 1000 and proc.name endswith "
    "'x%s'\n  output: '%%fd.num'\n  priority: Debug\n",
    "- rule: raw uname %d\n  desc: d\n  condition: evt.type in (uname, getpid) and proc.aname = nosuch%s\n"
    "  output: '%%proc.name'\n  priority: Debug\n",
};

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static char *make_rules(int n)
{
    struct strbuf sb = {0};
    size_t kinds = sizeof(usual_rules) / sizeof(usual_rules[0]);
    for (int i = 0; i < n; i++) {
        /* variants: one more list item, network, or pattern per copy */
        static const char *const extras[] = {", /etc/v%d", ", v%d", ", /opt/v%d", ", 192.168.%d.0/24", ", v%d",
                                             "%d", "", "%d", "%d", "%d"};
        char extra[64] = "";
        if (i >= (int)kinds)
            snprintf(extra, sizeof(extra), extras[i % kinds], i % 250);
        strbuf_printf(&sb, usual_rules[i % kinds], i, extra);   /* the templates above */
    }
    strbuf_putc(&sb, '\0');
    return sb.data ? sb.data : strdup("");
}
#pragma GCC diagnostic pop

struct decoded {
    struct event *ev;
    size_t n;
};

static void decode_all(const char *path, struct arena *a, struct decoded *out, uint64_t conn)
{
    struct replay_trace t;
    char err[512];
    if (replay_trace_load(&t, path, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench-rules-eval: %s\n", err);
        exit(1);
    }
    struct decoder d;
    decoder_init(&d);
    out->ev = calloc(t.count, sizeof(*out->ev));
    out->n = 0;
    for (size_t i = 0; i < t.count; i++) {
        struct wire_header h;
        if (wire_header_parse(t.packets[i], t.lengths[i], &h) != WIRE_OK)
            continue;
        const uint8_t *raw = arena_memdup(a, t.packets[i], t.lengths[i]);
        struct event *ev = &out->ev[out->n++];
        decode_event(&d, a, &h, raw, t.lengths[i], ev);
        ev->conn_id = conn;
    }
    replay_trace_free(&t);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    struct strbuf sb = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
        strbuf_append(&sb, buf, n);
    fclose(f);
    strbuf_putc(&sb, '\0');
    return sb.failed ? NULL : sb.data;
}

/* Best-of-rounds ns per event of one rule set (NULL: none) over both traces. */
static int measure(const char *label, const char *text, struct decoded *traces, int rounds)
{
    for (int t = 0; t < 2; t++) {
        struct rules_engine_config cfg;
        rules_engine_config_defaults(&cfg);
        struct rules_engine *e = rules_engine_new(&cfg);
        if (text) {
            /* a fresh copy per engine: the engine owns its set */
            struct rules_diag d = {0};
            struct rule_set *rs = rule_set_load_buffer("bench.yaml", text, strlen(text), &d);
            if (!rs) {
                rules_diag_print(&d, stderr);
                return 1;
            }
            rules_diag_free(&d);
            rules_engine_set_rules(e, rs);
        }
        struct alert_list l = {0};
        uint64_t alerts = 0;
        double best = 1e30;
        for (int r = 0; r < rounds; r++) {
            double t0 = now_ns();
            for (size_t i = 0; i < traces[t].n; i++) {
                rules_engine_eval(e, &traces[t].ev[i], i, &l);
                if (l.count + l.nsuppressed > 512) {
                    alerts += l.count;
                    alert_list_reset(&l);
                }
            }
            double dt = now_ns() - t0;
            alerts += l.count;
            alert_list_reset(&l);
            if (dt < best)
                best = dt;
        }
        printf("%-24s %-22s %12zu %12.1f %10" PRIu64 "\n", label, t ? "redis_rw.trace" : "mixed_syscalls.trace",
               traces[t].n, best / (double)traces[t].n, alerts / (uint64_t)rounds);
        alert_list_free(&l);
        rules_engine_free(e);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench-rules-eval TRACES_DIR [ROUNDS [RULES.yaml...]]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 20;
    struct arena a;
    arena_init(&a, 1 << 20, SIZE_MAX);
    struct decoded traces[2];
    char path[4096];
    snprintf(path, sizeof(path), "%s/mixed_syscalls.trace", argv[1]);
    decode_all(path, &a, &traces[0], 1);
    snprintf(path, sizeof(path), "%s/redis_rw.trace", argv[1]);
    decode_all(path, &a, &traces[1], 2);
    static const int sets[] = {0, 20, 500};
    printf("%-24s %-22s %12s %12s %10s\n", "rules", "trace", "events", "ns/event", "alerts");
    int rc = 0;
    for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]) && !rc; s++) {
        char *text = make_rules(sets[s]);
        char label[32];
        snprintf(label, sizeof(label), "%d", sets[s]);
        rc = measure(label, sets[s] ? text : NULL, traces, rounds);
        free(text);
    }
    for (int i = 3; i < argc && !rc; i++) {
        char *text = read_file(argv[i]);
        if (!text) {
            fprintf(stderr, "bench-rules-eval: cannot read %s\n", argv[i]);
            rc = 1;
            break;
        }
        const char *base = strrchr(argv[i], '/');
        rc = measure(base ? base + 1 : argv[i], text, traces, rounds);
        free(text);
    }
    for (int t = 0; t < 2; t++)
        free(traces[t].ev);
    arena_free(&a);
    return rc;
}
