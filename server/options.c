#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "event_indexes.h"
#include "log.h"
#include "metrics.h"
#include "container.h"
#include "rules.h"

#define SECCHECKD_VERSION "0.1.0"

enum option_kind { KIND_STRING, KIND_UINT, KIND_SIZE, KIND_U64, KIND_CUSTOM, KIND_FLAG };

struct option_def {
    const char *name;
    const char *arg;            /* shown in --help */
    enum option_kind kind;
    size_t offset;              /* the field it sets, in struct options */
    size_t size;                /* and its size, to tell a change on reload */
    uint64_t min, max;          /* numbers */
    int (*parse)(struct options *o, const char *value, char *err, size_t errlen);   /* KIND_CUSTOM */
    bool reloadable;            /* SIGHUP applies it to the running daemon */
    const char *help;           /* may hold '\n' for more lines */
    const char *fallback;       /* the default, as shown in --help */
};

#define FIELD(f) offsetof(struct options, f)

/* ---- the custom parsers ---- */

static int parse_mode(struct options *o, const char *v, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    unsigned long mode = strtoul(v, &end, 8);
    if (errno || end == v || *end || mode > 0777) {
        snprintf(err, errlen, "--socket-mode: expected an octal mode from 0 to 0777 like 0660, got '%s'", v);
        return -1;
    }
    o->server.socket_mode = (mode_t)mode;
    return 0;
}

static int parse_on_full(struct options *o, const char *v, char *err, size_t errlen)
{
    if (strcmp(v, "block") != 0 && strcmp(v, "drop") != 0) {
        snprintf(err, errlen, "--on-full: expected block or drop, got '%s'", v);
        return -1;
    }
    o->server.drop_when_full = strcmp(v, "drop") == 0;
    return 0;
}

static int parse_rules_absent(struct options *o, const char *v, char *err, size_t errlen)
{
    enum rules_absent_mode m;
    if (rules_absent_mode_parse(v, &m) != 0) {
        snprintf(err, errlen, "--rules-absent-fields: expected disable or run, got '%s'", v);
        return -1;
    }
    o->rules_absent_run = m == RULES_ABSENT_RUN;
    return 0;
}

/* One sink or several ("sqlite,ndjson"): every event goes to each. */
static int parse_sink(struct options *o, const char *v, char *err, size_t errlen)
{
    static const char *const known[] = {"sqlite", "discard", "record", "ndjson", "text"};
    char *copy = strdup(v), *save = NULL;
    int rc = 0, count = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        bool ok = false;
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
            ok |= strcmp(tok, known[i]) == 0;
        if (!ok) {
            snprintf(err, errlen, "--sink: expected sqlite, discard, record, ndjson or text (or a comma list), "
                     "got '%s'", tok);
            rc = -1;
        }
        count++;
    }
    free(copy);
    if (rc == 0 && count == 0) {
        snprintf(err, errlen, "--sink: empty");
        rc = -1;
    }
    if (rc == 0) {
        free(o->sink);
        o->sink = strdup(v);
    }
    return rc;
}

/* The largest values the duration and size options take. Past them no
 * setting makes sense, and the conversions the daemon does (seconds to
 * nanoseconds, 64-bit byte counts and file offsets) cannot overflow. */
#define RETAIN_MAX_S (36500ull * 86400)   /* 100 years */
#define RETAIN_MAX_TEXT "36500d (100 years)"
#define BYTES_MAX (1ull << 48)            /* 256T: SQLite's own largest database */
#define BYTES_MAX_TEXT "256T"

static int parse_retain(struct options *o, const char *v, char *err, size_t errlen)
{
    uint64_t s;
    if (cli_parse_duration_s(v, RETAIN_MAX_S, &s) != 0) {
        snprintf(err, errlen, "--retain: expected a duration like 3600, 90m, 12h or 7d (0: forever), at most "
                 RETAIN_MAX_TEXT ", got '%s'", v);
        return -1;
    }
    o->retain_s = s;
    return 0;
}

static int parse_max_db_size(struct options *o, const char *v, char *err, size_t errlen)
{
    uint64_t bytes;
    if (cli_parse_bytes(v, BYTES_MAX, &bytes) != 0 || (bytes && bytes < (1u << 20))) {
        snprintf(err, errlen, "--max-db-size: expected a size from 1M to " BYTES_MAX_TEXT " like 512M or 20G "
                 "(0: no limit), got '%s'", v);
        return -1;
    }
    o->max_db_bytes = bytes;
    return 0;
}

static int parse_indexes(struct options *o, const char *v, char *err, size_t errlen)
{
    return event_indexes_parse(v, &o->indexes, err, errlen);
}

static int parse_ndjson_max(struct options *o, const char *v, char *err, size_t errlen)
{
    uint64_t bytes;
    if (cli_parse_bytes(v, BYTES_MAX, &bytes) != 0) {
        snprintf(err, errlen, "--ndjson-max-size: expected a size like 100M, at most " BYTES_MAX_TEXT
                 " (0: never rotate), got '%s'", v);
        return -1;
    }
    o->ndjson_max_bytes = bytes;
    return 0;
}

static int parse_log_level(struct options *o, const char *v, char *err, size_t errlen)
{
    int level = log_level_parse(v);
    if (level < 0) {
        snprintf(err, errlen, "--log-level: expected error, warn, info or debug, got '%s'", v);
        return -1;
    }
    o->log_level = level;
    return 0;
}

/* A user or group id given as a number: decimal digits below
 * 4294967295, since (uid_t)-1 and (gid_t)-1 mean "no id" to the kernel
 * (chown leaves it unchanged) and larger numbers do not fit. */
static int parse_id_number(const char *v, unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (!isdigit((unsigned char)v[0]) || *end)
        return -1;   /* not a number: the caller says so */
    *out = n;
    return errno || n >= UINT32_MAX ? 1 : 0;
}

