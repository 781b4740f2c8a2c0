/* verify.c - `seccheckd verify --db PATH [--key-file PATH] [--hash-only]`.
 *
 * Reads the database in one read transaction (a consistent snapshot, so it
 * can run next to a live daemon), walks the batches table in id order and,
 * for every batch, checks that it follows the previous one (ids, prev_hash,
 * event ranges), that its events rows are all there and no more, and that
 * the hash recomputed from those rows (chain.c, the code the writer uses)
 * is the stored one. The first batch that fails is named, with why.
 *
 * The hash covers raw; the columns people query are decoded from it. So
 * each row of a batch that verifies is decoded again (event_redecode.h) and
 * every decoded column and detail compared with what the row holds; rows
 * that differ are named with their columns (the first VERIFY_LIST_MAX, then
 * a count). --hash-only skips that.
 *
 * The chain covers each batch's alerts too (chain.h): their sealed records
 * are hashed after the events, a missing or an added alert of the batch is
 * named by its id, and each alert's columns are compared with its sealed
 * record, as an event's with its raw. Batches written before alerts were
 * chained (alerts NULL) cover none: said, counted.
 */
#include "verify.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

#include "chain.h"
#include "cli.h"
#include "db_file.h"
#include "event_redecode.h"
#include "sqlutil.h"
#include "strbuf.h"

#define PROG "seccheckd verify"
#define VERIFY_LIST_MAX 20          /* altered rows named; the rest are counted */

enum { VERIFY_OK = 0, VERIFY_BAD = 1, VERIFY_USAGE = 2 };

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd verify --db PATH [--key-file PATH] [--hash-only]\n"
            "       seccheckd verify --to URL [--host-id ID | --all-hosts] [--key-file PATH] [--hash-only]\n"
            "Recomputes the tamper-evident batch chain of a seccheckd database and names the\n"
            "first batch whose events were altered, deleted or reordered; then decodes every\n"
            "event's raw packet again and names the events whose decoded columns or detail\n"
            "differ from it.\n"
            "\n"
            "  --db PATH        the database to check (opened read-only; the daemon may be running)\n"
            "  --key-file PATH  the HMAC key the daemon was given; required for a keyed chain\n"
            "  --hash-only      check the chain only, not the decoded columns (faster)\n"
            "  --to URL         check the central PostgreSQL copy (seccheckd forward) instead\n"
            "  --host-id ID     the host to check there [/etc/machine-id, or the hostname, as forward]\n"
            "  --all-hosts      check every host there\n"
            "  --help, -h       this text\n"
            "\n"
            "Exit status: 0 everything verifies, 1 a batch or an event does not (printed), 2 usage\n"
            "error or the database cannot be checked.\n");
}

/* Rows of one batch whose decoded columns differ from their raw: named
 * once the batch's hash verifies (until then raw itself is in doubt). */
struct batch_findings {
    int64_t ids[VERIFY_LIST_MAX];
    uint32_t columns[VERIFY_LIST_MAX];   /* bit i: redecode_columns[i]; bit 31: raw undecodable */
    int listed;
    int64_t count;
};

#define RAW_UNDECODABLE (1u << 31)

/* The alerts' columns compared with their sealed record, in this order
 * (bit i of a finding's columns). */
static const char *const alert_columns[] = {"event_id", "rule", "priority", "time_ns", "container_id", "output",
                                            "output_fields", "tags", "suppressed", "evicted", "sequence", "sealed"};
enum { ALERT_COL_SEALED = 11 };

struct alert_findings {
    int64_t ids[VERIFY_LIST_MAX];
    uint32_t columns[VERIFY_LIST_MAX];
    int listed;
    int64_t count;
};

struct verifier {
    sqlite3 *db;
    struct chain *chain;
    sqlite3_stmt *rows;       /* the events of one batch */
    sqlite3_stmt *count;      /* events in an id range */
    sqlite3_stmt *alerts;     /* the alerts of an id range (NULL: no alerts table with sealed records) */
    sqlite3_stmt *stray;      /* alerts of an event range outside an id range */
    struct alert_findings alert_found;   /* of the batch being checked */
    int64_t alerts_altered, alerts_listed, alerts_verified;
    int64_t uncovered;        /* batches written before alerts were chained */
    bool hash_only;
    struct event_redecoder redecoder;
    int64_t v2_first;         /* rows from this id on are schema version 2's */
    bool type_name_stored;    /* schema version 1's column, not computed from msg_type */
    struct batch_findings found;
    int64_t altered, listed;  /* events whose columns differ, and how many were named */
};

struct batch_row {
    int64_t id, run_id, first, last, events, committed_ns;
    bool has_range;            /* first/last are not NULL */
    bool covers_alerts;        /* alerts not NULL (chain.h) */
    int64_t alerts, first_alert;
    int64_t keyed;
    uint8_t prev[CHAIN_HASH_LEN], hash[CHAIN_HASH_LEN];
    int prev_len, hash_len;
};

