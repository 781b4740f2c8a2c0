/* test_chain.c - the tamper-evident batch chain (storage/chain.h): the
 * documented encoding, determinism, the key, key files; and the SQLite
 * sink's use of it (a batches row per batch, chained across runs, key rules
 * at open) checked with verify_main (query/verify.h). */
#include "unit_util.h"

#include <sys/stat.h>
#include <openssl/evp.h>
#include <sqlite3.h>

#include "batch.h"
#include "chain.h"
#include "sink.h"
#include "strbuf.h"
#include "verify.h"

/* ---- an independent encoder: the format as chain.h documents it ---- */

struct enc {
    uint8_t buf[8192];
    size_t len;
};

static void enc_bytes(struct enc *e, const void *p, size_t n)
{
    assert_true(e->len + n <= sizeof(e->buf));
    memcpy(e->buf + e->len, p, n);
    e->len += n;
}

static void enc_u64(struct enc *e, uint64_t v)
{
    uint8_t b[8];
    store_le64(b, v);
    enc_bytes(e, b, 8);
}

static void enc_row(struct enc *e, const struct chain_row *r)
{
    enc_bytes(e, "R", 1);
    enc_u64(e, (uint64_t)r->id);
    enc_u64(e, (uint64_t)r->conn_id);
    enc_u64(e, (uint64_t)r->recv_ns);
    enc_u64(e, (uint64_t)r->msg_type);
    enc_u64(e, r->raw_len);
    enc_bytes(e, r->raw, r->raw_len);
}

static void enc_trailer(struct enc *e, const struct chain_batch *b, bool keyed)
{
    enc_bytes(e, "B", 1);
    enc_u64(e, (uint64_t)b->id);
    enc_u64(e, (uint64_t)b->run_id);
    enc_u64(e, (uint64_t)b->first_event_id);
    enc_u64(e, (uint64_t)b->last_event_id);
    enc_u64(e, (uint64_t)b->events);
    enc_u64(e, (uint64_t)b->committed_ns);
    enc_u64(e, keyed ? 1 : 0);
}

/* ---- a fixed sample batch ---- */

static uint8_t small_raw[14] = {8, 0, 9, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6};
static uint8_t big_raw[1000];
static const uint8_t prev_sample[CHAIN_HASH_LEN] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
                                                    17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

struct sample {
    uint8_t prev[CHAIN_HASH_LEN];
    struct chain_row rows[3];
    size_t nrows;
    struct chain_batch batch;
};

static void sample_init(struct sample *s)
{
    for (size_t i = 0; i < sizeof(big_raw); i++)
        big_raw[i] = (uint8_t)(i * 7 + 3);
    memcpy(s->prev, prev_sample, CHAIN_HASH_LEN);
    s->rows[0] = (struct chain_row){.id = 41, .conn_id = 3, .recv_ns = 1000, .msg_type = 9, .raw = small_raw,
                                    .raw_len = sizeof(small_raw)};
    s->rows[1] = (struct chain_row){.id = 42, .conn_id = 3, .recv_ns = 1001, .msg_type = 11, .raw = big_raw,
                                    .raw_len = sizeof(big_raw)};
    s->rows[2] = (struct chain_row){.id = 43, .conn_id = 4, .recv_ns = 1002, .msg_type = 9, .raw = small_raw,
                                    .raw_len = 8};
    s->nrows = 3;
    s->batch = (struct chain_batch){.id = 7, .run_id = 2, .first_event_id = 41, .last_event_id = 43, .events = 3,
                                    .committed_ns = 123456789};
}

static void chain_hash(struct chain *c, const struct sample *s, uint8_t out[CHAIN_HASH_LEN])
{
    assert_int_equal(chain_begin(c, s->prev), 0);
    for (size_t i = 0; i < s->nrows; i++)
        chain_add_row(c, &s->rows[i]);
    assert_int_equal(chain_finish(c, &s->batch, out), 0);
}