static int parse_socket_group(struct options *o, const char *v, char *err, size_t errlen)
{
    struct group *g = getgrnam(v);
    unsigned long long gid = g ? g->gr_gid : 0;
    int rc = g ? 0 : parse_id_number(v, &gid);
    if (rc < 0) {
        snprintf(err, errlen, "--socket-group: no group named '%s' (or give a group id below %u)", v, UINT32_MAX);
        return -1;
    }
    if (rc > 0) {
        snprintf(err, errlen, "--socket-group: a group id must be below %u, got '%s'", UINT32_MAX, v);
        return -1;
    }
    o->server.socket_gid = (long long)gid;
    return 0;
}

/* "0,1000,alice": each a user name or a number; replaces the list. */
static int parse_allow_uid(struct options *o, const char *v, char *err, size_t errlen)
{
    struct server_config *c = &o->server;
    c->allowed_uids_count = 0;
    char *copy = strdup(v), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        struct passwd *pw = getpwnam(tok);
        unsigned long long uid = pw ? pw->pw_uid : 0;
        int id_rc = pw ? 0 : parse_id_number(tok, &uid);
        if (id_rc < 0) {
            snprintf(err, errlen, "--allow-uid: '%s' is neither a user name nor a uid below %u", tok, UINT32_MAX);
            rc = -1;
        } else if (id_rc > 0) {
            snprintf(err, errlen, "--allow-uid: a uid must be below %u, got '%s'", UINT32_MAX, tok);
            rc = -1;
        } else if (c->allowed_uids_count == SERVER_MAX_ALLOWED_UIDS) {
            snprintf(err, errlen, "--allow-uid: at most %d uids", SERVER_MAX_ALLOWED_UIDS);
            rc = -1;
        } else {
            c->allowed_uids[c->allowed_uids_count++] = (uid_t)uid;
        }
    }
    free(copy);
    return rc;
}

/* Repeatable: each --rules adds a file or directory (kept one per line);
 * none: no rules, and no --default-rules either. */
static int parse_rules(struct options *o, const char *v, char *err, size_t errlen)
{
    if (strcmp(v, "none") == 0) {
        free(o->rules);
        o->rules = NULL;
        o->rules_none = true;
        return 0;
    }
    o->rules_none = false;
    size_t count = 0;
    for (const char *p = o->rules; p && *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != '\0'))
        count++;
    if (!v[0] || strchr(v, '\n')) {
        snprintf(err, errlen, "--rules: expected the path of a rules file or directory, got '%s'", v);
        return -1;
    }
    if (count == OPTIONS_RULES_MAX) {
        snprintf(err, errlen, "--rules: at most %d files or directories (a directory loads all its *.yaml)",
                 OPTIONS_RULES_MAX);
        return -1;
    }
    size_t old = o->rules ? strlen(o->rules) : 0;
    char *joined = realloc(o->rules, old + strlen(v) + 2);
    if (!joined) {
        snprintf(err, errlen, "--rules: out of memory");
        return -1;
    }
    if (old)
        joined[old++] = '\n';
    strcpy(joined + old, v);
    o->rules = joined;
    return 0;
}

/* Repeatable: each --runsc-root adds a directory (kept one per line). */
static int parse_runsc_root(struct options *o, const char *v, char *err, size_t errlen)
{
    size_t count = 0;
    for (const char *p = o->runsc_roots; p && *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != '\0'))
        count++;
    if ((v[0] != '/' && strcmp(v, "none") != 0) || strchr(v, '\n')) {
        snprintf(err, errlen, "--runsc-root: expected the absolute path of a runsc root directory (runsc --root), "
                 "or none, got '%s'", v);
        return -1;
    }
    if (count == CONTAINER_ROOTS_MAX) {
        snprintf(err, errlen, "--runsc-root: at most %d directories", CONTAINER_ROOTS_MAX);
        return -1;
    }
    size_t old = o->runsc_roots ? strlen(o->runsc_roots) : 0;
    char *joined = realloc(o->runsc_roots, old + strlen(v) + 2);
    if (!joined) {
        snprintf(err, errlen, "--runsc-root: out of memory");
        return -1;
    }
    if (old)
        joined[old++] = '\n';
    strcpy(joined + old, v);
    o->runsc_roots = joined;
    return 0;
}

static int parse_alerts_max(struct options *o, const char *v, char *err, size_t errlen)
{
    if (cli_parse_bytes(v, BYTES_MAX, &o->alerts_max_bytes) != 0) {
        snprintf(err, errlen, "--alerts-max-size: expected a size like 100M, at most " BYTES_MAX_TEXT
                 " (0: never rotate), got '%s'", v);
        return -1;
    }
    return 0;
}

static int parse_sequence_memory(struct options *o, const char *v, char *err, size_t errlen)
{
    if (cli_parse_bytes(v, BYTES_MAX, &o->sequence_memory) != 0 || o->sequence_memory < (64u << 10)) {
        snprintf(err, errlen, "--sequence-memory: expected a size like 32M, from 64K to " BYTES_MAX_TEXT ", got '%s'",
                 v);
        return -1;
    }
    return 0;
}

/* A rate: decimal, like 10 or 0.5, at most a million a second. */
static int parse_rate(const char *name, const char *v, double *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double rate = strtod(v, &end);
    if (errno || end == v || *end || !isdigit((unsigned char)v[0]) || !(rate <= 1e6)) {
        snprintf(err, errlen, "--%s: expected alerts per second like 10 or 0.5, at most 1000000 "
                 "(0: no limit), got '%s'", name, v);
        return -1;
    }
    *out = rate;
    return 0;
}

static int parse_alerts_rate(struct options *o, const char *v, char *err, size_t errlen)
{
    return parse_rate("alerts-rate", v, &o->alerts_rate, err, errlen);
}

static int parse_alerts_ceiling(struct options *o, const char *v, char *err, size_t errlen)
{
    return parse_rate("alerts-ceiling", v, &o->alerts_ceiling, err, errlen);
}

/* falco.yaml syscall_event_drops.actions, as far as they apply: alert (the
 * default; Falco's log is the daemon's own warning, always on) or ignore. */
static int parse_drop_actions(struct options *o, const char *v, char *err, size_t errlen)
{
    if (strcmp(v, "alert") != 0 && strcmp(v, "ignore") != 0) {
        snprintf(err, errlen, "--syscall-event-drops: expected alert or ignore, got '%s'", v);
        return -1;
    }
    o->drop_alerts_off = strcmp(v, "ignore") == 0;
    return 0;
}