static void to_hex(const uint8_t *in, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * len] = '\0';
}

/* -1 on a SQLite error (message printed). */
static int64_t count_range(struct verifier *v, int64_t lo, int64_t hi)
{
    sqlite3_stmt *st = v->count;
    sqlite3_bind_int64(st, 1, lo);
    sqlite3_bind_int64(st, 2, hi);
    int64_t n = -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    else
        fprintf(stderr, PROG ": reading events: %s\n", sqlite3_errmsg(v->db));
    sqlite3_reset(st);
    return n;
}

static void copy_hash(sqlite3_stmt *st, int col, uint8_t *out, int *len)
{
    const void *p = sqlite3_column_blob(st, col);
    int n = sqlite3_column_bytes(st, col);
    *len = sqlite3_column_type(st, col) == SQLITE_BLOB ? n : -1;
    memset(out, 0, CHAIN_HASH_LEN);
    if (p && n == CHAIN_HASH_LEN)
        memcpy(out, p, CHAIN_HASH_LEN);
}

static bool is_int(sqlite3_stmt *st, int col) { return sqlite3_column_type(st, col) == SQLITE_INTEGER; }

/* Reads one batches row; false if a column has a type the writer never
 * stores (then the row was edited by hand). */
static bool read_batch(sqlite3_stmt *st, struct batch_row *b)
{
    memset(b, 0, sizeof(*b));
    b->id = sqlite3_column_int64(st, 0);
    b->run_id = sqlite3_column_int64(st, 1);
    b->has_range = is_int(st, 2) && is_int(st, 3);
    b->first = sqlite3_column_int64(st, 2);
    b->last = sqlite3_column_int64(st, 3);
    b->events = sqlite3_column_int64(st, 4);
    b->committed_ns = sqlite3_column_int64(st, 5);
    copy_hash(st, 6, b->prev, &b->prev_len);
    copy_hash(st, 7, b->hash, &b->hash_len);
    b->keyed = sqlite3_column_int64(st, 8);
    b->covers_alerts = is_int(st, 9);
    b->alerts = sqlite3_column_int64(st, 9);
    b->first_alert = sqlite3_column_int64(st, 10);
    bool range_ok = b->has_range || (sqlite3_column_type(st, 2) == SQLITE_NULL &&
                                     sqlite3_column_type(st, 3) == SQLITE_NULL);
    bool alerts_ok = b->covers_alerts ? b->alerts >= 0 && (b->alerts == 0 || (is_int(st, 10) && b->first_alert > 0))
                                      : sqlite3_column_type(st, 9) == SQLITE_NULL;
    return is_int(st, 0) && is_int(st, 1) && range_ok && is_int(st, 4) && is_int(st, 5) && is_int(st, 8) && alerts_ok;
}

/* "batch 17 (events 69633..73728)" */
static const char *label(const struct batch_row *b, char *buf, size_t len)
{
    if (b->has_range && b->events > 0)
        snprintf(buf, len, "batch %" PRId64 " (events %" PRId64 "..%" PRId64 ")", b->id, b->first, b->last);
    else
        snprintf(buf, len, "batch %" PRId64, b->id);
    return buf;
}

/* The rows statement's first decoded column (after id, conn_id, recv_ns,
 * msg_type, raw): redecode_columns' order. */
#define STORED_FIRST 5

/* The row st is on (event id) against its raw decoded again; a row that
 * differs goes into v->found. */
static void check_columns(struct verifier *v, sqlite3_stmt *st, int64_t id)
{
    bool v1 = id < v->v2_first;
    sqlite3_stmt *want = event_redecode(&v->redecoder, sqlite3_column_blob(st, 4), (size_t)sqlite3_column_bytes(st, 4),
                                        v1);
    uint32_t differ = want ? 0 : RAW_UNDECODABLE;
    for (int i = 0; want && i < REDECODE_COLUMNS; i++) {
        int stored = STORED_FIRST + i;
        bool same;
        if (i == REDECODE_TYPE_NAME && !v->type_name_stored)
            same = true;   /* computed from msg_type, which the hash covers */
        else if (v1 && i == REDECODE_DETAIL)
            same = event_redecode_same(st, stored, want, REDECODE_WHOLE_DETAIL);
        else if (v1 && i >= REDECODE_V2_FIRST && i <= REDECODE_V2_LAST)
            same = sqlite3_column_type(st, stored) == SQLITE_NULL;
        else
            same = event_redecode_same(st, stored, want, i);
        if (!same)
            differ |= 1u << i;
    }
    if (!differ)
        return;
    struct batch_findings *f = &v->found;
    if (f->listed < VERIFY_LIST_MAX) {
        f->ids[f->listed] = id;
        f->columns[f->listed++] = differ;
    }
    f->count++;
}

