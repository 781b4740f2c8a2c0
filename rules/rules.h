/* rules.h - Falco-style detection over decoded gVisor events: the module's
 * whole interface.
 *
 * Rules files in Falco's YAML format (lists, macros, rules, append) are
 * compiled once into a rule_set: each condition becomes a tree over Falco's
 * field names, and each rule is indexed by the event types it can match, so
 * an event tests only the rules that can match it. A rules_engine evaluates
 * one rule_set over a stream of decoded events (decoder/event.h), keeps a
 * bounded process table per sandbox connection (parents, command lines,
 * working directories), throttles, and renders each alert as Falco's JSON.
 *
 * It knows nothing of sockets, batches or sinks: events in, alerts out. The
 * daemon runs one engine on its writer thread (never the socket thread);
 * `seccheckd rules test` runs one offline over trace files or a database.
 *
 * Threads: a rule_set is immutable once loaded and may be handed to another
 * thread; an engine and its alert_list belong to one thread at a time.
 * Every byte of an event comes from a sandbox that may be hostile: nothing
 * here trusts a length, a count or a string from it.
 */
#ifndef SECCHECKD_RULES_H
#define SECCHECKD_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "event.h"
#include "runsc_fields.h"   /* runsc's optional and context fields, releases: RULES_OPT_*, RULES_CTX_*, RULES_RUNSC_* */

/* ---- priorities: Falco's eight, highest first ---- */

enum rules_priority {
    RULES_EMERGENCY = 0,
    RULES_ALERT,
    RULES_CRITICAL,
    RULES_ERROR,
    RULES_WARNING,
    RULES_NOTICE,
    RULES_INFORMATIONAL,
    RULES_DEBUG,
    RULES_PRIORITY_COUNT
};

/* As Falco spells it in its output: "Warning", "Informational". */
const char *rules_priority_name(enum rules_priority p);
/* Any case; "info" is Informational. 0, or -1 for an unknown name. */
int rules_priority_parse(const char *s, enum rules_priority *out);

/* ---- diagnostics: every error and warning with file:line:column ---- */

struct rules_diag_item {
    bool is_error;           /* else a warning */
    char *file;              /* as given (a path, or the name passed to rule_set_load_buffer) */
    unsigned line, column;   /* 1-based; 0 when the problem has no position (a missing file) */
    char *message;
};

struct rules_diag {
    struct rules_diag_item *items;
    size_t count, cap;
    size_t errors, warnings;     /* all of them; items keeps some (diag.h) */
    size_t errors_kept;          /* errors among items */
};

void rules_diag_free(struct rules_diag *d);
/* One line per item: "FILE:LINE:COLUMN: error: MESSAGE", the errors first. */
void rules_diag_print(const struct rules_diag *d, FILE *out);

/* ---- loading ---- */

struct rule_set;

/* The Falco engine whose loading semantics seccheckd implements
 * (falcosecurity/falco userspace/engine/falco_engine_version.h at commit
 * 130747499b): a file's required_engine_version is checked against it. */
#define RULES_FALCO_ENGINE_MAJOR 0
#define RULES_FALCO_ENGINE_MINOR 63
#define RULES_FALCO_ENGINE_PATCH 0
#define RULES_FALCO_ENGINE_VERSION "0.63.0"
#define RULES_FALCO_COMMIT "130747499b"

/* Limits on what a rules file may make the daemon do (refused with file and
 * line past them). */
#define RULES_FILE_MAX_BYTES (16u << 20)   /* one rules file */
#define RULES_MAX_ITEMS 100000             /* lists + macros + rules, all files */
/* Items of all lists once lists inside lists are taken in, and items
 * spliced into conditions (a list named in n conditions counts n times). */
#define RULES_MAX_LIST_ITEMS 1000000u
#define RULES_MAX_NESTING 1000             /* macros inside macros (parentheses: Falco's parser depth, filter_ast.h) */
/* Levels of a condition's tree once its macros are expanded: what one
 * event's evaluation may recurse through. */