static int parse_drop_threshold(struct options *o, const char *v, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double t = strtod(v, &end);
    if (errno || end == v || *end || !(t >= 0 && t <= 1)) {
        snprintf(err, errlen, "--syscall-event-drops-threshold: expected the share of a second's events dropped, "
                 "from 0 to 1 (0: any drop), got '%s'", v);
        return -1;
    }
    o->drop_threshold = t;
    return 0;
}

static int parse_drop_rate(struct options *o, const char *v, char *err, size_t errlen)
{
    return parse_rate("syscall-event-drops-rate", v, &o->drop_rate, err, errlen);
}

static int parse_rule_matching(struct options *o, const char *v, char *err, size_t errlen)
{
    enum rules_matching m;
    if (rules_matching_parse(v, &m) != 0) {
        snprintf(err, errlen, "--rule-matching: expected first (only the first rule in load order that matches "
                 "alerts, as Falco) or all, got '%s'", v);
        return -1;
    }
    o->rule_matching = (int)m;
    return 0;
}

static int parse_color(struct options *o, const char *v, char *err, size_t errlen)
{
    static const char *const names[] = {"auto", "always", "never"};
    for (int i = 0; i < 3; i++)
        if (strcmp(v, names[i]) == 0) {
            o->color = (enum options_color)i;
            return 0;
        }
    snprintf(err, errlen, "--color: expected auto, always or never, got '%s'", v);
    return -1;
}

/* ---- the table: one row per setting ---- */

#define AT(f) FIELD(f), sizeof(((struct options *)0)->f)
#define NUM(f, lo, hi) AT(f), lo, hi, NULL
#define STR(f) AT(f), 0, 0, NULL
#define CUSTOM(f, fn) AT(f), 0, 0, fn
#define LIVE true      /* applied on SIGHUP */
#define RESTART false  /* applied at the next start or restart (SIGUSR2) */

