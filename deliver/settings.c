/* settings.c - the receiver's URL, CA file and header file, checked the
 * way a request would use them, so a mistake is refused when the settings
 * are given (start: exit 2; SIGHUP: the running ones stay) instead of
 * failing every request later. */
#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "alert_outbox.h"
#include "log.h"

#define HEADER_FILE_MAX_BYTES (64u << 10)
#define HEADERS_MAX 64
#define CA_FILE_MAX_BYTES (16u << 20)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int deliver_curl_init(char *err, size_t errlen)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc == CURLE_OK)
        return 0;
    snprintf(err, errlen, "libcurl cannot start: %s", curl_easy_strerror(curl_init_rc));
    return -1;
}

/* ---- the URL ---- */

static bool has_control_or_space(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == 0x7f)
            return true;
    return false;
}

/* The URL's path and query never appear in an error or the log: webhook
 * URLs often carry their token there. what names where it came from
 * ("--alerts-url", or "--alerts-url-file FILE"). */
static int check_url(struct deliver_settings *s, const char *what, const char *url, char *err, size_t errlen)
{
    if (strlen(url) >= ALERT_OUTBOX_TARGET_MAX || has_control_or_space(url)) {
        snprintf(err, errlen, "%s: expected a URL of at most %d bytes without spaces or control characters", what,
                 ALERT_OUTBOX_TARGET_MAX - 1);
        return -1;
    }
    CURLU *h = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *user = NULL;
    int rc = -1;
    CURLUcode uc = h ? curl_url_set(h, CURLUPART_URL, url, 0) : CURLUE_OUT_OF_MEMORY;
    if (uc != CURLUE_OK) {
        snprintf(err, errlen, "%s: not a URL (%s); expected http://HOST[:PORT]/PATH or https://...", what,
                 curl_url_strerror(uc));
    } else if (curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
               (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
        snprintf(err, errlen, "%s: expected an http:// or https:// URL, got scheme '%s'", what,
                 scheme ? scheme : "");
    } else if (curl_url_get(h, CURLUPART_USER, &user, 0) == CURLUE_OK) {
        snprintf(err, errlen, "%s: no credentials in the URL (they would be stored and logged with it): put an "
                 "Authorization header in --alerts-header-file", what);
    } else if (curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0] ||
               curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        snprintf(err, errlen, "%s: the URL names no host", what);
    } else {
        size_t n = strlen(scheme) + strlen(host) + strlen(port) + 8;
        s->origin = malloc(n);
        s->url = strdup(url);
        if (s->origin && s->url) {
            snprintf(s->origin, n, "%s://%s:%s", scheme, host, port);
            rc = 0;
        } else {
            snprintf(err, errlen, "%s: out of memory", what);
        }
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(user);
    curl_url_cleanup(h);
    return rc;
}

/* ---- files ---- */

/* Opens path for reading as a regular file of at most max bytes: the fd,
 * or -1 with "OPTION: cannot read PATH: why" in err. */
static int open_small_file(const char *option, const char *path, size_t max, struct stat *st, char *err,
                           size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    const char *why = NULL;
    if (fd < 0 || fstat(fd, st) != 0)
        why = strerror(errno);
    else if (!S_ISREG(st->st_mode))
        why = "not a regular file";
    else if ((uint64_t)st->st_size > max)
        why = "too large";
    if (!why)
        return fd;
    snprintf(err, errlen, "%s: cannot read %s: %s", option, path, why);
    if (fd >= 0)
        close(fd);
    return -1;
}

/* At least one PEM certificate, as libcurl (OpenSSL) will read it. */
static int check_ca_file(const char *path, char *err, size_t errlen)
{
    struct stat st;
    int fd = open_small_file("--alerts-ca", path, CA_FILE_MAX_BYTES, &st, err, errlen);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        snprintf(err, errlen, "--alerts-ca: cannot read %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    int certs = 0;
    X509 *x;
    while ((x = PEM_read_X509(f, NULL, NULL, NULL)) != NULL) {
        certs++;
        X509_free(x);
    }
    ERR_clear_error();   /* the read past the last certificate */
    fclose(f);
    if (certs > 0)
        return 0;
    snprintf(err, errlen, "--alerts-ca: %s holds no PEM certificate (-----BEGIN CERTIFICATE-----)", path);
    return -1;
}

/* RFC 9110's token characters: a header name. */
static bool is_tchar(unsigned char c)
{
    return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Set by seccheckd or libcurl for every request: a second one would
 * corrupt the framing or the connection. */
static bool reserved_header(const char *name, size_t len)
{
    static const char *const reserved[] = {"host", "content-length", "transfer-encoding", "connection", "expect"};
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strlen(reserved[i]) == len && strncasecmp(name, reserved[i], len) == 0)
            return true;
    return false;
}

static char *trim(char *s, char *end)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        *--end = '\0';
    return s;
}

/* One "Name: value" line into the list; 0, or -1 with err. */
static int add_header_line(struct deliver_settings *s, const char *path, int lineno, char *line, bool *has_type,
                           int *count, char *err, size_t errlen)
{
    char *end = line + strlen(line);
    line = trim(line, end);
    if (!*line || *line == '#')
        return 0;
    char *colon = strchr(line, ':');
    size_t name_len = colon ? (size_t)(colon - line) : 0;
    for (size_t i = 0; i < name_len; i++)
        if (!is_tchar((unsigned char)line[i]))
            name_len = 0;
    if (!name_len) {
        snprintf(err, errlen, "--alerts-header-file: %s:%d: expected 'Name: value'", path, lineno);
        return -1;
    }
    if (reserved_header(line, name_len)) {
        snprintf(err, errlen, "--alerts-header-file: %s:%d: %.*s is set by seccheckd for every request", path,
                 lineno, (int)name_len, line);
        return -1;
    }
    char *value = trim(colon + 1, line + strlen(line));
    for (const char *p = value; *p; p++)
        if (((unsigned char)*p < ' ' && *p != '\t') || *p == 0x7f) {
            snprintf(err, errlen, "--alerts-header-file: %s:%d: the value holds a control character", path, lineno);
            return -1;
        }
    if (++*count > HEADERS_MAX) {
        snprintf(err, errlen, "--alerts-header-file: %s: more than %d headers", path, HEADERS_MAX);
        return -1;
    }
    *has_type |= name_len == 12 && strncasecmp(line, "content-type", 12) == 0;
    /* libcurl drops "Name:" with nothing after it; "Name;" sends it empty. */
    char header[HEADER_FILE_MAX_BYTES + 2];
    snprintf(header, sizeof(header), "%.*s%s%s", (int)name_len, line, *value ? ": " : ";", value);
    struct curl_slist *l = curl_slist_append(s->headers, header);
    if (!l) {
        snprintf(err, errlen, "--alerts-header-file: out of memory");
        return -1;
    }
    s->headers = l;
    return 0;
}

/* The header file: "Name: value" lines, blank lines and # comments. The
 * values (tokens) are never logged. */
static int load_header_file(struct deliver_settings *s, const char *path, bool *has_type, char *err, size_t errlen)
{
    struct stat st;
    int fd = open_small_file("--alerts-header-file", path, HEADER_FILE_MAX_BYTES, &st, err, errlen);
    if (fd < 0)
        return -1;
    static char text[HEADER_FILE_MAX_BYTES + 1];   /* loaded on one thread at a time (start, SIGHUP) */
    ssize_t n = read(fd, text, HEADER_FILE_MAX_BYTES);
    int saved = errno;
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "--alerts-header-file: cannot read %s: %s", path, strerror(saved));
        return -1;
    }
    text[n] = '\0';
    if (memchr(text, '\0', (size_t)n)) {
        snprintf(err, errlen, "--alerts-header-file: %s holds a NUL byte: not a text file", path);
        return -1;
    }
    if (st.st_mode & 077)
        log_warn("alerts: header file %s can be read by other users (mode %04o): chmod 600 it if it holds a token",
                 path, (unsigned)(st.st_mode & 07777));
    int lineno = 0, count = 0;
    for (char *line = text; line; lineno++) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (add_header_line(s, path, lineno + 1, line, has_type, &count, err, errlen) != 0)
            return -1;
        line = next;
    }
    return 0;
}