/* "event 12 (batch 3): altered: process_name, detail are not what its raw decodes to" */
static void print_finding(int64_t id, int64_t batch, uint32_t columns)
{
    printf("event %" PRId64 " (batch %" PRId64 "): altered: ", id, batch);
    if (columns & RAW_UNDECODABLE) {
        printf("its raw is not a packet the daemon stores\n");
        return;
    }
    int n = 0;
    for (int i = 0; i < REDECODE_COLUMNS; i++)
        if (columns & (1u << i))
            printf("%s%s", n++ ? ", " : "", redecode_columns[i].name);
    printf(" %s not what its raw decodes to\n", n == 1 ? "is" : "are");
}

/* Batch b verified: its raw is sound, so what differs from it is named. */
static void report_findings(struct verifier *v, const struct batch_row *b)
{
    for (int i = 0; i < v->found.listed && v->listed < VERIFY_LIST_MAX; i++, v->listed++)
        print_finding(v->found.ids[i], b->id, v->found.columns[i]);
    v->altered += v->found.count;
}

/* ---- alerts ---- */

static bool same_bytes(sqlite3_stmt *st, int col, const char *want, size_t len)
{
    if (sqlite3_column_type(st, col) != SQLITE_TEXT)
        return false;
    const void *p = sqlite3_column_blob(st, col);
    return (size_t)sqlite3_column_bytes(st, col) == len && (len == 0 || (p && memcmp(p, want, len) == 0));
}

/* Row st (an alert) against its sealed record: the columns that differ
 * (bits of alert_columns), ALERT_COL_SEALED alone when sealed is not one. */
static uint32_t alert_differs(sqlite3_stmt *st, const void *sealed, size_t len)
{
    struct chain_alert a;
    if (!sealed || chain_alert_decode(sealed, len, &a) != 0)
        return 1u << ALERT_COL_SEALED;
    uint32_t d = 0;
    if (!is_int(st, 1) || sqlite3_column_int64(st, 1) != a.event_id)
        d |= 1u << 0;
    if (!same_bytes(st, 2, a.rule, a.rule_len))
        d |= 1u << 1;
    if (!same_bytes(st, 3, a.priority, a.priority_len))
        d |= 1u << 2;
    if (!is_int(st, 4) || sqlite3_column_int64(st, 4) != a.time_ns)
        d |= 1u << 3;
    if (a.container_id ? !same_bytes(st, 5, a.container_id, a.container_id_len)
                       : sqlite3_column_type(st, 5) != SQLITE_NULL)
        d |= 1u << 4;
    if (!same_bytes(st, 6, a.output, a.output_len))
        d |= 1u << 5;
    if (!same_bytes(st, 7, a.output_fields, a.output_fields_len))
        d |= 1u << 6;
    if (!same_bytes(st, 8, a.tags, a.tags_len))
        d |= 1u << 7;
    if (!is_int(st, 9) || sqlite3_column_int64(st, 9) != a.suppressed)
        d |= 1u << 8;
    if (!is_int(st, 11) || sqlite3_column_int64(st, 11) != a.evicted)
        d |= 1u << 9;
    if (a.sequence ? !same_bytes(st, 12, a.sequence, a.sequence_len) : sqlite3_column_type(st, 12) != SQLITE_NULL)
        d |= 1u << 10;
    return d;
}

/* "alert 7 (batch 3, event 17): altered: output is not what was sealed" */
static void print_alert_finding(int64_t id, int64_t batch, uint32_t columns)
{
    printf("alert %" PRId64 " (batch %" PRId64 "): altered: ", id, batch);
    if (columns & (1u << ALERT_COL_SEALED)) {
        printf("its sealed record is not one\n");
        return;
    }
    int n = 0;
    for (int i = 0; i < ALERT_COL_SEALED; i++)
        if (columns & (1u << i))
            printf("%s%s", n++ ? ", " : "", alert_columns[i]);
    printf(" %s not what was sealed\n", n == 1 ? "is" : "are");
}

/* The batch's sealed alerts into the hash, in id order; missing ones are
 * not (the hash then fails, check_batch names them first). 0 or -1. */
static int add_alerts(struct verifier *v, const struct batch_row *b)
{
    memset(&v->alert_found, 0, sizeof(v->alert_found));
    if (b->alerts == 0)
        return 0;
    if (!v->alerts)
        return 0;   /* no alerts table: check_batch says they are missing */
    sqlite3_stmt *st = v->alerts;
    sqlite3_bind_int64(st, 1, b->first_alert);
    sqlite3_bind_int64(st, 2, b->first_alert + b->alerts - 1);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const void *sealed = sqlite3_column_type(st, 10) == SQLITE_BLOB ? sqlite3_column_blob(st, 10) : NULL;
        size_t len = sealed ? (size_t)sqlite3_column_bytes(st, 10) : 0;
        chain_add_alert(v->chain, sealed ? sealed : "", len);
        uint32_t differ = v->hash_only ? 0 : alert_differs(st, sealed, len);
        if (!differ)
            continue;
        struct alert_findings *f = &v->alert_found;
        if (f->listed < VERIFY_LIST_MAX) {
            f->ids[f->listed] = sqlite3_column_int64(st, 0);
            f->columns[f->listed++] = differ;
        }
        f->count++;
    }
    sqlite3_reset(st);
    if (step != SQLITE_DONE) {
        fprintf(stderr, PROG ": reading alerts: %s\n", sqlite3_errmsg(v->db));
        return -1;
    }
    return 0;
}