#define RULES_MAX_TREE_DEPTH 4096
/* Nodes of all enabled rules' conditions once their macros are expanded
 * (each rule's alone: filter.h FILTER_MAX_EXPANDED): what one event may
 * cost. falcosecurity/rules' three files come to 2,419 together. */
#define RULES_MAX_EXPANDED_SET 200000
/* Lists whose names hold a blank, a comma, a parenthesis or '=' (Falco
 * loads them; each is searched for in every condition's text). */
#define RULES_MAX_SPACED_LISTS 64

/* Loads the files in order as one set, with Falco's semantics (rules/README.md):
 * a directory loads its *.yaml and *.yml files in name order; only regular
 * files are read (a FIFO, device or socket is refused, and nothing blocks).
 * Later files see (and may append to) what earlier ones defined. Returns
 * NULL when any error was found, every one of them in diag; warnings
 * (unknown keys, deprecated append, rules skipped) go to diag either way. */
struct rule_set *rule_set_load(const char *const *paths, size_t npaths, struct rules_diag *diag);

/* The same for one file's text held in memory (tests, the fuzzer). */
struct rule_set *rule_set_load_buffer(const char *name, const char *text, size_t len, struct rules_diag *diag);

void rule_set_free(struct rule_set *rs);

struct rule_set_stats {
    size_t files, lists, macros;
    size_t rules;            /* in the set */
    size_t rules_enabled;
    size_t rules_absent;     /* disabled: their condition needs fields gVisor never reports */
    size_t rules_skipped;    /* not in the set: an unknown source, or skip-if-unknown-filter */
};
void rule_set_get_stats(const struct rule_set *rs, struct rule_set_stats *out);

/* Rules in load order: [0, rule_set_rule_count). */
size_t rule_set_rule_count(const struct rule_set *rs);

struct rule_info {
    const char *name;
    const char *desc;
    enum rules_priority priority;
    bool enabled;
    const char *const *tags;   /* sorted */
    size_t ntags;
    const char *file;          /* where the rule was defined */
    unsigned line;
};
void rule_set_rule_info(const struct rule_set *rs, size_t i, struct rule_info *out);

/* ---- sequences ----
 *
 * A sequence rule (`- sequence:` items, rules/README.md) raises one alert
 * when one sandbox connection's events satisfy its steps' conditions in
 * order within its time (the daemon's clock), with equal `by` fields; a
 * step may count events, compare a field with an earlier step's, and
 * `unless` cancels a chain. Falco's own loader skips the item with a
 * warning ("Unknown top level item"). Alerts of sequences carry each step's
 * event (RULES_SEQUENCE_KEY). */

#define RULES_SEQUENCE_MAX_STEPS 16

/* Sequences in load order: [0, rule_set_sequence_count). */
size_t rule_set_sequence_count(const struct rule_set *rs);

struct sequence_info {
    const char *name;
    const char *desc;
    enum rules_priority priority;
    bool enabled;
    const char *const *tags;   /* sorted */
    size_t ntags;
    const char *file;
    unsigned line;
    int64_t within_ns;
    const char *by;            /* "container.id, proc.pid"; "" when none (the connection alone) */
    size_t nsteps;
    bool has_unless;
};
void rule_set_sequence_info(const struct rule_set *rs, size_t i, struct sequence_info *out);

struct sequence_step_info {
    const char *name;
    uint32_t at_least;         /* 1: one event */
    const char *distinct;      /* the field counted by distinct values, or NULL */
};
/* Step k of sequence i; k == nsteps: its unless (name "unless"). */
void rule_set_sequence_step(const struct rule_set *rs, size_t i, size_t k, struct sequence_step_info *out);
/* The event types step k (k == nsteps: unless) can match, as rule_set_rule_types writes them. */
void rule_set_sequence_step_types(const struct rule_set *rs, size_t i, size_t k, char *buf, size_t buflen);

