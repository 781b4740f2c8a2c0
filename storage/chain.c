/* chain.c - SHA-256 / HMAC-SHA256 over batches (see chain.h for the format). */
#include "chain.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "strbuf.h"

/* Versions the encoding: a future format must not verify as this one. */
static const char chain_tag[] = "seccheckd-chain1";
static const char key_id_label[] = "seccheckd chain key id v1";

struct chain {
    EVP_MD *md;                 /* unkeyed: SHA-256 */
    EVP_MD_CTX *md_ctx;
    EVP_MAC *mac;               /* keyed: HMAC-SHA256 */
    EVP_MAC_CTX *mac_ctx;
    unsigned char *key;
    size_t key_len;
    bool ok;                    /* no OpenSSL call failed since chain_begin */
};

const char *chain_openssl_error(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    if (e == 0)
        snprintf(buf, len, "unknown OpenSSL error");
    else
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

/* ---- key files ---- */

int chain_key_load(const char *path, struct chain_key *key, char *err, size_t errlen)
{
    memset(key, 0, sizeof(*key));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "key file %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "key file %s: not a regular file", path);
        close(fd);
        return -1;
    }
    if (st.st_size < CHAIN_KEY_MIN || st.st_size > CHAIN_KEY_MAX) {
        snprintf(err, errlen, "key file %s: %lld bytes; a key must be %d to %d bytes (e.g. head -c 32 /dev/urandom)",
                 path, (long long)st.st_size, CHAIN_KEY_MIN, CHAIN_KEY_MAX);
        close(fd);
        return -1;
    }
    size_t want = (size_t)st.st_size, got = 0;
    unsigned char *bytes = OPENSSL_secure_malloc(want);
    if (!bytes) {
        snprintf(err, errlen, "key file %s: out of memory", path);
        close(fd);
        return -1;
    }
    while (got < want) {
        ssize_t n = read(fd, bytes + got, want - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            snprintf(err, errlen, "key file %s: %s", path, n < 0 ? strerror(errno) : "changed size while being read");
            OPENSSL_secure_clear_free(bytes, want);
            close(fd);
            return -1;
        }
        got += (size_t)n;
    }
    close(fd);
    key->bytes = bytes;
    key->len = want;
    key->mode = st.st_mode & 07777;
    return 0;
}

void chain_key_free(struct chain_key *key)
{
    if (key->bytes)
        OPENSSL_secure_clear_free(key->bytes, key->len);
    memset(key, 0, sizeof(*key));
}

static void to_hex(const unsigned char *in, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * len] = '\0';
}

int chain_key_id(const struct chain_key *key, char out[CHAIN_KEY_ID_HEX])
{
    unsigned char mac[CHAIN_HASH_LEN];
    size_t mac_len = 0;
    if (!EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, key->bytes, key->len, (const unsigned char *)key_id_label,
                   sizeof(key_id_label) - 1, mac, sizeof(mac), &mac_len) ||
        mac_len != CHAIN_HASH_LEN)
        return -1;
    to_hex(mac, sizeof(mac), out);
    return 0;
}

/* ---- the chain ---- */

struct chain *chain_new(const struct chain_key *key, char *err, size_t errlen)
{
    char why[256];
    struct chain *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (key) {
        if (key->len < CHAIN_KEY_MIN) {
            snprintf(err, errlen, "key of %zu bytes is shorter than %d", key->len, CHAIN_KEY_MIN);
            free(c);
            return NULL;
        }
        c->key = OPENSSL_secure_malloc(key->len);
        if (!c->key) {
            snprintf(err, errlen, "out of memory");
            free(c);
            return NULL;
        }
        memcpy(c->key, key->bytes, key->len);
        c->key_len = key->len;
        c->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
        c->mac_ctx = c->mac ? EVP_MAC_CTX_new(c->mac) : NULL;
        if (!c->mac_ctx)
            goto fail;
    } else {
        c->md = EVP_MD_fetch(NULL, "SHA256", NULL);
        c->md_ctx = c->md ? EVP_MD_CTX_new() : NULL;
        if (!c->md_ctx)
            goto fail;
    }
    return c;
fail:
    snprintf(err, errlen, "OpenSSL: cannot set up %s: %s", key ? "HMAC-SHA256" : "SHA-256",
             chain_openssl_error(why, sizeof(why)));
    chain_free(c);
    return NULL;
}