static const struct option_def defs[] = {
    {"config", "FILE", KIND_STRING, STR(config_path), RESTART,
     "read settings from FILE (name = value lines, long option names);\ncommand-line options override it; SIGHUP "
     "re-reads it", "none"},
    {"config-if-exists", "FILE", KIND_STRING, STR(config_if_exists), RESTART,
     "the same, but no FILE is no error (a service's optional file)", "none"},
    {"socket", "PATH", KIND_STRING, STR(server.socket_path), RESTART,
     "SOCK_SEQPACKET socket to listen on (unless systemd passes one)", "/tmp/seccheck.sock"},
    {"socket-mode", "OCTAL", KIND_CUSTOM, CUSTOM(server.socket_mode, parse_mode), RESTART,
     "permissions of the socket file", "0660"},
    {"socket-group", "GROUP", KIND_CUSTOM, CUSTOM(server.socket_gid, parse_socket_group), RESTART,
     "group owning the socket file", "the daemon's"},
    {"allow-uid", "UID[,UID...]", KIND_CUSTOM, CUSTOM(server.allowed_uids, parse_allow_uid), RESTART,
     "accept only peers with these user ids (names or numbers);\nothers are refused and counted", "anyone"},
    {"sink", "sqlite|discard|record|ndjson|text[,...]", KIND_CUSTOM, CUSTOM(sink, parse_sink), RESTART,
     "where events go, one or several: SQLite; nowhere (decoded, then\ndiscarded); gVisor tracereplay files per "
     "connection; NDJSON\nfor log shippers; readable lines",
     "sqlite"},
    {"db", "PATH", KIND_STRING, STR(db_path), RESTART, "SQLite database for --sink sqlite", "./seccheck.db"},
    {"record-dir", "DIR", KIND_STRING, STR(record_dir), RESTART, "where --sink record writes client-NNNN files",
     "./traces"},
    {"ndjson-path", "PATH", KIND_STRING, STR(ndjson_path), RESTART,
     "where --sink ndjson writes one JSON object per event (- : stdout)", "./events.ndjson"},
    {"ndjson-max-size", "BYTES", KIND_CUSTOM, CUSTOM(ndjson_max_bytes, parse_ndjson_max), RESTART,
     "rotate the NDJSON file past this size (PATH.1, PATH.2...)", "100M"},
    {"ndjson-keep", "N", KIND_U64, NUM(ndjson_keep, 1, 1000), RESTART, "rotated NDJSON files kept", "5"},
    {"text-path", "PATH", KIND_STRING, STR(text_path), RESTART,
     "where --sink text writes one line per event, for debugging (- : stdout)", "-"},
    {"metrics-listen", "ADDR", KIND_STRING, STR(metrics_listen), RESTART,
     "serve Prometheus metrics at HOST:PORT (loopback) or unix:PATH", "off"},
    {"retain", "DURATION", KIND_CUSTOM, CUSTOM(retain_s, parse_retain), LIVE,
     "delete events older than this (e.g. 7d, 12h; 0: keep forever;\nat most " RETAIN_MAX_TEXT ")", "0"},
    {"max-db-size", "BYTES", KIND_CUSTOM, CUSTOM(max_db_bytes, parse_max_db_size), LIVE,
     "delete the oldest events to keep the database under this\n(e.g. 20G; 1M to " BYTES_MAX_TEXT ")", "0"},
    {"indexes", "LIST", KIND_CUSTOM, CUSTOM(indexes, parse_indexes), RESTART,
     "indexes on the events table: type, container, time, conn, all\nor none; each one costs the writer time per "
     "event", "type"},
    {"key-file", "PATH", KIND_STRING, STR(key_file), RESTART, "HMAC key for the tamper-evident batch chain",
     "plain SHA-256"},
    {"batch-size", "N", KIND_SIZE, NUM(server.pipeline.limits.max_events, 1, 1000000), RESTART,
     "events per transaction, at most", "4096"},
    {"flush-ms", "N", KIND_UINT, NUM(server.flush_ms, 1, 60000), RESTART,
     "longest an event waits before its batch is written", "100"},
    {"queue-max", "N", KIND_SIZE, NUM(server.pipeline.queue_max, 1, 4096), RESTART,
     "batches queued for the writer before --on-full applies", "8"},
    {"queue-reserve", "N", KIND_SIZE, NUM(server.pipeline.reserve, 0, 4096), RESTART,
     "batches more for connections under their fair share of the\nqueue, once it is full (0: everyone stops "
     "at once)", "2"},
    {"on-full", "block|drop", KIND_CUSTOM, CUSTOM(server.drop_when_full, parse_on_full), RESTART,
     "when the queue is full: stop reading (the kernel buffer fills,\nthen the sandbox drops and counts), or keep "
     "reading and drop\nhere, counted as rejected queue_full",
     "block"},
    {"max-message", "BYTES", KIND_SIZE, NUM(server.max_message, 10240, 16u << 20), RESTART,
     "largest packet accepted; larger ones are rejected", "262144"},
    {"max-connections", "N", KIND_UINT, NUM(server.max_connections, 1, 1000000), RESTART,
     "connections beyond this are refused", "1024"},
    {"handshake-timeout-ms", "N", KIND_UINT, NUM(server.handshake_timeout_ms, 1, 3600000), RESTART,
     "close clients that do not handshake in time", "5000"},
    {"read-budget", "N", KIND_UINT, NUM(server.read_budget, 1, 1000000), RESTART,
     "packets read per connection per loop turn", "256"},
    {"drain-timeout-ms", "N", KIND_UINT, NUM(server.drain_timeout_ms, 0, 3600000), RESTART,
     "on SIGTERM, keep reading open connections this long", "2000"},
    {"busy-timeout-ms", "N", KIND_U64, NUM(busy_timeout_ms, 0, 3600000), RESTART,
     "wait this long for a locked database, then retry", "5000"},
    {"keep-types", "TYPE[,TYPE...]", KIND_STRING, STR(keep_types), LIVE,
     "store only these message types (SYSCALL_OPEN,... or numbers)", "all"},
    {"drop-types", "TYPE[,TYPE...]", KIND_STRING, STR(drop_types), LIVE,
     "discard these message types (counted as discarded)", "none"},
    {"keep-containers", "ID[,ID...]", KIND_STRING, STR(keep_containers), LIVE,
     "store only events of these container ids", "all"},
    {"drop-containers", "ID[,ID...]", KIND_STRING, STR(drop_containers), LIVE,
     "discard events of these container ids (counted as discarded)", "none"},
    {"log-level", "LEVEL", KIND_CUSTOM, CUSTOM(log_level, parse_log_level), LIVE, "error, warn, info or debug",
     "info"},
    {"rules", "PATH", KIND_CUSTOM, CUSTOM(rules, parse_rules), LIVE,
     "Falco rules file, or directory of *.yaml files, evaluated on every\nevent (repeat for more; SIGHUP reloads "
     "them); none: no rules\n(detection off)", "none"},
    {"default-rules", "PATH", KIND_STRING, STR(default_rules), LIVE,
     "the rules file or directory when neither the command line nor the\nconfig file gives --rules (the systemd "
     "unit's: " SECCHECKD_RULES_DIR ");\nmissing: detection off, said in the log", "none"},
    {"rules-absent-fields", "disable|run", KIND_CUSTOM, CUSTOM(rules_absent_run, parse_rules_absent), LIVE,
     "a rule whose condition needs a field gVisor never reports\n(evt.buffer, thread.cap_*...) is loaded disabled, "
     "with a warning\nnaming it; run: load it enabled anyway (those fields are\nalways absent)", "disable"},
    {"append-output", "suggested|none|FILE", KIND_STRING, STR(append_output), LIVE,
     "what Falco's append_output adds to every rule's output: suggested\n(falco.yaml's default: "
     "container_id=%container.id container_name=\n...k8s_ns_name=%k8s.ns.name, so an alert names its container, "
     "pod\nand image), none, or a falco.yaml (its append_output entries: match,\nextra_output, extra_fields, "
     "suggested_output)",
     "suggested"},
    {"alerts-out", "PATH", KIND_STRING, STR(alerts_out), RESTART,
     "write each alert as a line of Falco's JSON to PATH (- : stdout);\nnone: nowhere. Without it, --rules prints "
     "Falco's text line per\nalert on stdout (the journal's priority under systemd)",
     "text on stdout"},
    {"color", "auto|always|never", KIND_CUSTOM, CUSTOM(color, parse_color), RESTART,
     "colour the alert lines' priorities: auto: when stdout is a\nterminal and NO_COLOR is not set", "auto"},
    {"alerts-max-size", "BYTES", KIND_CUSTOM, CUSTOM(alerts_max_bytes, parse_alerts_max), RESTART,
     "rotate the --alerts-out file past this size (PATH.1, PATH.2...)", "100M"},
    {"alerts-keep", "N", KIND_U64, NUM(alerts_keep, 1, 1000), RESTART, "rotated --alerts-out files kept", "5"},
    {"rule-matching", "first|all", KIND_CUSTOM, CUSTOM(rule_matching, parse_rule_matching), RESTART,
     "which rules alert for one event: the first in load order whose\ncondition holds (Falco's rule_matching "
     "default), or all", "first"},
    {"alerts-rate", "N", KIND_CUSTOM, CUSTOM(alerts_rate, parse_alerts_rate), RESTART,
     "alerts per second one rule may raise for one connection, after\nthe burst; the rest are counted and said "
     "in its next alert\n(0: no limit, as Falco: every match is an alert)", "0"},
    {"alerts-burst", "N", KIND_U64, NUM(alerts_burst, 1, 1000000), RESTART,
     "alerts one rule may raise at once for one connection (with\n--alerts-rate)", "100"},
    {"alerts-ceiling", "N", KIND_CUSTOM, CUSTOM(alerts_ceiling, parse_alerts_ceiling), RESTART,
     "alerts per second one connection may raise, all rules together,\nafter --alerts-ceiling-burst; the rest "
     "are counted and said in\nits next alert (0: no ceiling)", "1000"},
    {"alerts-ceiling-burst", "N", KIND_U64, NUM(alerts_ceiling_burst, 1, 100000000), RESTART,
     "alerts one connection may raise at once", "10000"},
    {"sequence-memory", "BYTES", KIND_CUSTOM, CUSTOM(sequence_memory, parse_sequence_memory), RESTART,
     "memory for sequence rules' partial matches (chains begun), all\nsandboxes together; past it the sandbox "
     "holding the most loses its\noldest (counted, said in its next alert)", "32M"},
    {"sequence-partials", "N", KIND_U64, NUM(sequence_partials, 1, 10000000), RESTART,
     "partial matches one sequence keeps per sandbox connection; past\nit its oldest goes (counted, said in its "
     "next alert)", "1024"},
    {"syscall-event-drops", "alert|ignore", KIND_CUSTOM, CUSTOM(drop_alerts_off, parse_drop_actions), RESTART,
     "a connection whose sandbox dropped more than the threshold of a\nsecond's events raises Falco's \"Falco "
     "internal: syscall event\ndrop\" (Debug) whatever rules are loaded; ignore: never (the log\nsays drops "
     "either way)",
     "alert"},
    {"syscall-event-drops-threshold", "F", KIND_CUSTOM, CUSTOM(drop_threshold, parse_drop_threshold), RESTART,
     "that share of a second's events, delivered and dropped (falco.yaml's\nsyscall_event_drops.threshold)", "0.1"},
    {"syscall-event-drops-rate", "N", KIND_CUSTOM, CUSTOM(drop_rate, parse_drop_rate), RESTART,
     "such alerts per second per connection, after the burst", "0.03333"},
    {"syscall-event-drops-max-burst", "N", KIND_U64, NUM(drop_burst, 1, 1000), RESTART,
     "such alerts a connection may raise at once", "1"},
    {"max-processes", "N", KIND_U64, NUM(max_processes, 16, 10000000), RESTART,
     "processes the rules remember (parents, command lines), all\nsandboxes together; past it the largest "
     "sandbox's oldest go", "65536"},
    {"alerts-url", "URL", KIND_STRING, STR(alerts_url), LIVE,
     "POST each alert (Falco's JSON) to this http:// or https:// URL:\nfalcosidekick, or any webhook; with the "
     "sqlite sink the alerts\ntable is the outbox (nothing lost while the receiver is down)", "none"},
    {"alerts-url-file", "FILE", KIND_STRING, STR(alerts_url_file), LIVE,
     "read the --alerts-url from FILE (its first line; chmod 600), so a\ntoken in its path or query stays out of ps "
     "and config files", "none"},
    {"alerts-ca", "FILE", KIND_STRING, STR(alerts_ca), LIVE,
     "trust the PEM certificates in FILE for an https --alerts-url", "the system's"},
    {"alerts-header-file", "FILE", KIND_STRING, STR(alerts_header_file), LIVE,
     "extra request headers, one 'Name: value' per line (a token:\nAuthorization: Bearer ...)", "none"},
    {"alerts-timeout-ms", "N", KIND_U64, NUM(alerts_timeout_ms, 100, 600000), LIVE,
     "one --alerts-url request may take this long (connecting: 5 s at\nmost), then it is tried again", "10000"},
    {"alerts-queue", "N", KIND_U64, NUM(alerts_queue, 1, 10000000), RESTART,
     "without the sqlite sink: alerts held in memory for --alerts-url;\npast it new ones are dropped (counted)",
     "10000"},
    {"runsc-root", "DIR", KIND_CUSTOM, CUSTOM(runsc_roots, parse_runsc_root), RESTART,
     "runsc's root directory (runsc --root), read for container, pod,\nnamespace, image and user names (repeat for "
     "more; none: off)", "those of " CONTAINER_DEFAULT_ROOTS_TEXT " that exist"},
    {"docker-socket", "PATH", KIND_STRING, STR(docker_socket), RESTART,
     "Docker's API socket, asked for the name, image and labels of a\nDocker container (its runsc state names none; "
     "none: off)", "/var/run/docker.sock when it exists"},
    {"help", NULL, KIND_FLAG, 0, 0, 0, 0, NULL, RESTART, "this text (also -h)", NULL},
    {"version", NULL, KIND_FLAG, 0, 0, 0, 0, NULL, RESTART, "print the version", NULL},
};
#define NDEFS (sizeof(defs) / sizeof(defs[0]))