/* ---- rules that need what gVisor never reports ----
 *
 * Some Falco fields have no gVisor source (evt.buffer: runsc sends no
 * data; thread.cap_*: no capabilities; an evt.arg that is a pointer of a
 * raw syscall): they are known, and always absent. A rule whose condition
 * needs one is loaded disabled, with one warning naming the rule and the
 * fields; in "run" mode it runs anyway (its comparisons on them false). A
 * field only in an output renders <NA>. The mode is process-wide and
 * applies to the loads that follow (--rules-absent-fields). */
enum rules_absent_mode { RULES_ABSENT_DISABLE, RULES_ABSENT_RUN };
void rules_set_absent_mode(enum rules_absent_mode m);
enum rules_absent_mode rules_get_absent_mode(void);
/* "disable" or "run": 0, or -1 for another word. */
int rules_absent_mode_parse(const char *s, enum rules_absent_mode *out);
/* Rule i's fields that gVisor never reports, as its condition names them
 * ("evt.buffer, thread.cap_effective"), or NULL; *disabled (may be NULL):
 * whether the loader disabled the rule for them. */
const char *rule_set_rule_absent(const struct rule_set *rs, size_t i, bool *disabled);

/* ---- append_output: what Falco adds to every rule's output ----
 *
 * Falco's falco.yaml `append_output` (falcosecurity/falco 130747499b
 * falco.yaml:750-799): entries, each with an optional `match` (source;
 * tags, all of which the rule must have; rule, by name) and what it adds to
 * the rules it matches: `extra_output`, text appended to the output after a
 * space; `extra_fields`, keys of output_fields only (`- NAME: FORMAT`, a
 * string, or `- field.name`, the field's value); `suggested_output: true`,
 * ` container_id=%container.id container_name=%container.name ...` for
 * each field Falco's container plugin suggests (fields_suggested), so an
 * alert says which container, pod and image it is about. Falco ships
 * `- suggested_output: true`: the daemon's and `rules check|test`'s
 * default ("suggested"). Values take ${VAR} from the environment as
 * falco.yaml's do. A rule set loaded with none set has none, as Falco's
 * engine on its own. */
struct rules_append_output;

#define RULES_APPEND_OUTPUT_DEFAULT "suggested"

/* spec: "suggested" (falco.yaml's default entry), "none", or the path of a
 * YAML file: a falco.yaml (its append_output; none there: nothing, as
 * Falco) or the list alone. Every format is checked as a rule's output is.
 * NULL with the reason in err (FILE:LINE:COLUMN for a file). */
struct rules_append_output *rules_append_output_load(const char *spec, char *err, size_t errlen);
void rules_append_output_free(struct rules_append_output *ao);
/* For the loads that follow, process-wide, as rules_set_absent_mode (a
 * load under way keeps what it started with); takes ao over, NULL: none. */
void rules_set_append_output(struct rules_append_output *ao);

/* The event types rule i can match, comma separated ("open,openat"),
 * "all" when its condition does not restrict evt.type, "none" when it can
 * match no event type. Written into buf
 * (cut to buflen, always terminated). */
void rule_set_rule_types(const struct rule_set *rs, size_t i, char *buf, size_t buflen);

/* ---- what rules need from runsc ----
 *
 * A rule sees only what runsc sends: the trace points whose events it can
 * match, with the optional and context fields its condition and output
 * read, and the points that keep the process table (proc.pname, proc.args
 * and the like). These say which, in runsc's names, for `seccheckd
 * gvisor-config --rules` and `seccheckd rules check --pod-init`.
 *
 * An event type maps to runsc 2022-12's schematized point when it has one
 * (syscall/openat/exit), else to the raw point (syscall/sysno/272/exit for
 * unshare). An execve exit is sentry/execve and a clone exit sentry/clone
 * (the engine's process-level view of them; syscall/execve/exit and
 * syscall/clone/exit only for a rule that names them in gvisor.point).
 * Enter points only for rules that test evt.dir. A rule that does not
 * restrict evt.type needs no particular point. runsc 2022-12 sends a raw
 * exit point's context fields only when its enter point is enabled too (it
 * takes the enter's list): a raw exit that needs context brings its enter. */

