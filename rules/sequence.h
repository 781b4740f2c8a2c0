/* sequence.h - sequence rules inside rules/: a chain of Falco conditions
 * (steps) that one sandbox connection satisfies in order within a time, in
 * the daemon's clock. Not an interface of the module (rules.h is): what the
 * loader (sequence_load.c), the matcher (sequence_match.c), the engine
 * (engine.c) and what-rules-need (needs.c) share.
 *
 *   - sequence: Downloaded file executed
 *     by: [container.id]
 *     within: 10m
 *     steps:
 *       - name: write
 *         condition: open_write and proc.name in (download_programs)
 *       - name: run
 *         condition: spawned_process and proc.exepath = %write.fd.name
 *     unless: ...
 *     output: ... %write.fd.name ... %proc.cmdline
 *     priority: CRITICAL
 *
 * A step's condition is a Falco condition (lists, macros, transformers) and
 * may compare a field of its event with a field of an earlier step's,
 * `FIELD = %STEP.FIELD` or `FIELD != %STEP.FIELD`, as a comparison joined to
 * the rest of the condition by `and`: the loader takes those out of the
 * text (sequence_load.c) and the matcher joins on them, so finding the
 * partial matches an event completes is a hash lookup, not a scan.
 *
 * State (sequence_match.c): a partial match per chain started, keyed by its
 * connection, its sequence, the step it waits for, the values of `by` and
 * of the join fields; records of a fixed size per sequence (the captured
 * values inline), bounded per (sequence, connection) and in bytes over all
 * connections, the oldest evicted first, the evictions counted per
 * connection and said in its next alert.
 */
#ifndef SECCHECKD_RULES_SEQUENCE_H
#define SECCHECKD_RULES_SEQUENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "filter.h"
#include "render.h"
#include "ruleset.h"
#include "rules.h"

#define SEQ_MAX_SEQUENCES 1000    /* in a rule set: each takes ~18 KiB compiled, whatever it holds */
#define SEQ_MAX_STEPS 16          /* steps of one sequence */
#define SEQ_MAX_BY 8              /* fields in `by` */
#define SEQ_MAX_REFS 8            /* %STEP.FIELD comparisons in one step (or unless) */
#define SEQ_MAX_CAPTURES 32       /* fields of its steps' events a sequence keeps (refs and output) */
#define SEQ_MAX_AT_LEAST 1000     /* a step's count */
#define SEQ_TEXT_MAX 200          /* bytes of a captured string kept for the output (compared whole: hashed) */
#define SEQ_MAX_WITHIN_NS (7 * 24 * 3600 * 1000000000ll)   /* a week */
#define SEQ_MAX_JOIN_KEYS 64      /* lookups one event makes for one step (an any-ancestor join: one per level) */

/* A comparison with an earlier step's field. */
struct seq_ref {
    struct fieldref lhs;          /* the event's field; proc.apid & co. without an index: any ancestor (=) */
    enum filter_op op;            /* OP_EQ or OP_NE */
    uint16_t capture;             /* the earlier step's field: its capture */
};

/* A field of one step's event that the partial match keeps. */
struct seq_capture {
    uint16_t step;
    struct fieldref field;
    const char *key;              /* "write.fd.name": how outputs and messages spell it */
};

/* One condition of a sequence: a step's, or unless. The pseudo-rule holds
 * what needs.c and availability.c read of a rule: the condition, its event
 * types, and the fields read beside the condition (its `output` lists the
 * by fields, the refs' left sides, the distinct field, what is captured at
 * this step, and, for the last step, the output's own). */
struct seq_cond {
    struct rule rule;
    struct seq_ref refs[SEQ_MAX_REFS];
    uint16_t nrefs, njoins;       /* refs[0, njoins) are the `=` ones (the join), then the `!=` */
};

struct seq_step {
    const char *name;
    struct seq_cond c;
    uint32_t at_least;            /* 1: one event */
    bool has_distinct;
    struct fieldref distinct;     /* at_least distinct values of this field */
};

struct sequence {
    const char *name;
    const char *desc;
    enum rules_priority priority;
    bool enabled;
    const char *const *tags;
    size_t ntags;
    const char *tags_json;
    const char *file;
    unsigned line;
    int64_t within_ns;
    struct fieldref by[SEQ_MAX_BY];
    uint16_t nby;
    const char *by_text;          /* "container.id, proc.pid" (rules check) */
    struct seq_step steps[SEQ_MAX_STEPS];
    uint16_t nsteps;
    bool has_unless;
    struct seq_cond unless;
    struct seq_capture captures[SEQ_MAX_CAPTURES];
    uint16_t ncaptures;
    struct template output;       /* parts and keys with capture1 set read a step's field */
    uint32_t count_slots;         /* the largest at_least of its count steps (0: none) */
    size_t record_size;           /* bytes of one partial match */
};