static const struct option_def *find_def(const char *name)
{
    for (size_t i = 0; i < NDEFS; i++)
        if (strcmp(defs[i].name, name) == 0)
            return &defs[i];
    return NULL;
}

/* String settings whose values another module judges (message type
 * names, container ids, an address) are checked as they are applied, so a
 * bad one in a config file is reported at its line; so is a keep list given
 * beside a drop list of the same kind. */
static int check_string_value(const struct options *o, const struct option_def *d, const char *value, char *err,
                              size_t errlen)
{
    if (d->offset == FIELD(metrics_listen))
        return strcmp(value, "off") == 0 ? 0 : metrics_check_address(value, err, errlen);
    bool types = d->offset == FIELD(keep_types) || d->offset == FIELD(drop_types);
    bool containers = d->offset == FIELD(keep_containers) || d->offset == FIELD(drop_containers);
    if (!types && !containers)
        return 0;
    bool keep = d->offset == FIELD(keep_types) || d->offset == FIELD(keep_containers);
    const char *other = types ? (keep ? o->drop_types : o->keep_types)
                              : (keep ? o->drop_containers : o->keep_containers);
    if (other) {
        snprintf(err, errlen, "--%s: --%s%s is set too; give a keep list or a drop list, not both", d->name,
                 keep ? "drop" : "keep", strchr(d->name, '-'));
        return -1;
    }
    struct filter f = {0};
    char why[200];
    enum filter_mode mode = keep ? FILTER_KEEP : FILTER_DROP;
    int rc = types ? filter_set_types(&f, mode, value, why, sizeof(why))
                   : filter_set_containers(&f, mode, value, why, sizeof(why));
    filter_free(&f);
    if (rc != 0)
        snprintf(err, errlen, "--%s: %s", d->name, why);
    return rc;
}