/* runsc's optional fields (RULES_OPT_*), context fields (RULES_CTX_*) and
 * the releases that added them (RULES_RUNSC_*) are in filter/runsc_fields.h,
 * shared with the field table. */

/* "release-20260714.0", "0.0~20221219" for the baseline. */
const char *rules_runsc_release_name(unsigned release);

/* runsc's name of bit number i ("fd_path", "thread_group_start_time"), or
 * NULL past the last. */
const char *rules_optional_name(unsigned i);
const char *rules_context_name(unsigned i);
/* The bit a name means, or 0 for a name runsc does not have. */
unsigned rules_optional_parse(const char *name);
unsigned rules_context_parse(const char *name);
/* The optional fields runsc offers at point (bits; 0 at a point with none,
 * or one it does not have): runsc 2022-12's, and the 2026 releases' at
 * their points (a runsc_target says what one runsc has). */
unsigned rules_point_optional(const char *point);

#define RULES_POINT_MAX 48   /* "syscall/inotify_add_watch/enter", "syscall/sysno/470/enter" */

/* Why a point is needed (bits). */
enum {
    RULES_WHY_MATCHES = 1u << 0,     /* a rule matches its events */
    RULES_WHY_PROCESS = 1u << 1,     /* it keeps the process table a rule reads */
    RULES_WHY_RAW_CONTEXT = 1u << 2, /* the enter of a raw exit point: its context fields (runsc 2022-12) */
};

struct rules_need {
    char point[RULES_POINT_MAX];
    unsigned optional, context;     /* RULES_OPT_*, RULES_CTX_* bits */
    unsigned why;                   /* RULES_WHY_* */
    /* The oldest release whose events here carry what the rule reads
     * (RULES_RUNSC_*; beyond the fields runsc lists, binary_info sends more
     * in newer releases), and the field that needs it (static; NULL at 0). */
    unsigned release;
    const char *release_field;
};

/* Points, one entry each, sorted by name. */
struct rules_needs {
    struct rules_need *items;
    size_t count, cap;
};

/* Adds (or merges into the entry of) point; 0, or -1 out of memory or a
 * name longer than RULES_POINT_MAX - 1. */
int rules_needs_add(struct rules_needs *n, const char *point, unsigned optional, unsigned context, unsigned why);
/* The same, raising the entry's release to release (for field). */
int rules_needs_add_since(struct rules_needs *n, const char *point, unsigned optional, unsigned context, unsigned why,
                          unsigned release, const char *field);
const struct rules_need *rules_needs_find(const struct rules_needs *n, const char *point);
void rules_needs_free(struct rules_needs *n);

/* Adds what rule i needs to out (nothing when it is disabled), on runsc
 * 2022-12. 0, or -1 out of memory. */
int rule_set_rule_needs(const struct rule_set *rs, size_t i, struct rules_needs *out);

/* The same for a given runsc (runsc_target.h): an event type maps to the
 * schematized point target has (syscall/ptrace/exit), else to the raw one
 * (syscall/sysno/101/exit, as on runsc 2022-12); NULL: runsc 2022-12 (its
 * fields only). What target lacks stays in out (runsc_target_warn says it,
 * runsc_target_keep leaves it out). */
struct runsc_target;
enum {
    RULES_NEED_CONDITION = 0,        /* what the condition reads: the rule raises nothing without it */
    RULES_NEED_OUTPUT = 1u << 0,     /* and the output's fields (<NA> without them) */
    RULES_NEED_ALL = RULES_NEED_OUTPUT,
};
int rule_set_rule_needs_on(const struct rule_set *rs, size_t i, const struct runsc_target *target, unsigned parts,
                           struct rules_needs *out);
/* The same for sequence i: what each of its steps and its unless read,
 * where their events come from (nothing when it is disabled). */
int rule_set_sequence_needs_on(const struct rule_set *rs, size_t i, const struct runsc_target *target,
                               unsigned parts, struct rules_needs *out);

