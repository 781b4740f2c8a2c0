/* central_verify.c - `seccheckd verify --to URL --host-id ID`: recomputes a
 * host's batch chain from its central rows with chain.c, the code the
 * daemon writes it with, and names the first batch that does not verify.
 * Batches recorded in the gaps table (lost on the host before they were
 * shipped) are named and skipped: the chain resumes at their resume_hash.
 */
#include "central.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define PROG "seccheckd verify"
#define FETCH_BATCHES "1000"

enum { VERIFY_OK = 0, VERIFY_BAD = 1, VERIFY_USAGE = 2 };

static int64_t be64(const char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | (unsigned char)p[i];
    return (int64_t)v;
}

/* Binary int8 column, or 0 when NULL. */
static int64_t col_int(const PGresult *r, int row, int col, bool *null)
{
    bool is_null = PQgetisnull(r, row, col) || PQgetlength(r, row, col) != 8;
    if (null)
        *null = is_null;
    return is_null ? 0 : be64(PQgetvalue(r, row, col));
}

struct gap {
    int64_t first, last;
    uint8_t resume[CHAIN_HASH_LEN];
};

struct cverifier {
    PGconn *pg;
    const char *host;
    struct chain *chain;
    struct gap *gaps;
    int ngaps;
};

/* libpq's error as one line on stderr: "PROG: what: message". */
static void print_pg_error(PGconn *pg, const char *what)
{
    char line[1024];
    central_message_line(PQerrorMessage(pg), line, sizeof(line));
    fprintf(stderr, PROG ": %s%s%s\n", what, what[0] ? ": " : "", line);
}

static int load_gaps(struct cverifier *v)
{
    const char *p[] = {v->host};
    PGresult *r = PQexecParams(v->pg, "SELECT first_batch, last_batch, resume_hash FROM gaps WHERE host_id = $1"
                                      " ORDER BY first_batch", 1, NULL, p, NULL, NULL, 1);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        print_pg_error(v->pg, "reading gaps");
        PQclear(r);
        return -1;
    }
    v->ngaps = PQntuples(r);
    v->gaps = calloc((size_t)v->ngaps + 1, sizeof(*v->gaps));
    for (int i = 0; v->gaps && i < v->ngaps; i++) {
        v->gaps[i].first = col_int(r, i, 0, NULL);
        v->gaps[i].last = col_int(r, i, 1, NULL);
        if (PQgetlength(r, i, 2) == CHAIN_HASH_LEN)
            memcpy(v->gaps[i].resume, PQgetvalue(r, i, 2), CHAIN_HASH_LEN);
    }
    PQclear(r);
    return v->gaps ? 0 : -1;
}

/* Recomputes batch b's hash from its central events; *present: rows. */
static int recompute(struct cverifier *v, const struct local_batch *b, int64_t *present, uint8_t out[CHAIN_HASH_LEN])
{
    *present = 0;
    chain_begin(v->chain, b->prev);
    if (b->has_range && b->events > 0) {
        char lo[24], hi[24];
        snprintf(lo, sizeof(lo), "%" PRId64, b->first);
        snprintf(hi, sizeof(hi), "%" PRId64, b->last);
        const char *p[] = {v->host, lo, hi};
        PGresult *r = PQexecParams(v->pg, "SELECT id, conn_id, recv_ns, msg_type, raw FROM events"
                                          " WHERE host_id = $1 AND id BETWEEN $2 AND $3 ORDER BY id",
                                   3, NULL, p, NULL, NULL, 1);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            print_pg_error(v->pg, "reading events");
            PQclear(r);
            return -1;
        }
        for (int i = 0; i < PQntuples(r); i++) {
            struct chain_row row = {
                .id = col_int(r, i, 0, NULL), .conn_id = col_int(r, i, 1, NULL),
                .recv_ns = col_int(r, i, 2, NULL), .msg_type = col_int(r, i, 3, NULL),
                .raw = PQgetvalue(r, i, 4), .raw_len = (size_t)PQgetlength(r, i, 4),
            };
            chain_add_row(v->chain, &row);
        }
        *present = PQntuples(r);
        PQclear(r);
    }
    struct chain_batch cb = {.id = b->id, .run_id = b->run_id, .first_event_id = b->has_range ? b->first : 0,
                             .last_event_id = b->has_range ? b->last : 0, .events = b->events,
                             .committed_ns = b->committed_ns};
    return chain_finish(v->chain, &cb, out);
}