static int apply(struct options *o, const struct option_def *d, const char *value, char *err, size_t errlen)
{
    void *field = (char *)o + d->offset;
    uint64_t v;
    switch (d->kind) {
    case KIND_STRING:
        if (check_string_value(o, d, value, err, errlen) != 0)
            return -1;
        free(*(char **)field);
        *(char **)field = strdup(value);
        return 0;
    case KIND_CUSTOM:
        return d->parse(o, value, err, errlen);
    case KIND_FLAG:
        return 0;
    default:
        break;
    }
    char *end;
    errno = 0;
    v = strtoull(value, &end, 10);
    if (errno || end == value || *end || value[0] == '-' || v < d->min || v > d->max) {
        snprintf(err, errlen, "--%s: expected a whole number from %llu to %llu, got '%s'", d->name,
                 (unsigned long long)d->min, (unsigned long long)d->max, value);
        return -1;
    }
    if (d->kind == KIND_UINT)
        *(unsigned *)field = (unsigned)v;
    else if (d->kind == KIND_SIZE)
        *(size_t *)field = (size_t)v;
    else
        *(uint64_t *)field = v;
    return 0;
}

void options_usage(FILE *out)
{
    fprintf(out, "Usage: seccheckd [OPTIONS]\n"
                 "       seccheckd check [OPTIONS]   (the settings are valid, every sink opens: what SIGUSR2 runs)\n"
                 "       seccheckd verify --db PATH [--key-file PATH] | --to URL --host-id ID\n"
                 "       seccheckd export --db PATH --format ndjson|trace [--out PATH|DIR] [--conn ID]\n"
                 "       seccheckd events --db PATH [--follow] [--container ID] [--type NAME] [--process NAME]\n"
                 "                        [--since DURATION] [-o compact|json]   (one line per event, as they come)\n"
                 "       seccheckd alerts --db PATH | --to URL [--since DURATION] [--priority LEVEL] [--rule NAME]\n"
                 "                        [--container ID] [--follow] [--json]   (the alerts the rules raised)\n"
                 "       seccheckd alerts show ID --db PATH | --to URL   (one alert's story: its event, the process's\n"
                 "                        ancestry, the events around it)\n"
                 "       seccheckd containers --db PATH [--pod NAME] [--namespace NAME] [--json]   (names, counts)\n"
                 "       seccheckd rules check|test PATH...   (rules files: errors, or alerts on recorded events)\n"
                 "       seccheckd forward --db PATH --to URL [--host-id ID]   (to a central PostgreSQL, or\n"
                 "                         nats://... to the fleet's NATS JetStream stream)\n"
                 "       seccheckd central --from nats://... --to URL   (the stream into a central PostgreSQL)\n"
                 "       seccheckd nats-setup --to nats://...   (create or check the fleet's stream)\n"
                 "       seccheckd gvisor-config [--points exec|files|net|all | --rules PATH...] [--socket PATH]\n"
                 "       seccheckd types   (the message type names --keep-types and --drop-types take)\n"
                 "Collects gVisor seccheck events from sandboxes (runsc remote sink) into SQLite.\n\n");
    for (size_t i = 0; i < NDEFS; i++) {
        const struct option_def *d = &defs[i];
        char left[64];
        snprintf(left, sizeof(left), "--%s%s%s", d->name, d->arg ? " " : "", d->arg ? d->arg : "");
        const char *help = d->help;
        bool first = true;
        while (*help) {
            size_t n = strcspn(help, "\n");
            bool last = help[n] == '\0';
            if (first && strlen(left) > 24)
                fprintf(out, "  %s\n  %-24s ", left, "");
            else
                fprintf(out, "  %-24s ", first ? left : "");
            fprintf(out, "%.*s", (int)n, help);
            if (last && d->fallback)
                fprintf(out, " [%s]", d->fallback);
            fputc('\n', out);
            help += n + (last ? 0 : 1);
            first = false;
        }
    }
    fprintf(out, "\nPoint runsc at it with a pod-init config whose sink is\n"
                 "  {\"name\": \"remote\", \"config\": {\"endpoint\": \"/tmp/seccheck.sock\"}}\n"
                 "SIGINT/SIGTERM: stop accepting, drain, commit, print a summary.\n"
                 "SIGUSR2: restart in place (new binary, same PID) keeping every connection.\n");
}

const char *options_version(void)
{
    return SECCHECKD_VERSION;
}

void options_init(struct options *o)
{
    memset(o, 0, sizeof(*o));
    server_config_defaults(&o->server);
    o->server.socket_path = strdup(o->server.socket_path);
    o->sink = strdup("sqlite");
    o->db_path = strdup("./seccheck.db");
    o->record_dir = strdup("./traces");
    o->ndjson_path = strdup("./events.ndjson");
    o->ndjson_max_bytes = 100u << 20;
    o->ndjson_keep = 5;
    o->text_path = strdup("-");
    o->busy_timeout_ms = 5000;
    o->log_level = LOG_INFO;
    o->indexes = EVENT_INDEXES_DEFAULT;
    o->alerts_max_bytes = 100u << 20;
    o->sequence_memory = RULES_DEFAULT_SEQUENCE_BYTES;
    o->sequence_partials = RULES_DEFAULT_SEQUENCE_PER_GROUP;
    o->alerts_keep = 5;
    o->rule_matching = RULES_DEFAULT_MATCHING;
    o->alerts_rate = RULES_DEFAULT_RATE;
    o->alerts_burst = (uint64_t)RULES_DEFAULT_BURST;
    o->alerts_ceiling = RULES_DEFAULT_CEILING;
    o->alerts_ceiling_burst = (uint64_t)RULES_DEFAULT_CEILING_BURST;
    o->max_processes = RULES_DEFAULT_MAX_PROCESSES;
    o->drop_threshold = RULES_DEFAULT_DROP_THRESHOLD;
    o->drop_rate = RULES_DEFAULT_DROP_RATE;
    o->drop_burst = (uint64_t)RULES_DEFAULT_DROP_BURST;
    o->alerts_timeout_ms = 10000;
    o->alerts_queue = 10000;
}