/* ---- evaluation ---- */

/* Which rules alert for one event (Falco's rule_matching). */
enum rules_matching {
    RULES_MATCH_FIRST,   /* the first enabled rule in load order whose condition holds: Falco's default */
    RULES_MATCH_ALL,     /* every rule whose condition holds */
};
/* "first" or "all" (any case); 0, or -1 for another word. */
int rules_matching_parse(const char *s, enum rules_matching *out);
const char *rules_matching_name(enum rules_matching m);

struct rules_engine_config {
    const char *hostname;       /* the alert JSON's "hostname" (copied) */
    /* Process table, over every connection: past it the connection holding
     * the most entries loses its least recently used one (counted), so one
     * sandbox cannot push another's processes out. */
    size_t max_processes;
    enum rules_matching matching;
    /* Per-rule throttling, per (rule, connection): a token bucket of
     * `burst` alerts refilled at `rate` per second of the daemon's clock.
     * rate 0 (the default, as Falco has none): every match is an alert. */
    double rate;
    double burst;
    /* The ceiling, per connection and every rule together: `ceiling_burst`
     * alerts at once, then `ceiling` per second of the daemon's clock;
     * what it holds back is counted and said in the connection's next
     * alert. Set so high that no honest workload meets it (docs/detection.md
     * has the figures); ceiling 0: none. */
    double ceiling;
    double ceiling_burst;
    /* Longest value of one rendered output field, in bytes (the rule sees
     * the whole value); longer ones are cut, marked with "...". */
    size_t output_field_max;
    /* Container records (container/container.h) for container.name,
     * k8s.*, user.name and the like, read through this view on the
     * engine's thread; NULL: those fields are absent. Not owned. */
    struct container_view *containers;
    /* The clock the limits refill by, in nanoseconds that only go forward
     * (tests give their own); NULL: CLOCK_MONOTONIC. Never an event's time. */
    int64_t (*clock_ns)(void *data);
    void *clock_data;
    /* Sequences' partial matches (chains begun, not yet complete): at most
     * sequence_max_bytes of them over every connection (past it the
     * connection holding the most loses its oldest), and sequence_max_per_group
     * per (sequence, connection) (past it its oldest goes). Each eviction
     * is counted and said in the connection's next alert. */
    size_t sequence_max_bytes;
    size_t sequence_max_per_group;
    /* Falco's "Falco internal: syscall event drop" (falco.yaml
     * syscall_event_drops, userspace/falco/event_drops.cpp), per sandbox
     * connection whatever rules are loaded: once a second of the clock
     * above, a connection whose sandbox dropped more than drop_threshold of
     * its events (delivered + dropped) raises it, at most drop_rate a second
     * after drop_burst; Debug, source "internal", Falco's output_fields
     * (n_evts, n_drops, ...) and the container's id, name, image and pod.
     * Not held back by the ceiling or the per-rule limit. */
    bool drop_alerts;
    double drop_threshold, drop_rate, drop_burst;
};

#define RULES_DROP_RULE "Falco internal: syscall event drop"
#define RULES_DEFAULT_DROP_THRESHOLD 0.1      /* falco.yaml syscall_event_drops.threshold */
#define RULES_DEFAULT_DROP_RATE 0.03333       /* .rate: one alert every 30 s */
#define RULES_DEFAULT_DROP_BURST 1.0          /* .max_burst */

#define RULES_DEFAULT_MAX_PROCESSES 65536
#define RULES_DEFAULT_MATCHING RULES_MATCH_FIRST
#define RULES_DEFAULT_RATE 0.0
#define RULES_DEFAULT_BURST 100.0
#define RULES_DEFAULT_CEILING 1000.0
#define RULES_DEFAULT_CEILING_BURST 10000.0
#define RULES_DEFAULT_OUTPUT_FIELD_MAX 1024
#define RULES_DEFAULT_SEQUENCE_BYTES (32u << 20)
#define RULES_DEFAULT_SEQUENCE_PER_GROUP 1024