/* The gap starting at id, or NULL. */
static const struct gap *gap_at(const struct cverifier *v, int64_t id)
{
    for (int i = 0; i < v->ngaps; i++)
        if (v->gaps[i].first == id)
            return &v->gaps[i];
    return NULL;
}

/* Checks one batch after (prev_id, prev_hash). 0 or VERIFY_BAD (printed)
 * or VERIFY_USAGE. */
static int check(struct cverifier *v, const struct local_batch *b, int64_t *prev_id, uint8_t prev_hash[CHAIN_HASH_LEN],
                 bool keyed)
{
    const struct gap *g;
    while ((g = gap_at(v, *prev_id + 1)) != NULL && g->last >= g->first) {
        printf("note: batches %" PRId64 "..%" PRId64 " were lost on the host before they were shipped (gap)\n",
               g->first, g->last);
        *prev_id = g->last;
        memcpy(prev_hash, g->resume, CHAIN_HASH_LEN);
    }
    if (b->id != *prev_id + 1) {
        printf("batch %" PRId64 ": missing: batch %" PRId64 " follows batch %" PRId64 "\n", *prev_id + 1, b->id,
               *prev_id);
        return VERIFY_BAD;
    }
    if ((b->keyed != 0) != keyed) {
        printf("batch %" PRId64 ": %s\n", b->id, keyed ? "not keyed" : "chain is keyed: pass --key-file");
        return keyed ? VERIFY_BAD : VERIFY_USAGE;
    }
    if (memcmp(b->prev, prev_hash, CHAIN_HASH_LEN) != 0) {
        printf("batch %" PRId64 ": out of order: prev_hash does not match batch %" PRId64 "\n", b->id, *prev_id);
        return VERIFY_BAD;
    }
    int64_t present;
    uint8_t hash[CHAIN_HASH_LEN];
    if (recompute(v, b, &present, hash) != 0)
        return VERIFY_USAGE;
    if (present != b->events) {
        printf("batch %" PRId64 ": %s rows: %" PRId64 " events present where %" PRId64 " were sealed\n", b->id,
               present < b->events ? "deleted" : "inserted", present, b->events);
        return VERIFY_BAD;
    }
    if (memcmp(hash, b->hash, CHAIN_HASH_LEN) != 0) {
        printf("batch %" PRId64 ": altered: hash mismatch\n", b->id);
        return VERIFY_BAD;
    }
    *prev_id = b->id;
    memcpy(prev_hash, b->hash, CHAIN_HASH_LEN);
    return 0;
}

static void read_row(const PGresult *r, int i, struct local_batch *b)
{
    bool n2, n3;
    memset(b, 0, sizeof(*b));
    b->id = col_int(r, i, 0, NULL);
    b->run_id = col_int(r, i, 1, NULL);
    b->first = col_int(r, i, 2, &n2);
    b->last = col_int(r, i, 3, &n3);
    b->has_range = !n2 && !n3;
    b->events = col_int(r, i, 4, NULL);
    b->committed_ns = col_int(r, i, 5, NULL);
    if (PQgetlength(r, i, 6) == CHAIN_HASH_LEN)
        memcpy(b->prev, PQgetvalue(r, i, 6), CHAIN_HASH_LEN);
    if (PQgetlength(r, i, 7) == CHAIN_HASH_LEN)
        memcpy(b->hash, PQgetvalue(r, i, 7), CHAIN_HASH_LEN);
    b->keyed = col_int(r, i, 8, NULL);
}