void options_free(struct options *o)
{
    free((char *)o->server.socket_path);
    free(o->sink);
    free(o->db_path);
    free(o->record_dir);
    free(o->key_file);
    free(o->config_path);
    free(o->config_if_exists);
    free(o->ndjson_path);
    free(o->text_path);
    free(o->metrics_listen);
    free(o->keep_types);
    free(o->drop_types);
    free(o->keep_containers);
    free(o->drop_containers);
    free(o->rules);
    free(o->default_rules);
    free(o->append_output);
    free(o->runsc_roots);
    free(o->docker_socket);
    free(o->alerts_out);
    free(o->alerts_url);
    free(o->alerts_url_file);
    free(o->alerts_ca);
    free(o->alerts_header_file);
    memset(o, 0, sizeof(*o));
}

/* What --help prints: the daemon's usage, or a subcommand's that takes
 * the daemon's options (seccheckd check). */
static void (*help_printer)(FILE *out) = options_usage;

void options_set_help(void (*usage)(FILE *out))
{
    help_printer = usage ? usage : options_usage;
}

/* getopt_long's value for defs[i]: above every character, so it never
 * meets a short option ('h') or getopt's own '?' and ':'. */
#define LONG_BASE 256

static struct option *getopt_table(void)
{
    static struct option table[NDEFS + 1];
    for (size_t i = 0; i < NDEFS; i++)
        table[i] = (struct option){defs[i].name, defs[i].arg ? required_argument : no_argument, NULL,
                                   LONG_BASE + (int)i};
    return table;
}

int options_parse_argv(struct options *o, int argc, char **argv)
{
    const struct option *table = getopt_table();
    int ch;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", table, NULL)) != -1) {
        if (ch == 'h')
            ch = LONG_BASE + (int)(find_def("help") - defs);
        if (ch < LONG_BASE || (size_t)(ch - LONG_BASE) >= NDEFS) {
            cli_report_getopt_error("seccheckd", ch, argv);
            return 2;
        }
        const struct option_def *d = &defs[ch - LONG_BASE];
        if (strcmp(d->name, "help") == 0) {
            help_printer(stdout);
            exit(0);
        }
        if (strcmp(d->name, "version") == 0) {
            printf("seccheckd %s\nrules: loaded as Falco's engine %s loads them (falcosecurity/falco %s)\n",
                   SECCHECKD_VERSION, RULES_FALCO_ENGINE_VERSION, RULES_FALCO_COMMIT);
            exit(0);
        }
        char err[256];
        if (apply(o, d, optarg, err, sizeof(err)) != 0) {
            fprintf(stderr, "seccheckd: %s\n", err);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "seccheckd: unexpected argument '%s' (try --help)\n", argv[optind]);
        return 2;
    }
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* A config line longer than this is an error, never split in two: the
 * tail of a long comment must not become a setting. */
#define CONFIG_LINE_MAX 4096

/* A '#' starts a comment at the start of a line or after whitespace;
 * elsewhere it is part of the value (a container id "a#b"). The first
 * comment at or after from, in the line that starts at line. */
static char *comment_start(const char *line, char *from)
{
    for (char *p = from; *p; p++)
        if (*p == '#' && (p == line || isspace((unsigned char)p[-1])))
            return p;
    return NULL;
}

/* A value in double quotes, unquoted in place: everything between the
 * quotes is kept ('#' and spaces too), \" and \\ stand for a quote and a
 * backslash. After the closing quote only a comment may follow. 0, or -1
 * with why. */
static int unquote(char *value, char *why, size_t whylen)
{
    char *out = value;
    const char *p = value + 1;
    for (; *p != '"'; p++) {
        if (*p == '\0') {
            snprintf(why, whylen, "a quoted value needs its closing '\"'");
            return -1;
        }
        if (*p == '\\') {
            p++;
            if (*p != '"' && *p != '\\') {
                snprintf(why, whylen, "in a quoted value a backslash comes before '\"' or '\\' only");
                return -1;
            }
        }
        *out++ = *p;
    }
    *out = '\0';
    while (isspace((unsigned char)*++p))
        ;
    if (*p && *p != '#') {
        snprintf(why, whylen, "unexpected text after the closing '\"' (a comment starts with '#')");
        return -1;
    }
    return 0;
}

/* One "name = value" line (comment and blanks allowed); 0 or -1 with err. */
static int apply_config_line(struct options *o, char *line, const char *path, int lineno, char *err,
                             size_t errlen)
{
    char *text = trim(line), *eq = strchr(text, '='), *comment = comment_start(text, text);
    if (comment && (!eq || comment < eq)) {
        *comment = '\0';
        if (!*trim(text))
            return 0;   /* a comment line */
        eq = NULL;      /* the '=' was in the comment */
    }
    if (!*text)
        return 0;
    if (!eq) {
        snprintf(err, errlen, "%s:%d: expected 'name = value'", path, lineno);
        return -1;
    }
    *eq = '\0';
    char *name = trim(text), *value = eq + 1;
    char why[256];
    while (isspace((unsigned char)*value))
        value++;
    if (*value == '"') {
        if (unquote(value, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "%s:%d: %s: %s", path, lineno, name, why);
            return -1;
        }
    } else {
        if ((comment = comment_start(text, value)) != NULL)
            *comment = '\0';
        value = trim(value);
    }
    const struct option_def *d = find_def(name);
    if (!d || d->kind == KIND_FLAG || d->offset == FIELD(config_path) || d->offset == FIELD(config_if_exists)) {
        snprintf(err, errlen, "%s:%d: unknown setting '%s' (see seccheckd --help)", path, lineno, name);
        return -1;
    }
    if (apply(o, d, value, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
        return -1;
    }
    return 0;
}

int options_load_file(struct options *o, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read config file %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    const char *why = fstat(fileno(f), &st) != 0 ? strerror(errno) : S_ISDIR(st.st_mode) ? "a directory" : NULL;
    if (why) {
        snprintf(err, errlen, "cannot read config file %s: %s", path, why);
        fclose(f);
        return -1;
    }
    char line[CONFIG_LINE_MAX + 1];   /* the line, its '\n' and the NUL */
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof(line) - 1 && line[len - 1] != '\n' && !feof(f)) {
            snprintf(err, errlen, "%s:%d: line longer than %d bytes", path, lineno, CONFIG_LINE_MAX - 1);
            rc = -1;
        } else {
            rc = apply_config_line(o, line, path, lineno, err, errlen);
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "cannot read config file %s after line %d: %s", path, lineno, strerror(errno));
        rc = -1;
    }
    fclose(f);
    return rc;
}