/* The batch's alerts all there, none added: 0, or VERIFY_BAD with the
 * verdict printed (name: the batch's label), or VERIFY_USAGE. */
static int check_alert_ids(struct verifier *v, const struct batch_row *b, const char *name)
{
    int64_t lo = b->first_alert, hi = b->first_alert + b->alerts - 1;
    if (b->alerts > 0) {
        if (b->first_alert > INT64_MAX - b->alerts) {
            printf("%s: altered: its alert range is out of bounds\n", name);
            return VERIFY_BAD;
        }
        int64_t missing[VERIFY_LIST_MAX], nmissing = 0, present = 0, expect = lo;
        sqlite3_stmt *st = NULL;
        if (v->alerts && sqlite3_prepare_v2(v->db, "SELECT id FROM alerts WHERE id BETWEEN ?1 AND ?2 ORDER BY id", -1,
                                            &st, NULL) != SQLITE_OK) {
            fprintf(stderr, PROG ": reading alerts: %s\n", sqlite3_errmsg(v->db));
            return VERIFY_USAGE;
        }
        if (st) {
            sqlite3_bind_int64(st, 1, lo);
            sqlite3_bind_int64(st, 2, hi);
            while (sqlite3_step(st) == SQLITE_ROW) {
                int64_t id = sqlite3_column_int64(st, 0);
                for (; expect < id; expect++, nmissing++)
                    if (nmissing < VERIFY_LIST_MAX)
                        missing[nmissing] = expect;
                expect = id + 1;
                present++;
            }
            sqlite3_finalize(st);
        }
        for (; expect <= hi; expect++, nmissing++)
            if (nmissing < VERIFY_LIST_MAX)
                missing[nmissing] = expect;
        if (nmissing) {
            printf("%s: deleted alerts: %" PRId64 " of %" PRId64 " sealed alerts present; missing: alert", name,
                   present, b->alerts);
            for (int64_t i = 0; i < nmissing && i < VERIFY_LIST_MAX; i++)
                printf("%s %" PRId64, i ? "," : "", missing[i]);
            printf("%s\n", nmissing > VERIFY_LIST_MAX ? " ..." : "");
            return VERIFY_BAD;
        }
    }
    if (!v->stray || !b->has_range)
        return 0;
    sqlite3_stmt *st = v->stray;
    sqlite3_bind_int64(st, 1, b->first);
    sqlite3_bind_int64(st, 2, b->last);
    sqlite3_bind_int64(st, 3, b->alerts ? lo : 1);
    sqlite3_bind_int64(st, 4, b->alerts ? hi : 0);
    int64_t stray = 0, first = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        stray = sqlite3_column_int64(st, 0);
        first = sqlite3_column_int64(st, 1);
    }
    sqlite3_reset(st);
    if (stray) {
        printf("%s: inserted alerts: %" PRId64 " alert%s of its events %s not among the %" PRId64 " it sealed "
               "(alert %" PRId64 ")\n", name, stray, cli_plural((uint64_t)stray), stray == 1 ? "is" : "are", b->alerts,
               first);
        return VERIFY_BAD;
    }
    return 0;
}

/* Recomputes b's hash from its rows into out; *present: rows found.
 * 0, VERIFY_BAD with *why set (a row edited to another type), or
 * VERIFY_USAGE on a read error. */