/* Per event type, the (sequence, step) pairs whose condition can match it;
 * step SEQ_UNLESS: the sequence's unless. Enabled sequences only. */
#define SEQ_UNLESS 0xffff
struct seq_entry {
    uint32_t seq;
    uint16_t step;
};

struct seq_index {
    uint32_t off[EVTYPE_COUNT + 1];
    struct seq_entry *entries;
};

/* What a rule set holds of sequences (struct rule_set's `seq`). */
struct seq_set {
    struct sequence *v;
    size_t n, enabled;
    struct seq_index exits, enters;
};

/* ---- the loader (sequence_load.c) ---- */

struct loader;
struct lfile;
struct ynode;

/* Reads one `- sequence:` item (kept until compile_sequences). */
void sequence_read(struct loader *L, const struct lfile *f, const struct ynode *item);
/* Compiles every collected sequence into L->rs->seq; after the rules (a
 * name both a rule and a sequence have is refused). */
void sequence_compile_all(struct loader *L);
/* Frees what the loader kept of sequences. */
void sequence_loader_free(struct loader *L);

/* ---- the matcher (sequence_match.c) ---- */

struct seq_state;

struct seq_limits {
    size_t max_bytes;             /* partial matches of every connection together */
    size_t max_per_group;         /* partial matches of one (sequence, connection) */
};

struct seq_state *seq_state_new(const struct seq_limits *limits);
void seq_state_free(struct seq_state *st);

/* The rule set changed: every partial match goes (counted as dropped). */
void seq_state_reset(struct seq_state *st, const struct seq_set *set);

/* One step's event, as a partial match keeps it. */
struct seq_stamp {
    int64_t time_ns;              /* evt.time */
    int64_t first_time_ns;        /* a count step: its first counted event's */
    int64_t event_id;             /* 0: not known (yet) */
    uint32_t count;               /* a count step: its events (distinct values) */
    uint32_t batch_index;         /* while pending: the event's index in the batch */
    bool pending;                 /* its id comes when its batch is stored */
};

/* A captured value: the whole value's keyed hash (what = compares) and its
 * first SEQ_TEXT_MAX bytes (what an output shows). */
struct seq_value {
    uint64_t hash;
    struct fval v;                /* FV_STR: s points at text */
    uint32_t full_len;
    char text[SEQ_TEXT_MAX + 4];  /* cut values end with "..." */
};

/* What the matcher asks of the engine when a sequence completes. */
struct seq_raise {
    const struct sequence *seq;
    const struct seq_stamp *stamps;   /* one per step */
    const struct seq_value *values;   /* one per capture */
    uint32_t sandbox_dropped;         /* the sandbox dropped this many events while the chain was open */
};

typedef void (*seq_raise_fn)(void *ctx, struct evctx *x, const struct seq_raise *r);

/* Evaluates every sequence step (and unless) that can match x's event:
 * partial matches start, advance, complete (raise is called, then the
 * partial goes), or are cancelled. now_ns: the daemon's clock. index: the
 * event's in its batch. */
void seq_eval(struct seq_state *st, const struct seq_set *set, struct evctx *x, bool exec_repeat, int64_t now_ns,
              size_t index, seq_raise_fn raise, void *ctx);

/* Evictions on conn since the last call (for its next alert), reset. */
uint64_t seq_take_evicted(struct seq_state *st, uint64_t conn_id);

/* The batch just evaluated was stored: its events have ids first_id + i
 * (0: none). Pending stamps get theirs. */
void seq_batch_stored(struct seq_state *st, int64_t first_id);

void seq_conn_closed(struct seq_state *st, uint64_t conn_id);

/* Releases the partial matches past their window (between batches: a chain
 * no event comes back to goes too). */
void seq_sweep(struct seq_state *st, int64_t now_ns);

/* Whether the index, the lists and the counts agree: every partial match
 * filed once, in its key's bucket, its links both ways, each connection's
 * counts and bytes their records'. For tests and the fuzzer. */
bool seq_state_consistent(const struct seq_state *st);

struct seq_stats {
    uint64_t partials, bytes;     /* now */
    uint64_t started, completed;
    uint64_t evicted;             /* by the bounds */
    uint64_t expired;             /* past `within` */
    uint64_t cancelled;           /* by unless */
    uint64_t dropped;             /* at a rule set change, a connection's close */
};
void seq_get_stats(const struct seq_state *st, struct seq_stats *out);

/* Bytes of one partial match of s (its steps' events, captured values and
 * count area inline). */
size_t seq_record_size(const struct sequence *s);

#endif