static void expected_hash(const struct sample *s, const struct chain_key *key, uint8_t out[CHAIN_HASH_LEN])
{
    static struct enc e;
    e.len = 0;
    enc_bytes(&e, "seccheckd-chain1", 16);
    enc_bytes(&e, s->prev, CHAIN_HASH_LEN);
    for (size_t i = 0; i < s->nrows; i++)
        enc_row(&e, &s->rows[i]);
    enc_trailer(&e, &s->batch, key != NULL);
    if (key) {
        size_t len = 0;
        assert_non_null(EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key->bytes, key->len, e.buf, e.len, out,
                                  CHAIN_HASH_LEN, &len));
        assert_int_equal(len, CHAIN_HASH_LEN);
    } else {
        unsigned int len = 0;
        assert_int_equal(EVP_Digest(e.buf, e.len, out, &len, EVP_sha256(), NULL), 1);
        assert_int_equal(len, CHAIN_HASH_LEN);
    }
}

static struct chain *new_chain(const struct chain_key *key)
{
    char err[256];
    struct chain *c = chain_new(key, err, sizeof(err));
    if (!c)
        fail_msg("chain_new: %s", err);
    return c;
}

static uint8_t key_a_bytes[32] = "0123456789abcdef0123456789abcdef";
static uint8_t key_b_bytes[32] = "0123456789abcdef0123456789abcdeF";

/* ---- the hash ---- */

static void test_plain_is_documented_sha256(void **state)
{
    (void)state;
    struct sample s;
    sample_init(&s);
    struct chain *c = new_chain(NULL);
    assert_false(chain_keyed(c));
    uint8_t got[CHAIN_HASH_LEN], want[CHAIN_HASH_LEN];
    chain_hash(c, &s, got);
    expected_hash(&s, NULL, want);
    assert_memory_equal(got, want, CHAIN_HASH_LEN);
    chain_free(c);
}

static void test_deterministic_and_reusable(void **state)
{
    (void)state;
    struct sample s;
    sample_init(&s);
    struct chain *c1 = new_chain(NULL), *c2 = new_chain(NULL);
    uint8_t a[CHAIN_HASH_LEN], b[CHAIN_HASH_LEN], again[CHAIN_HASH_LEN];
    chain_hash(c1, &s, a);
    chain_hash(c2, &s, b);
    assert_memory_equal(a, b, CHAIN_HASH_LEN);
    /* the same context, batch after batch, even after an abandoned batch */
    assert_int_equal(chain_begin(c1, s.prev), 0);
    chain_add_row(c1, &s.rows[0]);
    chain_hash(c1, &s, again);
    assert_memory_equal(a, again, CHAIN_HASH_LEN);
    chain_free(c1);
    chain_free(c2);
}

/* Every input of the hash changes it. */
static void test_every_input_counts(void **state)
{
    (void)state;
    struct sample base;
    sample_init(&base);
    struct chain *c = new_chain(NULL);
    uint8_t ref[CHAIN_HASH_LEN], h[CHAIN_HASH_LEN];
    chain_hash(c, &base, ref);
    uint8_t raw_copy[sizeof(small_raw)];
    memcpy(raw_copy, small_raw, sizeof(raw_copy));
    for (int change = 0; change < 16; change++) {
        struct sample s = base;
        switch (change) {
        case 0: s.prev[31] ^= 1; break;
        case 1: s.rows[0].id++; break;
        case 2: s.rows[0].conn_id++; break;
        case 3: s.rows[1].recv_ns++; break;
        case 4: s.rows[2].msg_type = 10; break;
        case 5: raw_copy[13] ^= 0x80; s.rows[0].raw = raw_copy; break;
        case 6: s.rows[0].raw_len--; break;
        case 7: { struct chain_row t = s.rows[0]; s.rows[0] = s.rows[2]; s.rows[2] = t; break; }   /* reordered */
        case 8: s.nrows = 2; break;                                                              /* deleted */
        case 9: s.batch.id++; break;
        case 10: s.batch.run_id++; break;
        case 11: s.batch.first_event_id--; break;
        case 12: s.batch.last_event_id++; break;
        case 13: s.batch.events--; break;
        case 14: s.batch.committed_ns++; break;
        case 15: memset(s.prev, 0, sizeof(s.prev)); break;
        }
        chain_hash(c, &s, h);
        if (memcmp(h, ref, CHAIN_HASH_LEN) == 0)
            fail_msg("change %d did not change the hash", change);
    }
    chain_free(c);
}