void chain_free(struct chain *c)
{
    if (!c)
        return;
    EVP_MD_CTX_free(c->md_ctx);
    EVP_MD_free(c->md);
    EVP_MAC_CTX_free(c->mac_ctx);
    EVP_MAC_free(c->mac);
    if (c->key)
        OPENSSL_secure_clear_free(c->key, c->key_len);
    free(c);
}

bool chain_keyed(const struct chain *c) { return c->mac_ctx != NULL; }

static void update(struct chain *c, const void *data, size_t len)
{
    if (!c->ok || len == 0)
        return;
    int r = c->mac_ctx ? EVP_MAC_update(c->mac_ctx, data, len) : EVP_DigestUpdate(c->md_ctx, data, len);
    if (r != 1)
        c->ok = false;
}

static unsigned char *put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
    return p + 8;
}

int chain_begin(struct chain *c, const uint8_t prev[CHAIN_HASH_LEN])
{
    int r;
    if (c->mac_ctx) {
        char digest[] = "SHA256";
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
            OSSL_PARAM_construct_end(),
        };
        r = EVP_MAC_init(c->mac_ctx, c->key, c->key_len, params);
    } else {
        r = EVP_DigestInit_ex2(c->md_ctx, c->md, NULL);
    }
    c->ok = r == 1;
    update(c, chain_tag, sizeof(chain_tag) - 1);
    update(c, prev, CHAIN_HASH_LEN);
    return c->ok ? 0 : -1;
}

#define ROW_HEAD (1 + 5 * 8)

void chain_add_row(struct chain *c, const struct chain_row *r)
{
    /* One update per row when the packet is small (the common case). */
    unsigned char buf[256];
    unsigned char *p = buf;
    *p++ = 'R';
    p = put_le64(p, (uint64_t)r->id);
    p = put_le64(p, (uint64_t)r->conn_id);
    p = put_le64(p, (uint64_t)r->recv_ns);
    p = put_le64(p, (uint64_t)r->msg_type);
    p = put_le64(p, (uint64_t)r->raw_len);
    if (r->raw_len <= sizeof(buf) - ROW_HEAD) {
        if (r->raw_len)
            memcpy(p, r->raw, r->raw_len);
        update(c, buf, ROW_HEAD + r->raw_len);
    } else {
        update(c, buf, ROW_HEAD);
        update(c, r->raw, r->raw_len);
    }
}

void chain_add_alert(struct chain *c, const void *sealed, size_t len)
{
    unsigned char head[1 + 8];
    head[0] = 'A';
    put_le64(head + 1, (uint64_t)len);
    update(c, head, sizeof(head));
    update(c, sealed, len);
}

/* ---- an alert's sealed record ---- */

static void put_u64(struct strbuf *out, uint64_t v)
{
    unsigned char b[8];
    put_le64(b, v);
    strbuf_append(out, b, sizeof(b));
}

static void put_bytes(struct strbuf *out, const char *s, size_t len)
{
    put_u64(out, len);
    strbuf_append(out, s, len);
}