void rules_engine_config_defaults(struct rules_engine_config *cfg);

struct rules_engine;

/* NULL when out of memory. Starts with no rules (every event is only
 * observed, as by rules_engine_observe). */
struct rules_engine *rules_engine_new(const struct rules_engine_config *cfg);
void rules_engine_free(struct rules_engine *e);

/* Installs rs (the engine owns it from now on and frees the previous set);
 * NULL: no rules. The process tables and throttle state are kept. */
void rules_engine_set_rules(struct rules_engine *e, struct rule_set *rs);
const struct rule_set *rules_engine_rules(const struct rules_engine *e);

/* One alert, ready for every output. Strings live in the alert_list until
 * its reset. */
struct alert {
    size_t event_index;         /* the index passed to rules_engine_eval */
    uint64_t conn_id;           /* the event's connection (delivery shares its queue by it) */
    const char *rule;
    enum rules_priority priority;
    int64_t time_ns;            /* the event's time (context time_ns, else its receive time) */
    const char *container_id;   /* NULL: the event carries none */
    const char *output;         /* Falco's "output": "HH:MM:SS.nnnnnnnnn: Priority rendered-text" */
    size_t output_len;          /* a value from the sandbox may hold a NUL byte */
    const char *output_fields;  /* JSON object: one key per %field of the rule's output, plus evt.time */
    const char *tags;           /* JSON array of strings, sorted */
    /* Alerts held back just before this one: of its rule on its connection
     * by the per-rule limit, plus of its connection by the ceiling. */
    uint64_t suppressed;
    const char *json;           /* the whole alert as one line of Falco's JSON (no newline) */
    size_t json_len;
    /* Partial matches of sequences on its connection evicted by the bounds
     * since its previous alert (RULES_EVICTED_KEY). */
    uint64_t evicted;
    /* A sequence's alert: each step's event, in order (NULL for a rule's),
     * and the events the sandbox said it dropped while the chain was open
     * (a missing step, or a missing unless, may be among them). */
    const struct alert_step *steps;
    size_t nsteps;
    uint64_t sandbox_dropped;
};

/* One step of a sequence's alert. */
struct alert_step {
    const char *name;
    int64_t time_ns;            /* its event's time (a count step: its last counted event) */
    int64_t first_time_ns;      /* a count step: its first counted event's time */
    uint32_t count;             /* a count step: its events (distinct values); else 1 */
    int64_t event_id;           /* the stored event's id; 0: not known (not stored, or in this batch) */
    size_t event_index;         /* SIZE_MAX, or its event's index in this batch (id from the batch's) */
};

/* Alerts of one rule held back in the events evaluated into a list. */
struct alert_suppressed {
    const char *rule;
    uint64_t count;             /* by the per-rule limit (--alerts-rate) */
    uint64_t over_ceiling;      /* by the connection's ceiling (--alerts-ceiling) */
};

/* Alerts raised over some events (a batch). Reset keeps the memory, so the
 * steady state allocates nothing. */
struct alert_list {
    struct alert *items;
    size_t count, cap;
    struct alert_suppressed *suppressed;
    size_t nsuppressed, suppressed_cap;
    uint64_t dropped;           /* alerts lost because memory ran out (counted, logged by the caller) */
    void *storage;              /* the strings, owned by the list */
};

void alert_list_reset(struct alert_list *l);
void alert_list_free(struct alert_list *l);

/* Updates the process table of ev->conn_id from ev, then evaluates the
 * rules that can match ev's event type in load order, appending an alert to
 * out for the first that matches (RULES_MATCH_FIRST) or each (ALL), or
 * counting it as held back by a limit. index is stored in the alert. Never
 * fails: an event that cannot be classified matches nothing. */
void rules_engine_eval(struct rules_engine *e, const struct event *ev, size_t index, struct alert_list *out);

/* The events evaluated since the previous call were stored, event index i
 * (as passed to rules_engine_eval) with id first_id + i; 0: they have no
 * ids. Fills in the ids of l's sequence alerts' steps among them (and
 * renders their json again) and of the partial matches' steps. */