static void test_key_changes_the_hash(void **state)
{
    (void)state;
    struct sample s;
    sample_init(&s);
    struct chain_key ka = {.bytes = key_a_bytes, .len = sizeof(key_a_bytes)};
    struct chain_key kb = {.bytes = key_b_bytes, .len = sizeof(key_b_bytes)};
    struct chain *plain = new_chain(NULL), *a = new_chain(&ka), *a2 = new_chain(&ka), *b = new_chain(&kb);
    assert_true(chain_keyed(a));
    uint8_t hp[CHAIN_HASH_LEN], ha[CHAIN_HASH_LEN], ha2[CHAIN_HASH_LEN], hb[CHAIN_HASH_LEN], want[CHAIN_HASH_LEN];
    chain_hash(plain, &s, hp);
    chain_hash(a, &s, ha);
    chain_hash(a2, &s, ha2);
    chain_hash(b, &s, hb);
    assert_memory_equal(ha, ha2, CHAIN_HASH_LEN);             /* same key, same hash */
    assert_memory_not_equal(ha, hb, CHAIN_HASH_LEN);          /* one bit of key */
    assert_memory_not_equal(ha, hp, CHAIN_HASH_LEN);
    expected_hash(&s, &ka, want);                             /* documented: HMAC-SHA256 */
    assert_memory_equal(ha, want, CHAIN_HASH_LEN);
    chain_hash(a, &s, ha2);                                   /* keyed context reused */
    assert_memory_equal(ha, ha2, CHAIN_HASH_LEN);

    char ida[CHAIN_KEY_ID_HEX], ida2[CHAIN_KEY_ID_HEX], idb[CHAIN_KEY_ID_HEX];
    assert_int_equal(chain_key_id(&ka, ida), 0);
    assert_int_equal(chain_key_id(&ka, ida2), 0);
    assert_int_equal(chain_key_id(&kb, idb), 0);
    assert_int_equal(strlen(ida), 64);
    assert_string_equal(ida, ida2);
    assert_string_not_equal(ida, idb);

    struct chain_key short_key = {.bytes = key_a_bytes, .len = CHAIN_KEY_MIN - 1};
    char err[256];
    assert_null(chain_new(&short_key, err, sizeof(err)));
    chain_free(plain);
    chain_free(a);
    chain_free(a2);
    chain_free(b);
}

/* ---- key files ---- */

static void assert_key_refused(const char *path, const char *why)
{
    struct chain_key k;
    char err[512] = "";
    assert_int_equal(chain_key_load(path, &k, err, sizeof(err)), -1);
    assert_null(k.bytes);
    if (!strstr(err, path) || !strstr(err, why))
        fail_msg("error for %s should name it and say '%s': %s", path, why, err);
}

static void test_key_files(void **state)
{
    (void)state;
    char good[64], shortk[64], empty[64], big[64], dir[64];
    scratch_file(good, key_a_bytes, CHAIN_KEY_MIN);
    scratch_file(shortk, key_a_bytes, CHAIN_KEY_MIN - 1);
    scratch_file(empty, "", 0);
    uint8_t *large = calloc(1, CHAIN_KEY_MAX + 1);
    assert_non_null(large);
    scratch_file(big, large, CHAIN_KEY_MAX + 1);
    free(large);
    scratch_dir(dir);

    struct chain_key k;
    char err[512];
    assert_int_equal(chain_key_load(good, &k, err, sizeof(err)), 0);
    assert_int_equal(k.len, CHAIN_KEY_MIN);
    assert_memory_equal(k.bytes, key_a_bytes, CHAIN_KEY_MIN);
    assert_int_equal(k.mode & 077, 0);   /* mkstemp: 0600 */
    chain_key_free(&k);
    assert_null(k.bytes);
    chain_key_free(&k);                  /* twice is harmless */

    assert_key_refused(shortk, "15 bytes");
    assert_key_refused(empty, "0 bytes");
    assert_key_refused(big, "bytes");
    assert_key_refused(dir, "not a regular file");
    assert_key_refused("/nonexistent/seccheckd.key", "No such file");

    unlink(good);
    unlink(shortk);
    unlink(empty);
    unlink(big);
    rmdir(dir);
}

/* ---- the SQLite sink writes the chain; verify_main checks it ---- */