static int recompute(struct verifier *v, const struct batch_row *b, int64_t *present, uint8_t out[CHAIN_HASH_LEN],
                     char *why, size_t whylen)
{
    *present = 0;
    memset(&v->found, 0, sizeof(v->found));
    if (chain_begin(v->chain, b->prev) != 0) {
        char e[256];
        fprintf(stderr, PROG ": OpenSSL: %s\n", chain_openssl_error(e, sizeof(e)));
        return VERIFY_USAGE;
    }
    int rc = 0, step = SQLITE_DONE;
    if (b->has_range && b->events > 0) {
        sqlite3_stmt *st = v->rows;
        sqlite3_bind_int64(st, 1, b->first);
        sqlite3_bind_int64(st, 2, b->last);
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            struct chain_row r = {
                .id = sqlite3_column_int64(st, 0),
                .conn_id = sqlite3_column_int64(st, 1),
                .recv_ns = sqlite3_column_int64(st, 2),
                .msg_type = sqlite3_column_int64(st, 3),
                .raw = sqlite3_column_blob(st, 4),
                .raw_len = (size_t)sqlite3_column_bytes(st, 4),
            };
            if (rc == 0 && (!is_int(st, 1) || !is_int(st, 2) || !is_int(st, 3) ||
                            sqlite3_column_type(st, 4) != SQLITE_BLOB)) {
                snprintf(why, whylen, "altered: event %" PRId64 " has a column of the wrong type", r.id);
                rc = VERIFY_BAD;
            }
            chain_add_row(v->chain, &r);
            if (!v->hash_only)
                check_columns(v, st, r.id);
            (*present)++;
        }
        sqlite3_reset(st);
        if (step != SQLITE_DONE) {
            fprintf(stderr, PROG ": reading events: %s\n", sqlite3_errmsg(v->db));
            return VERIFY_USAGE;
        }
    }
    if (b->covers_alerts && add_alerts(v, b) != 0)
        return VERIFY_USAGE;
    struct chain_batch cb = {.id = b->id, .run_id = b->run_id, .first_event_id = b->has_range ? b->first : 0,
                             .last_event_id = b->has_range ? b->last : 0, .events = b->events,
                             .committed_ns = b->committed_ns, .covers_alerts = b->covers_alerts,
                             .alerts = b->alerts, .first_alert_id = b->alerts ? b->first_alert : 0};
    if (chain_finish(v->chain, &cb, out) != 0) {
        char e[256];
        fprintf(stderr, PROG ": OpenSSL: %s\n", chain_openssl_error(e, sizeof(e)));
        return VERIFY_USAGE;
    }
    return rc;
}

/* Checks one batch after prev (NULL for the first). 0, or VERIFY_BAD with
 * the verdict printed, or VERIFY_USAGE. */
static int check_batch(struct verifier *v, const struct batch_row *b, const struct batch_row *prev, bool keyed)
{
    static const uint8_t zeros[CHAIN_HASH_LEN];
    char name[128], why[256] = "";
    label(b, name, sizeof(name));
    int64_t prev_id = prev ? prev->id : 0;
    int64_t prev_last = prev ? prev->last : 0;

    /* Links: ids, prev_hash, event ranges. */
    if (b->id > prev_id + 1) {
        if (prev)
            printf("batch %" PRId64 ": missing: batch %" PRId64 " follows batch %" PRId64 "\n", prev_id + 1, b->id,
                   prev_id);
        else
            printf("batch 1: missing: the chain starts at batch %" PRId64 "\n", b->id);
        return VERIFY_BAD;
    }
    if (b->id != prev_id + 1) {   /* ids are unique and sorted: only a first id below 1 */
        printf("%s: out of order: batch ids start at 1\n", name);
        return VERIFY_BAD;
    }
    if (keyed && b->keyed != 1) {
        printf("%s: not keyed: written without --key-file, or rehashed without the key\n", name);
        return VERIFY_BAD;
    }
    if (!keyed && b->keyed != 0) {   /* excluded up front; kept for safety */
        printf("%s: altered: marked keyed in a plain chain\n", name);
        return VERIFY_BAD;
    }
    if (b->prev_len != CHAIN_HASH_LEN || memcmp(b->prev, prev ? prev->hash : zeros, CHAIN_HASH_LEN) != 0) {
        if (prev)
            printf("%s: out of order: prev_hash does not match batch %" PRId64 "\n", name, prev_id);
        else
            printf("%s: out of order: prev_hash is not the start of a chain\n", name);
        return VERIFY_BAD;
    }
    if (b->has_range && (b->first < 1 || b->last < 1 || b->last == INT64_MAX)) {
        printf("%s: altered: its event range is out of bounds\n", name);
        return VERIFY_BAD;
    }
    if (b->events < 0 || (b->events > 0 && (!b->has_range || b->first > b->last)) ||
        (b->events == 0 && b->has_range && b->first <= b->last)) {
        printf("%s: altered: its event range does not match its count of %" PRId64 "\n", name, b->events);
        return VERIFY_BAD;
    }
    if (b->events > 0 && b->first <= prev_last) {
        printf("%s: out of order: its events overlap batch %" PRId64 "'s (up to %" PRId64 ")\n", name, prev_id,
               prev_last);
        return VERIFY_BAD;
    }
    if (b->events > 0) {
        int64_t gap = count_range(v, prev_last + 1, b->first - 1);
        if (gap < 0)
            return VERIFY_USAGE;
        if (gap > 0 && prev) {
            printf("%s: inserted rows: %" PRId64 " events between ids %" PRId64 " and %" PRId64
                   " are in no batch\n", name, gap, prev_last, b->first);
            return VERIFY_BAD;
        }
        if (gap > 0) {
            printf("%s: inserted rows: %" PRId64 " events before it (ids below %" PRId64 ") are in no batch "
                   "(written before this database had a chain, or inserted)\n", name, gap, b->first);
            return VERIFY_BAD;
        }
    }

    /* Contents. */
    int64_t present;
    uint8_t hash[CHAIN_HASH_LEN];
    int rc = recompute(v, b, &present, hash, why, sizeof(why));
    if (rc == VERIFY_USAGE)
        return rc;
    if (present < b->events) {
        printf("%s: deleted rows: %" PRId64 " of %" PRId64 " events present\n", name, present, b->events);
        return VERIFY_BAD;
    }
    if (present > b->events) {
        printf("%s: inserted rows: %" PRId64 " rows where %" PRId64 " events were sealed\n", name, present,
               b->events);
        return VERIFY_BAD;
    }
    if (rc == VERIFY_BAD) {
        printf("%s: %s\n", name, why);
        return VERIFY_BAD;
    }
    if (b->covers_alerts && (rc = check_alert_ids(v, b, name)) != 0)
        return rc;
    if (b->hash_len != CHAIN_HASH_LEN || memcmp(hash, b->hash, CHAIN_HASH_LEN) != 0) {
        printf("%s: altered: hash mismatch\n", name);
        return VERIFY_BAD;
    }
    report_findings(v, b);
    for (int i = 0; i < v->alert_found.listed && v->alerts_listed < VERIFY_LIST_MAX; i++, v->alerts_listed++)
        print_alert_finding(v->alert_found.ids[i], b->id, v->alert_found.columns[i]);
    v->alerts_altered += v->alert_found.count;
    if (b->covers_alerts)
        v->alerts_verified += b->alerts;
    else
        v->uncovered++;
    return 0;
}