/* The URL file: its first line that is not blank or a # comment, trimmed.
 * Nothing of it is ever shown (a token may be in the URL); errors name the
 * file. 0, or -1 with err. */
static int load_url_file(const char *path, char *url, size_t urlmax, char *err, size_t errlen)
{
    struct stat st;
    char what[4200];
    snprintf(what, sizeof(what), "--alerts-url-file %s", path);
    int fd = open_small_file("--alerts-url-file", path, HEADER_FILE_MAX_BYTES, &st, err, errlen);
    if (fd < 0)
        return -1;
    static char text[HEADER_FILE_MAX_BYTES + 1];   /* loaded on one thread at a time (start, SIGHUP) */
    ssize_t n = read(fd, text, HEADER_FILE_MAX_BYTES);
    int saved = errno;
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "--alerts-url-file: cannot read %s: %s", path, strerror(saved));
        return -1;
    }
    text[n] = '\0';
    if (memchr(text, '\0', (size_t)n)) {
        snprintf(err, errlen, "--alerts-url-file: %s holds a NUL byte: not a text file", path);
        return -1;
    }
    if (st.st_mode & 077)
        log_warn("alerts: URL file %s can be read by other users (mode %04o): chmod 600 it if the URL holds a token",
                 path, (unsigned)(st.st_mode & 07777));
    for (char *line = text; line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        line = trim(line, line + strlen(line));
        if (*line && *line != '#') {
            if (strlen(line) >= urlmax) {
                snprintf(err, errlen, "%s: expected a URL of at most %zu bytes", what, urlmax - 1);
                return -1;
            }
            memcpy(url, line, strlen(line) + 1);
            return 0;
        }
        line = next;
    }
    snprintf(err, errlen, "%s: no URL in it (a line such as https://HOST/PATH)", what);
    return -1;
}