static struct sink *open_sink(const char *db, const char *key_file)
{
    struct sink_sqlite_options o = {.path = db, .busy_timeout_ms = 1000, .key_file = key_file};
    char err[512];
    struct sink *s = sink_sqlite_open(&o, err, sizeof(err));
    if (!s)
        fail_msg("sink_sqlite_open(%s): %s", db, err);
    return s;
}

/* Writes nbatches batches of n unknown-type events (stored raw) on conn. */
static void write_batches(struct sink *s, int nbatches, size_t n, uint64_t conn)
{
    struct batch_limits lim = {.max_events = n + 1, .max_bytes = 1 << 20};
    struct batch *b = batch_new(&lim);
    assert_non_null(b);
    for (int k = 0; k < nbatches; k++) {
        for (size_t i = 0; i < n; i++) {
            uint8_t pkt[64], payload[4] = {(uint8_t)k, (uint8_t)i, 0x5a, 0xa5};
            size_t len = make_packet(pkt, 50, 0, payload, sizeof(payload));
            struct event *ev = batch_push(b, pkt, len);
            assert_non_null(ev);
            ev->conn_id = conn;
            ev->recv_ns = 1000 * k + (int64_t)i;
            ev->header.message_type = 50;
            ev->status = DECODE_UNKNOWN_TYPE;
            ev->msg = NULL;
            ev->context = NULL;
            ev->has_sysno = false;
        }
        b->counts.received = n;
        b->counts.decode[DECODE_UNKNOWN_TYPE] = n;
        sink_write_batch(s, b);
        assert_int_equal(b->result.stored, n);
        batch_reset(b);
    }
    /* a batch with only a connection update: no batches row */
    struct conn_record rec = {.id = conn, .connect_ns = 1, .close_ns = 2, .client_version = 1};
    snprintf(rec.close_reason, sizeof(rec.close_reason), "eof");
    assert_int_equal(batch_add_conn(b, &rec), 0);
    sink_write_batch(s, b);
    batch_free(b);
}

static int verify(const char *db, const char *key_file)
{
    const char *argv[6] = {"verify", "--db", db, NULL, NULL, NULL};
    int argc = 3;
    if (key_file) {
        argv[argc++] = "--key-file";
        argv[argc++] = key_file;
    }
    fflush(stdout);
    return verify_main(argc, (char **)argv);
}