/* meta chain_key_id into out ("" if none). */
static void stored_key_id(sqlite3 *db, char out[CHAIN_KEY_ID_HEX])
{
    sqlite3_stmt *st;
    out[0] = '\0';
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='chain_key_id'", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, CHAIN_KEY_ID_HEX, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

/* Retention (retention.h) deletes the oldest batches and leaves the last
 * deleted one's id, last event id and hash in meta: the chain continues from
 * it. False when nothing was ever pruned. */
static bool load_anchor(sqlite3 *db, struct batch_row *anchor)
{
    memset(anchor, 0, sizeof(*anchor));
    sqlite3_stmt *st;
    bool found = false;
    if (sqlite3_prepare_v2(db,
                           "SELECT (SELECT value FROM meta WHERE key='chain_anchor_batch'),"
                           " (SELECT value FROM meta WHERE key='chain_anchor_last_event'),"
                           " (SELECT value FROM meta WHERE key='chain_anchor_hash')",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        anchor->id = sqlite3_column_int64(st, 0);
        anchor->last = sqlite3_column_int64(st, 1);
        const char *hex = (const char *)sqlite3_column_text(st, 2);
        for (int i = 0; hex && i < CHAIN_HASH_LEN && sscanf(hex + 2 * i, "%2hhx", &anchor->hash[i]) == 1; i++)
            anchor->hash_len = i + 1;
        anchor->has_range = true;
        found = anchor->hash_len == CHAIN_HASH_LEN;
    }
    sqlite3_finalize(st);
    return found;
}

/* Whether the events table has this column; stored: not computed. */
static bool has_column(sqlite3 *db, const char *name, bool stored)
{
    char sql[160];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM pragma_table_xinfo('events') WHERE name='%s'%s", name,
             stored ? " AND hidden=0" : "");
    return sqlutil_int(db, sql, 0) > 0;
}

/* v->rows: a batch's events, with their decoded columns unless
 * --hash-only. A database schema version 1 wrote and no daemon upgraded
 * lacks version 2's columns: NULL, as in an upgraded one's old rows. */
static int prepare_rows(struct verifier *v)
{
    struct strbuf sql = {0};
    strbuf_puts(&sql, "SELECT id, conn_id, recv_ns, msg_type, raw");
    if (!v->hash_only) {
        int version = (int)sqlutil_int(v->db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key='schema_version'", 2);
        v->v2_first = version < 2 ? INT64_MAX
                                  : sqlutil_int(v->db, "SELECT CAST(value AS INTEGER) FROM meta"
                                                       " WHERE key='schema_v2_first_event_id'", 1);
        v->type_name_stored = has_column(v->db, "type_name", true);
        for (int i = 0; i < REDECODE_COLUMNS; i++) {
            const char *name = redecode_columns[i].name;
            bool read = i == REDECODE_TYPE_NAME ? v->type_name_stored : has_column(v->db, name, false);
            strbuf_printf(&sql, ", %s", read ? name : "NULL");
        }
    }
    strbuf_puts(&sql, " FROM events WHERE id BETWEEN ?1 AND ?2 ORDER BY id");
    int rc = sql.failed ? SQLITE_NOMEM : sqlite3_prepare_v2(v->db, sql.data, -1, &v->rows, NULL);
    strbuf_free(&sql);
    return rc == SQLITE_OK ? 0 : -1;
}

/* The walk, inside the read transaction. */
static int verify_db(struct verifier *v, const char *key_file, const struct chain_key *key)
{
    if (!sqlutil_has(v->db, "table", "events")) {
        fprintf(stderr, PROG ": not a seccheckd database (no events table)\n");
        return VERIFY_USAGE;
    }
    if (!sqlutil_has(v->db, "table", "batches")) {
        printf("no batch chain: the batches table is missing\n");
        return VERIFY_BAD;
    }
    bool keyed = key != NULL;
    char stored[CHAIN_KEY_ID_HEX];
    stored_key_id(v->db, stored);
    if (!keyed && (stored[0] || sqlutil_int(v->db, "SELECT count(*) FROM batches WHERE keyed != 0", 0) > 0)) {
        fprintf(stderr, PROG ": chain is keyed: pass --key-file\n");
        return VERIFY_USAGE;
    }
    if (keyed && stored[0]) {
        char id[CHAIN_KEY_ID_HEX];
        if (chain_key_id(key, id) != 0) {
            fprintf(stderr, PROG ": OpenSSL cannot compute the key id\n");
            return VERIFY_USAGE;
        }
        if (strcmp(id, stored) != 0) {
            printf("wrong key: %s is not the key this chain was written with\n", key_file);
            return VERIFY_BAD;
        }
    }
    if (prepare_rows(v) != 0 ||
        sqlite3_prepare_v2(v->db, "SELECT count(*) FROM events WHERE id BETWEEN ?1 AND ?2", -1, &v->count,
                           NULL) != SQLITE_OK) {
        fprintf(stderr, PROG ": %s\n", sqlite3_errmsg(v->db));
        return VERIFY_USAGE;
    }
    bool chained_alerts = sqlutil_int(v->db, "SELECT count(*) FROM pragma_table_info('batches') WHERE"
                                             " name = 'first_alert_id'", 0) > 0;
    if (sqlutil_int(v->db, "SELECT count(*) FROM pragma_table_info('alerts') WHERE name = 'sealed'", 0) > 0 &&
        (sqlite3_prepare_v2(v->db, "SELECT id, event_id, rule, priority, time_ns, container_id, output, output_fields,"
                                   " tags, suppressed, sealed, evicted, sequence FROM alerts WHERE id BETWEEN ?1 AND ?2"
                                   " ORDER BY id", -1,
                            &v->alerts, NULL) != SQLITE_OK ||
         sqlite3_prepare_v2(v->db, "SELECT count(*), min(id) FROM alerts WHERE event_id BETWEEN ?1 AND ?2"
                                   " AND (id < ?3 OR id > ?4)", -1, &v->stray, NULL) != SQLITE_OK)) {
        fprintf(stderr, PROG ": %s\n", sqlite3_errmsg(v->db));
        return VERIFY_USAGE;
    }
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(v->db, chained_alerts ? "SELECT id, run_id, first_event_id, last_event_id, events,"
                                                   " committed_ns, prev_hash, hash, keyed, alerts, first_alert_id"
                                                   " FROM batches ORDER BY id"
                                                 : "SELECT id, run_id, first_event_id, last_event_id, events,"
                                                   " committed_ns, prev_hash, hash, keyed, NULL, NULL"
                                                   " FROM batches ORDER BY id", -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, PROG ": %s\n", sqlite3_errmsg(v->db));
        return VERIFY_USAGE;
    }
    struct batch_row rows[2], anchor;
    struct batch_row *prev = NULL;
    if (load_anchor(v->db, &anchor)) {
        prev = &anchor;
        printf("note: batches up to %" PRId64 " were deleted by retention; checking the chain from there\n",
               anchor.id);
    }
    int64_t nbatches = 0, nevents = 0;
    int rc = 0, step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        struct batch_row *b = &rows[nbatches & 1];
        if (!read_batch(st, b)) {
            char name[128];
            printf("%s: altered: a column of its batches row has the wrong type\n", label(b, name, sizeof(name)));
            rc = VERIFY_BAD;
            break;
        }
        if ((rc = check_batch(v, b, prev, keyed)) != 0)
            break;
        prev = b;
        nbatches++;
        nevents += b->events;
    }
    if (rc == 0 && step != SQLITE_DONE) {
        fprintf(stderr, PROG ": reading batches: %s\n", sqlite3_errmsg(v->db));
        rc = VERIFY_USAGE;
    }
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;

    /* Rows after the last batch: committed by nobody we know of, or by a
     * daemon that has not sealed them yet. Not a failure, but said. */
    int64_t last = prev ? prev->last : 0;
    int64_t unsealed = count_range(v, last + 1, INT64_MAX);
    if (unsealed < 0)
        return VERIFY_USAGE;
    if (unsealed > 0)
        printf("note: %" PRId64 " events after id %" PRId64 " are not yet sealed in the chain\n", unsealed, last);
    if (v->uncovered)
        printf("note: %" PRId64 " batch%s written before alerts were chained: %s alerts are not covered\n",
               v->uncovered, v->uncovered == 1 ? " was" : "es were", v->uncovered == 1 ? "its" : "their");
    if (v->alerts_altered) {
        if (v->alerts_altered > v->alerts_listed)
            printf("... and %" PRId64 " more altered alert%s\n", v->alerts_altered - v->alerts_listed,
                   cli_plural((uint64_t)(v->alerts_altered - v->alerts_listed)));
        printf("altered: %" PRId64 " alert%s with columns that differ from what was sealed (the chain verifies)\n",
               v->alerts_altered, cli_plural((uint64_t)v->alerts_altered));
    }
    if (v->altered) {
        if (v->altered > v->listed)
            printf("... and %" PRId64 " more altered event%s\n", v->altered - v->listed,
                   cli_plural((uint64_t)(v->altered - v->listed)));
        printf("altered: %" PRId64 " event%s with decoded columns that differ from the raw packet (the raw "
               "column and the chain verify: %" PRId64 " batch%s, %" PRId64 " event%s)\n", v->altered,
               cli_plural((uint64_t)v->altered), nbatches, nbatches == 1 ? "" : "es", nevents,
               cli_plural((uint64_t)nevents));
        return VERIFY_BAD;
    }
    if (v->alerts_altered)
        return VERIFY_BAD;
    if (v->hash_only)
        printf("note: --hash-only: the decoded columns and detail were not compared with raw\n");
    printf("ok: %" PRId64 " batch%s, %" PRId64 " event%s, %" PRId64 " alert%s verified\n", nbatches,
           nbatches == 1 ? "" : "es", nevents, cli_plural((uint64_t)nevents), v->alerts_verified,
           cli_plural((uint64_t)v->alerts_verified));
    if (prev) {
        char hex[2 * CHAIN_HASH_LEN + 1];
        to_hex(prev->hash, CHAIN_HASH_LEN, hex);
        printf("head: batch %" PRId64 " %s %s\n", prev->id, keyed ? "hmac-sha256" : "sha256", hex);
    }
    return 0;
}