void rules_engine_batch_stored(struct rules_engine *e, struct alert_list *l, int64_t first_id);

struct strbuf;

/* A sequence alert's RULES_SEQUENCE_KEY object (nothing for a rule's):
 * each step's name, event id (those in the batch: first_id + their index;
 * null when not known), time, and a count step's count and first time. */
void rules_alert_sequence_json(struct strbuf *out, const struct alert *a, int64_t first_id);

/* Updates the process table only (rebuilding it after a restart). */
void rules_engine_observe(struct rules_engine *e, const struct event *ev);

/* The connection ended: its process table and its ceiling go. */
void rules_engine_conn_closed(struct rules_engine *e, uint64_t conn_id);

struct rules_engine_stats {
    uint64_t events;             /* evaluated */
    uint64_t alerts;             /* appended to lists */
    uint64_t suppressed;         /* held back by the per-rule limit */
    uint64_t over_ceiling;       /* held back by the connections' ceiling */
    uint64_t processes;          /* in the tables now */
    uint64_t process_evictions;  /* removed to stay under max_processes */
    /* sequences */
    uint64_t sequence_alerts;
    uint64_t sequence_partials, sequence_bytes;   /* now */
    uint64_t sequence_started;
    uint64_t sequence_evicted;   /* by sequence_max_bytes or sequence_max_per_group */
    uint64_t sequence_expired;   /* past their sequence's within */
    uint64_t sequence_cancelled; /* by unless */
    uint64_t sequence_dropped;   /* when the rules changed, or their connection closed */
    uint64_t drop_alerts;        /* RULES_DROP_RULE alerts raised */
};
void rules_engine_get_stats(const struct rules_engine *e, struct rules_engine_stats *out);

/* Whether the engine's own structures agree with one another (the
 * sequences' index, lists and counts): for tests and the fuzzer. */
bool rules_engine_consistent(const struct rules_engine *e);

/* ---- an alert's line again, from what the alerts table keeps ---- */

/* Appends the Falco JSON line of an alert made of these parts (priority as
 * rules_priority_name spells it, output_fields and tags as JSON text). The
 * engine renders every alert's json with it, so an alert read back from
 * the database (delivery, --alerts-url) gives the same bytes as the line
 * written when it was raised, with the same hostname. Falco's keys, in its
 * (alphabetical) order; a suppressed count above 0 adds a key of its own,
 * RULES_SUPPRESSED_KEY, outside output_fields (which stays exactly Falco's:
 * the output's fields and evt.time). RULES_DROP_RULE's is Falco's internal
 * message (falco_outputs.cpp handle_msg): source "internal", no tags, its
 * output the message alone (the text line's, without the time, priority
 * and fields). */
void rules_alert_json(struct strbuf *out, const char *hostname, const char *rule, const char *priority,
                      int64_t time_ns, const char *output, size_t output_len, const char *output_fields,
                      const char *tags, uint64_t suppressed);
#define RULES_SUPPRESSED_KEY "seccheckd_suppressed"

/* The same with every key of seccheckd's own, each outside output_fields
 * and only when there is something to say: RULES_EVICTED_KEY (evicted > 0),
 * RULES_SEQUENCE_KEY (sequence: a JSON object, rules_alert_sequence_json;
 * NULL or "" for a rule's alert), RULES_SUPPRESSED_KEY (suppressed > 0). */
struct rules_alert_extras {
    uint64_t suppressed;
    uint64_t evicted;
    const char *sequence;
};
void rules_alert_json_ex(struct strbuf *out, const char *hostname, const char *rule, const char *priority,
                         int64_t time_ns, const char *output, size_t output_len, const char *output_fields,
                         const char *tags, const struct rules_alert_extras *extras);
#define RULES_EVICTED_KEY "seccheckd_evicted"
#define RULES_SEQUENCE_KEY "seccheckd_sequence"

#endif