static long long q(const char *db, const char *sql)
{
    sqlite3 *h;
    assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
        fail_msg("%s: %s", sql, sqlite3_errmsg(h));
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

static void exec(const char *db, const char *sql)
{
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(h, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
    sqlite3_close(h);
}

static void test_sink_writes_a_chain_across_runs(void **state)
{
    (void)state;
    char dir[64], db[128];
    scratch_dir(dir);
    snprintf(db, sizeof(db), "%s/chain.db", dir);

    struct sink *s = open_sink(db, NULL);
    write_batches(s, 3, 10, s->first_conn_id);
    sink_finish(s, 1);
    sink_close(s);
    assert_int_equal(q(db, "SELECT count(*) FROM batches"), 3);
    assert_int_equal(q(db, "SELECT count(*) FROM batches WHERE events=10 AND last_event_id-first_event_id=9 "
                           "AND keyed=0 AND length(hash)=32 AND run_id=1"), 3);
    assert_int_equal(q(db, "SELECT prev_hash=zeroblob(32) FROM batches WHERE id=1"), 1);
    assert_int_equal(q(db, "SELECT count(*) FROM batches b JOIN batches p ON p.id=b.id-1 "
                           "WHERE b.prev_hash=p.hash AND b.first_event_id=p.last_event_id+1"), 2);
    assert_int_equal(verify(db, NULL), 0);

    /* a second run continues the chain */
    s = open_sink(db, NULL);
    write_batches(s, 2, 7, s->first_conn_id);
    sink_finish(s, 2);
    sink_close(s);
    assert_int_equal(q(db, "SELECT count(*) FROM batches"), 5);
    assert_int_equal(q(db, "SELECT count(*) FROM batches WHERE run_id=2"), 2);
    assert_int_equal(q(db, "SELECT b.prev_hash=p.hash FROM batches b, batches p WHERE b.id=4 AND p.id=3"), 1);
    assert_int_equal(verify(db, NULL), 0);

    /* one changed byte of one raw packet */
    exec(db, "UPDATE events SET raw=zeroblob(12) WHERE id=35");
    assert_int_equal(verify(db, NULL), 1);
    /* usage errors */
    const char *none[] = {"verify"};
    assert_int_equal(verify_main(1, (char **)none), 2);
    const char *extra[] = {"verify", "--db", db, "surplus"};
    assert_int_equal(verify_main(4, (char **)extra), 2);
    const char *help[] = {"verify", "--help"};
    assert_int_equal(verify_main(2, (char **)help), 0);
    assert_int_equal(verify("/nonexistent/x.db", NULL), 2);
    scratch_dir_remove(dir);
}

static void assert_open_refused(const char *db, const char *key_file, const char *why)
{
    struct sink_sqlite_options o = {.path = db, .busy_timeout_ms = 1000, .key_file = key_file};
    char err[512] = "";
    long long runs = q(db, "SELECT count(*) FROM runs");
    struct sink *s = sink_sqlite_open(&o, err, sizeof(err));
    if (s) {
        sink_close(s);
        fail_msg("sink_sqlite_open(%s, key %s) should fail with '%s'", db, key_file ? key_file : "none", why);
    }
    if (!strstr(err, why))
        fail_msg("expected '%s' in: %s", why, err);
    assert_int_equal(q(db, "SELECT count(*) FROM runs"), runs);   /* no run row left behind */
}

static void test_sink_key_rules(void **state)
{
    (void)state;
    char dir[64], keyed_db[128], plain_db[128], key_a[128], key_b[128], key_short[128];
    scratch_dir(dir);
    snprintf(keyed_db, sizeof(keyed_db), "%s/keyed.db", dir);
    snprintf(plain_db, sizeof(plain_db), "%s/plain.db", dir);
    snprintf(key_a, sizeof(key_a), "%s/a.key", dir);
    snprintf(key_b, sizeof(key_b), "%s/b.key", dir);
    snprintf(key_short, sizeof(key_short), "%s/short.key", dir);
    FILE *f = fopen(key_a, "wb");
    fwrite(key_a_bytes, 1, sizeof(key_a_bytes), f);
    fclose(f);
    f = fopen(key_b, "wb");
    fwrite(key_b_bytes, 1, sizeof(key_b_bytes), f);
    fclose(f);
    f = fopen(key_short, "wb");
    fwrite("tooshort", 1, 8, f);
    fclose(f);

    /* a bad key file: refused before the database is touched, file named */
    struct sink_sqlite_options o = {.path = keyed_db, .busy_timeout_ms = 1000, .key_file = key_short};
    char err[512] = "";
    assert_null(sink_sqlite_open(&o, err, sizeof(err)));
    assert_non_null(strstr(err, key_short));
    assert_int_equal(access(keyed_db, F_OK), -1);

    struct sink *s = open_sink(keyed_db, key_a);
    write_batches(s, 2, 5, s->first_conn_id);
    sink_close(s);
    assert_int_equal(q(keyed_db, "SELECT count(*) FROM batches WHERE keyed=1"), 2);
    assert_int_equal(verify(keyed_db, key_a), 0);
    assert_int_equal(verify(keyed_db, key_b), 1);      /* wrong key */
    assert_int_equal(verify(keyed_db, NULL), 2);       /* keyed: needs the key */

    assert_open_refused(keyed_db, NULL, "keyed: pass the --key-file");
    assert_open_refused(keyed_db, key_b, "is not the key");
    s = open_sink(keyed_db, key_a);                    /* the right key goes on */
    write_batches(s, 1, 5, s->first_conn_id);
    sink_close(s);
    assert_int_equal(verify(keyed_db, key_a), 0);

    s = open_sink(plain_db, NULL);
    write_batches(s, 1, 5, s->first_conn_id);
    sink_close(s);
    assert_open_refused(plain_db, key_a, "not keyed");
    assert_int_equal(verify(plain_db, key_a), 1);      /* a plain chain is not what the key holder expects */
    assert_int_equal(verify(plain_db, NULL), 0);
    scratch_dir_remove(dir);
}

/* ---- alerts (issue 31 item 7) ---- */

/* The sealed record as chain.h documents it, encoded here independently. */
static void enc_str(struct enc *e, const char *s, size_t n)
{
    enc_u64(e, n);
    enc_bytes(e, s, n);
}

static const char out_nul[] = "cat read /etc/shadow \0 (NUL and all)";

static void enc_sealed(struct enc *e, bool with_container)
{
    enc_bytes(e, "S", 1);
    enc_u64(e, 42);            /* event_id */
    enc_u64(e, 1700000000);    /* time_ns */
    enc_u64(e, 3);             /* suppressed */
    enc_str(e, "Shadow read", 11);
    enc_str(e, "Warning", 7);
    if (with_container)
        enc_str(e, "c1", 2);
    else
        enc_u64(e, UINT64_MAX);
    enc_str(e, out_nul, sizeof(out_nul) - 1);
    enc_str(e, "{\"a\":1}", 7);
    enc_str(e, "[\"t\"]", 5);
    /* evicted, then sequence (a sequence's alert: the first sample) */
    enc_u64(e, with_container ? 5 : 0);
    if (with_container)
        enc_str(e, "{\"steps\":[]}", 12);
    else
        enc_u64(e, UINT64_MAX);
}

static struct chain_alert sample_alert(bool with_container)
{
    return (struct chain_alert){.event_id = 42, .time_ns = 1700000000, .suppressed = 3, .rule = "Shadow read",
                                .rule_len = 11, .priority = "Warning", .priority_len = 7,
                                .container_id = with_container ? "c1" : NULL,
                                .container_id_len = with_container ? 2 : 0,
                                .output = out_nul, .output_len = sizeof(out_nul) - 1, .output_fields = "{\"a\":1}",
                                .output_fields_len = 7, .tags = "[\"t\"]", .tags_len = 5,
                                .evicted = with_container ? 5 : 0, .sequence = with_container ? "{\"steps\":[]}" : NULL,
                                .sequence_len = with_container ? 12 : 0};
}

static void test_alert_record_and_hash_as_documented(void **state)
{
    (void)state;
    struct strbuf rec = {0};
    struct chain_alert a = sample_alert(true), b = sample_alert(false);
    size_t la = chain_alert_encode(&a, &rec);
    size_t lb = chain_alert_encode(&b, &rec);
    static struct enc e;
    e.len = 0;
    enc_sealed(&e, true);
    assert_int_equal(la, e.len);
    assert_memory_equal(rec.data, e.buf, e.len);
    e.len = 0;
    enc_sealed(&e, false);
    assert_int_equal(lb, e.len);
    assert_memory_equal(rec.data + la, e.buf, e.len);
    /* it decodes to what was sealed, NULL container included */
    struct chain_alert d;
    assert_int_equal(chain_alert_decode(rec.data, la, &d), 0);
    assert_int_equal(d.event_id, 42);
    assert_int_equal(d.suppressed, 3);
    assert_int_equal(d.output_len, sizeof(out_nul) - 1);
    assert_memory_equal(d.output, out_nul, d.output_len);
    assert_int_equal(d.container_id_len, 2);
    assert_int_equal(d.evicted, 5);
    assert_int_equal(d.sequence_len, 12);
    assert_memory_equal(d.sequence, "{\"steps\":[]}", 12);
    assert_int_equal(chain_alert_decode(rec.data + la, lb, &d), 0);
    assert_null(d.container_id);
    assert_null(d.sequence);

    /* the hash: rows, then 'A' len sealed per alert, then the 'C' trailer */
    struct sample smp;
    sample_init(&smp);
    smp.batch.covers_alerts = true;
    smp.batch.alerts = 2;
    smp.batch.first_alert_id = 9;
    struct chain *c = new_chain(NULL);
    uint8_t got[CHAIN_HASH_LEN], want[CHAIN_HASH_LEN];
    assert_int_equal(chain_begin(c, smp.prev), 0);
    for (size_t i = 0; i < smp.nrows; i++)
        chain_add_row(c, &smp.rows[i]);
    chain_add_alert(c, rec.data, la);
    chain_add_alert(c, rec.data + la, lb);
    assert_int_equal(chain_finish(c, &smp.batch, got), 0);
    e.len = 0;
    enc_bytes(&e, "seccheckd-chain1", 16);
    enc_bytes(&e, smp.prev, CHAIN_HASH_LEN);
    for (size_t i = 0; i < smp.nrows; i++)
        enc_row(&e, &smp.rows[i]);
    enc_bytes(&e, "A", 1);
    enc_str(&e, rec.data, la);
    enc_bytes(&e, "A", 1);
    enc_str(&e, rec.data + la, lb);
    enc_bytes(&e, "C", 1);
    enc_u64(&e, 7);
    enc_u64(&e, 2);
    enc_u64(&e, 41);
    enc_u64(&e, 43);
    enc_u64(&e, 3);
    enc_u64(&e, 123456789);
    enc_u64(&e, 0);
    enc_u64(&e, 2);
    enc_u64(&e, 9);
    unsigned int len = 0;
    assert_int_equal(EVP_Digest(e.buf, e.len, want, &len, EVP_sha256(), NULL), 1);
    assert_memory_equal(got, want, CHAIN_HASH_LEN);

    /* every alert input counts; a batch that covers no alert is not one
     * written before alerts were chained (its hash cannot pass as one) */
    uint8_t h[CHAIN_HASH_LEN];
    for (int change = 0; change < 6; change++) {
        struct chain_batch bt = smp.batch;
        assert_int_equal(chain_begin(c, smp.prev), 0);
        for (size_t i = 0; i < smp.nrows; i++)
            chain_add_row(c, &smp.rows[i]);
        if (change == 0) {   /* reordered */
            chain_add_alert(c, rec.data + la, lb);
            chain_add_alert(c, rec.data, la);
        } else if (change == 1) {   /* one deleted, count kept */
            chain_add_alert(c, rec.data, la);
        } else {
            chain_add_alert(c, rec.data, la);
            chain_add_alert(c, rec.data + la, lb);
        }
        if (change == 2)
            bt.alerts = 3;
        if (change == 3)
            bt.first_alert_id = 10;
        if (change == 4)
            bt.covers_alerts = false;
        if (change == 5) {   /* the byte after the first record's tag */
            rec.data[1] ^= 1;
            assert_int_equal(chain_begin(c, smp.prev), 0);
            for (size_t i = 0; i < smp.nrows; i++)
                chain_add_row(c, &smp.rows[i]);
            chain_add_alert(c, rec.data, la);
            chain_add_alert(c, rec.data + la, lb);
            rec.data[1] ^= 1;
        }
        assert_int_equal(chain_finish(c, &bt, h), 0);
        if (memcmp(h, got, CHAIN_HASH_LEN) == 0)
            fail_msg("alert change %d did not change the hash", change);
    }
    struct sample none;
    sample_init(&none);
    uint8_t legacy[CHAIN_HASH_LEN], covered[CHAIN_HASH_LEN];
    chain_hash(c, &none, legacy);
    none.batch.covers_alerts = true;
    chain_hash(c, &none, covered);
    assert_memory_not_equal(legacy, covered, CHAIN_HASH_LEN);
    chain_free(c);
    strbuf_free(&rec);
}

/* A stored sealed record is untrusted: every cut, a length past the end,
 * a byte too many, another tag: refused. */
static void test_alert_record_refused(void **state)
{
    (void)state;
    struct strbuf rec = {0};
    struct chain_alert a = sample_alert(true), d;
    size_t len = chain_alert_encode(&a, &rec);
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(chain_alert_decode(rec.data, cut, &d), -1);
    strbuf_putc(&rec, 'x');
    assert_int_equal(chain_alert_decode(rec.data, len + 1, &d), -1);
    rec.data[0] = 'R';
    assert_int_equal(chain_alert_decode(rec.data, len, &d), -1);
    rec.data[0] = 'S';
    memset(rec.data + 25, 0xff, 7);   /* the rule's length: past the end */
    assert_int_equal(chain_alert_decode(rec.data, len, &d), -1);
    assert_int_equal(chain_alert_decode(NULL, 0, &d), -1);
    strbuf_free(&rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_is_documented_sha256),
        cmocka_unit_test(test_deterministic_and_reusable),
        cmocka_unit_test(test_every_input_counts),
        cmocka_unit_test(test_key_changes_the_hash),
        cmocka_unit_test(test_key_files),
        cmocka_unit_test(test_sink_writes_a_chain_across_runs),
        cmocka_unit_test(test_sink_key_rules),
        cmocka_unit_test(test_alert_record_and_hash_as_documented),
        cmocka_unit_test(test_alert_record_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