int verify_main(int argc, char **argv)
{
    static const struct option options[] = {
        {"db", required_argument, NULL, 'd'},
        {"key-file", required_argument, NULL, 'k'},
        {"hash-only", no_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *db_path = NULL, *key_file = NULL;
    bool hash_only = false;
    int ch;
    optind = 0;   /* a fresh getopt scan, whatever ran before */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", options, NULL)) != -1) {
        switch (ch) {
        case 'd': db_path = optarg; break;
        case 'k': key_file = optarg; break;
        case 'H': hash_only = true; break;
        case 'h': usage(stdout); return VERIFY_OK;
        default:
            cli_report_getopt_error(PROG, ch, argv);
            return VERIFY_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, PROG ": unexpected argument '%s' (try --help)\n", argv[optind]);
        return VERIFY_USAGE;
    }
    if (!db_path) {
        fprintf(stderr, PROG ": --db PATH is required (try --help)\n");
        return VERIFY_USAGE;
    }

    char err[512];
    struct chain_key key = {.bytes = NULL};
    if (key_file && chain_key_load(key_file, &key, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return VERIFY_USAGE;
    }
    struct verifier v = {.hash_only = hash_only};
    int rc = VERIFY_USAGE;
    v.chain = chain_new(key_file ? &key : NULL, err, sizeof(err));
    if (!v.chain || event_redecoder_init(&v.redecoder, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        goto out;
    }
    if (db_file_check_readable(db_path, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        goto out;
    }
    if (sqlutil_open_reader(db_path, &v.db) != SQLITE_OK) {
        fprintf(stderr, PROG ": cannot open %s: %s\n", db_path, v.db ? sqlite3_errmsg(v.db) : "out of memory");
        goto out;
    }
    sqlite3_busy_timeout(v.db, 5000);
    /* One snapshot for the whole walk: batches and events agree even while
     * a daemon appends. */
    if (sqlite3_exec(v.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, PROG ": %s: %s\n", db_path, sqlite3_errmsg(v.db));
        goto out;
    }
    rc = verify_db(&v, key_file, key_file ? &key : NULL);
    sqlite3_exec(v.db, "COMMIT", NULL, NULL, NULL);
out:
    sqlite3_finalize(v.rows);
    sqlite3_finalize(v.count);
    sqlite3_finalize(v.alerts);
    sqlite3_finalize(v.stray);
    if (v.db)
        sqlite3_close(v.db);
    chain_free(v.chain);
    chain_key_free(&key);
    event_redecoder_free(&v.redecoder);
    return rc;
}