static int walk(struct cverifier *v, bool keyed)
{
    const char *p[] = {v->host};
    PGresult *r = PQexecParams(v->pg,
                               "DECLARE chain CURSOR FOR SELECT id, run_id, first_event_id, last_event_id, events,"
                               " committed_ns, prev_hash, hash, keyed::bigint FROM batches WHERE host_id = $1"
                               " ORDER BY id", 1, NULL, p, NULL, NULL, 1);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        print_pg_error(v->pg, "reading batches");
        PQclear(r);
        return VERIFY_USAGE;
    }
    PQclear(r);
    int64_t prev_id = 0, nbatches = 0, nevents = 0;
    uint8_t prev_hash[CHAIN_HASH_LEN] = {0};
    int rc = 0;
    for (;;) {
        r = PQexecParams(v->pg, "FETCH " FETCH_BATCHES " FROM chain", 0, NULL, NULL, NULL, NULL, 1);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) {
            print_pg_error(v->pg, "reading batches");
            PQclear(r);
            return VERIFY_USAGE;
        }
        int n = PQntuples(r);
        for (int i = 0; i < n && rc == 0; i++) {
            struct local_batch b;
            read_row(r, i, &b);
            if ((rc = check(v, &b, &prev_id, prev_hash, keyed)) == 0) {
                nbatches++;
                nevents += b.events;
            }
        }
        PQclear(r);
        if (rc != 0 || n == 0)
            break;
    }
    if (rc != 0)
        return rc;
    if (nbatches == 0 && v->ngaps == 0) {
        printf("no batches for host %s in the central copy\n", v->host);
        return VERIFY_BAD;
    }
    r = PQexecParams(v->pg, "SELECT count(*) FROM events WHERE host_id = $1", 1, NULL, p, NULL, NULL, 1);
    int64_t stored = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? col_int(r, 0, 0, NULL) : -1;
    PQclear(r);
    if (stored != nevents) {
        printf("host %s: %" PRId64 " events stored centrally, %" PRId64 " sealed in its batches\n", v->host, stored,
               nevents);
        return VERIFY_BAD;
    }
    printf("ok: host %s: %" PRId64 " batches, %" PRId64 " events verified", v->host, nbatches, nevents);
    if (v->ngaps)
        printf(" (%d gaps recorded)", v->ngaps);
    printf("\n");
    return 0;
}

int central_verify_main(int argc, char **argv)
{
    static const struct option options[] = {
        {"to", required_argument, NULL, 't'},
        {"host-id", required_argument, NULL, 'H'},
        {"key-file", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *url = NULL, *host = NULL, *key_file = NULL;
    int ch;
    optind = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", options, NULL)) != -1) {
        switch (ch) {
        case 't': url = optarg; break;
        case 'H': host = optarg; break;
        case 'k': key_file = optarg; break;
        case 'h':
            printf("Usage: seccheckd verify --to URL --host-id ID [--key-file PATH]\n"
                   "Recomputes a host's batch chain from the central PostgreSQL copy (seccheckd forward).\n"
                   "Exit status: 0 the chain verifies, 1 a batch does not (printed), 2 usage error or the\n"
                   "central copy cannot be read.\n");
            return VERIFY_OK;
        default: cli_report_getopt_error(PROG, ch, argv); return VERIFY_USAGE;
        }
    }
    char err[512];
    if (optind < argc || !url || !host) {
        fprintf(stderr, PROG ": --to URL and --host-id ID are required (try --help)\n");
        return VERIFY_USAGE;
    }
    if (central_check_url(url, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return VERIFY_USAGE;
    }
    struct chain_key key = {.bytes = NULL};
    if (key_file && chain_key_load(key_file, &key, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s\n", err);
        return VERIFY_USAGE;
    }
    struct cverifier v = {.host = host};
    int rc = VERIFY_USAGE;
    v.chain = chain_new(key_file ? &key : NULL, err, sizeof(err));
    if (!v.chain || (v.pg = central_connect(url, err, sizeof(err))) == NULL) {
        fprintf(stderr, PROG ": %s\n", err);
        goto out;
    }
    /* One snapshot: batches and events agree while forwarders write. */
    PGresult *r = PQexec(v.pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    bool begun = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!begun)
        print_pg_error(v.pg, "");
    if (!begun || load_gaps(&v) != 0)   /* load_gaps said why */
        goto out;
    rc = walk(&v, key_file != NULL);
out:
    if (v.pg)
        PQfinish(v.pg);
    free(v.gaps);
    chain_free(v.chain);
    chain_key_free(&key);
    return rc;
}