size_t chain_alert_encode(const struct chain_alert *a, struct strbuf *out)
{
    size_t start = out->len;
    strbuf_putc(out, 'S');
    put_u64(out, (uint64_t)a->event_id);
    put_u64(out, (uint64_t)a->time_ns);
    put_u64(out, (uint64_t)a->suppressed);
    put_bytes(out, a->rule, a->rule_len);
    put_bytes(out, a->priority, a->priority_len);
    if (a->container_id)
        put_bytes(out, a->container_id, a->container_id_len);
    else
        put_u64(out, UINT64_MAX);
    put_bytes(out, a->output, a->output_len);
    put_bytes(out, a->output_fields, a->output_fields_len);
    put_bytes(out, a->tags, a->tags_len);
    put_u64(out, (uint64_t)a->evicted);
    if (a->sequence)
        put_bytes(out, a->sequence, a->sequence_len);
    else
        put_u64(out, UINT64_MAX);
    return out->failed ? 0 : out->len - start;
}

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The next string at *p (below end): false when it does not fit. */
static bool take_bytes(const unsigned char **p, const unsigned char *end, const char **s, size_t *len, bool nullable)
{
    if (end - *p < 8)
        return false;
    uint64_t n = get_le64(*p);
    *p += 8;
    if (nullable && n == UINT64_MAX) {
        *s = NULL;
        *len = 0;
        return true;
    }
    if (n > (uint64_t)(end - *p))
        return false;
    *s = (const char *)*p;
    *len = (size_t)n;
    *p += n;
    return true;
}

int chain_alert_decode(const void *sealed, size_t len, struct chain_alert *out)
{
    memset(out, 0, sizeof(*out));
    const unsigned char *p = sealed, *end = p + len;
    if (!sealed || len < 1 + 3 * 8 || p[0] != 'S')
        return -1;
    p++;
    out->event_id = (int64_t)get_le64(p);
    out->time_ns = (int64_t)get_le64(p + 8);
    out->suppressed = (int64_t)get_le64(p + 16);
    p += 24;
    if (!take_bytes(&p, end, &out->rule, &out->rule_len, false) ||
        !take_bytes(&p, end, &out->priority, &out->priority_len, false) ||
        !take_bytes(&p, end, &out->container_id, &out->container_id_len, true) ||
        !take_bytes(&p, end, &out->output, &out->output_len, false) ||
        !take_bytes(&p, end, &out->output_fields, &out->output_fields_len, false) ||
        !take_bytes(&p, end, &out->tags, &out->tags_len, false) || end - p < 8)
        return -1;
    out->evicted = (int64_t)get_le64(p);
    p += 8;
    if (!take_bytes(&p, end, &out->sequence, &out->sequence_len, true))
        return -1;
    return p == end ? 0 : -1;
}

int chain_finish(struct chain *c, const struct chain_batch *b, uint8_t out[CHAIN_HASH_LEN])
{
    unsigned char buf[1 + 9 * 8];
    unsigned char *p = buf;
    *p++ = b->covers_alerts ? 'C' : 'B';
    p = put_le64(p, (uint64_t)b->id);
    p = put_le64(p, (uint64_t)b->run_id);
    p = put_le64(p, (uint64_t)b->first_event_id);
    p = put_le64(p, (uint64_t)b->last_event_id);
    p = put_le64(p, (uint64_t)b->events);
    p = put_le64(p, (uint64_t)b->committed_ns);
    p = put_le64(p, chain_keyed(c) ? 1 : 0);
    if (b->covers_alerts) {
        p = put_le64(p, (uint64_t)b->alerts);
        p = put_le64(p, (uint64_t)b->first_alert_id);
    }
    update(c, buf, (size_t)(p - buf));
    if (!c->ok)
        return -1;
    int r;
    if (c->mac_ctx) {
        size_t len = 0;
        r = EVP_MAC_final(c->mac_ctx, out, &len, CHAIN_HASH_LEN) == 1 && len == CHAIN_HASH_LEN;
    } else {
        unsigned int len = 0;
        r = EVP_DigestFinal_ex(c->md_ctx, out, &len) == 1 && len == CHAIN_HASH_LEN;
    }
    c->ok = false;   /* the next batch starts with chain_begin */
    return r ? 0 : -1;
}