/* --default-rules when no --rules was given (nor `none`): there, it is the
 * rules; missing, detection is off (said at start); anything else (a
 * directory it cannot read) is given to the loader, which says why. */
static void apply_default_rules(struct options *o)
{
    struct stat st;
    if (o->rules || o->rules_none || !o->default_rules)
        return;
    if (stat(o->default_rules, &st) != 0 && errno == ENOENT)
        return;
    o->rules = strdup(o->default_rules);
}

int options_load(struct options *o, int argc, char **argv)
{
    options_init(o);
    /* First pass: only to learn --config (and fail early on bad options). */
    struct options probe;
    options_init(&probe);
    int rc = options_parse_argv(&probe, argc, argv);
    if (rc == 0 && probe.config_path && probe.config_if_exists) {
        fprintf(stderr, "seccheckd: give --config or --config-if-exists, not both\n");
        rc = 2;
    }
    char *config = probe.config_path ? strdup(probe.config_path) : NULL;
    bool rules_on_command_line = probe.rules != NULL || probe.rules_none;
    bool roots_on_command_line = probe.runsc_roots != NULL;
    struct stat st;
    if (rc == 0 && probe.config_if_exists && !(stat(probe.config_if_exists, &st) != 0 && errno == ENOENT))
        config = strdup(probe.config_if_exists);   /* there (or unreadable: that is an error) */
    else if (rc == 0 && probe.config_if_exists)
        log_info("no config file %s (--config-if-exists): defaults and command line only", probe.config_if_exists);
    options_free(&probe);
    if (rc != 0) {
        free(config);
        return rc;
    }
    if (config) {
        char err[512];
        if (options_load_file(o, config, err, sizeof(err)) != 0) {
            fprintf(stderr, "seccheckd: %s\n", err);
            free(config);
            return 2;
        }
        free(config);
    }
    if (rules_on_command_line) {
        free(o->rules);   /* the command line's list replaces the file's */
        o->rules = NULL;
    }
    if (roots_on_command_line) {
        free(o->runsc_roots);   /* the same for the runsc roots */
        o->runsc_roots = NULL;
    }
    rc = options_parse_argv(o, argc, argv);
    if (rc == 0)
        apply_default_rules(o);
    if (rc == 0) {
        struct filter f = {0};
        char err[256];
        if (options_build_filter(o, &f, err, sizeof(err)) != 0) {
            fprintf(stderr, "seccheckd: %s\n", err);
            rc = 2;
        }
        filter_free(&f);
    }
    return rc;
}

size_t options_rules_paths(const struct options *o, char **copy, const char **paths, size_t max)
{
    size_t n = 0;
    *copy = o->rules ? strdup(o->rules) : NULL;
    for (char *p = *copy; p && *p && n < max;) {
        paths[n++] = p;
        p += strcspn(p, "\n");
        if (*p)
            *p++ = '\0';
    }
    return n;
}

size_t options_runsc_roots(const struct options *o, char **copy, const char **paths, size_t max)
{
    size_t n = 0;
    *copy = o->runsc_roots ? strdup(o->runsc_roots) : NULL;
    for (char *p = *copy; p && *p && n < max;) {
        paths[n++] = p;
        p += strcspn(p, "\n");
        if (*p)
            *p++ = '\0';
    }
    return n;
}

int options_build_filter(const struct options *o, struct filter *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof(*f));
    char why[200];
    if ((o->keep_types && o->drop_types) || (o->keep_containers && o->drop_containers)) {
        snprintf(err, errlen, "give either --keep-types or --drop-types (and either --keep-containers or "
                 "--drop-containers), not both");
        return -1;
    }
    const char *types = o->keep_types ? o->keep_types : o->drop_types;
    if (types && filter_set_types(f, o->keep_types ? FILTER_KEEP : FILTER_DROP, types, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "--%s-types: %s", o->keep_types ? "keep" : "drop", why);
        return -1;
    }
    const char *ids = o->keep_containers ? o->keep_containers : o->drop_containers;
    if (ids && filter_set_containers(f, o->keep_containers ? FILTER_KEEP : FILTER_DROP, ids, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "--%s-containers: %s", o->keep_containers ? "keep" : "drop", why);
        filter_free(f);
        return -1;
    }
    return 0;
}

static bool same_value(const struct options *a, const struct options *b, const struct option_def *d)
{
    const char *pa = (const char *)a + d->offset, *pb = (const char *)b + d->offset;
    if (d->kind == KIND_STRING || d->offset == FIELD(rules) || d->offset == FIELD(runsc_roots)) {
        const char *sa = *(char *const *)pa, *sb = *(char *const *)pb;
        return (!sa && !sb) || (sa && sb && strcmp(sa, sb) == 0);
    }
    if (d->kind == KIND_CUSTOM && d->offset == FIELD(sink))
        return strcmp(a->sink, b->sink) == 0;
    if (d->offset == FIELD(server.allowed_uids))
        return a->server.allowed_uids_count == b->server.allowed_uids_count &&
               memcmp(a->server.allowed_uids, b->server.allowed_uids,
                      a->server.allowed_uids_count * sizeof(uid_t)) == 0;
    return memcmp(pa, pb, d->size) == 0;
}

void options_diff(const struct options *running, const struct options *fresh, bool reloadable, char *out,
                  size_t outlen)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < NDEFS; i++) {
        const struct option_def *d = &defs[i];
        if (d->kind == KIND_FLAG || d->reloadable != reloadable || same_value(running, fresh, d))
            continue;
        int n = snprintf(out + len, outlen - len, "%s%s", len ? ", " : "", d->name);
        if (n < 0 || (size_t)n >= outlen - len)
            break;
        len += (size_t)n;
    }
}