/* ---- the whole ---- */

struct deliver_settings *deliver_settings_load(const char *url, const char *url_file, const char *ca_file,
                                               const char *header_file, unsigned timeout_ms, char *err,
                                               size_t errlen)
{
    if (deliver_curl_init(err, errlen) != 0)
        return NULL;
    struct deliver_settings *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "--alerts-url: out of memory");
        return NULL;
    }
    s->timeout_ms = timeout_ms;
    s->connect_timeout_ms = timeout_ms < DELIVER_CONNECT_TIMEOUT_MAX_MS ? timeout_ms : DELIVER_CONNECT_TIMEOUT_MAX_MS;
    bool has_type = false;
    static char from_file[ALERT_OUTBOX_TARGET_MAX];   /* one thread at a time, as the header file */
    char what[4200] = "--alerts-url";
    int rc = 0;
    if (url_file) {
        snprintf(what, sizeof(what), "--alerts-url-file %s", url_file);
        rc = load_url_file(url_file, from_file, sizeof(from_file), err, errlen);
        url = from_file;
    }
    if (rc == 0)
        rc = check_url(s, what, url, err, errlen);
    if (rc == 0 && ca_file && (rc = check_ca_file(ca_file, err, errlen)) == 0 && !(s->ca_file = strdup(ca_file))) {
        snprintf(err, errlen, "--alerts-ca: out of memory");
        rc = -1;
    }
    if (rc == 0 && header_file)
        rc = load_header_file(s, header_file, &has_type, err, errlen);
    /* No "Expect: 100-continue" round trip before larger bodies. */
    const char *fixed[] = {"Expect:", has_type ? NULL : "Content-Type: application/json"};
    for (size_t i = 0; rc == 0 && i < 2; i++) {
        struct curl_slist *l = fixed[i] ? curl_slist_append(s->headers, fixed[i]) : s->headers;
        if (fixed[i] && !l) {
            snprintf(err, errlen, "--alerts-url: out of memory");
            rc = -1;
        }
        s->headers = l ? l : s->headers;
    }
    if (rc != 0) {
        deliver_settings_free(s);
        return NULL;
    }
    return s;
}

void deliver_settings_free(struct deliver_settings *s)
{
    if (!s)
        return;
    free(s->url);
    free(s->origin);
    free(s->ca_file);
    curl_slist_free_all(s->headers);
    free(s);
}

const char *deliver_settings_origin(const struct deliver_settings *s)
{
    return s->origin;
}
