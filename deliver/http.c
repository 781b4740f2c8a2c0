#include "http.h"

#include <stdio.h>
#include <string.h>

/* Each wait inside a request also checks abort this often. */
#define HTTP_POLL_MS 1000

/* The start of the answer, for the log; the rest is read and dropped. */
static size_t keep_answer(char *data, size_t size, size_t n, void *arg)
{
    struct http *h = arg;
    size_t len = size * n, room = HTTP_ANSWER_KEPT - h->answer_len;
    size_t take = len < room ? len : room;
    memcpy(h->answer + h->answer_len, data, take);
    h->answer_len += take;
    h->answer[h->answer_len] = '\0';
    return len;
}

int http_open(struct http *h, char *err, size_t errlen)
{
    memset(h, 0, sizeof(*h));
    h->multi = curl_multi_init();
    h->easy = curl_easy_init();
    if (!h->multi || !h->easy) {
        snprintf(err, errlen, "libcurl: out of memory");
        http_close(h);
        return -1;
    }
    CURL *e = h->easy;
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);   /* threads: no SIGALRM for timeouts */
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, h->errbuf);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, keep_answer);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);   /* deliver.h: a redirect is reported, not followed */
    curl_easy_setopt(e, CURLOPT_USERAGENT, "seccheckd");
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    return 0;
}

void http_close(struct http *h)
{
    if (h->easy)
        curl_easy_cleanup(h->easy);
    if (h->multi)
        curl_multi_cleanup(h->multi);
    h->easy = NULL;
    h->multi = NULL;
}

void http_use(struct http *h, const struct deliver_settings *s)
{
    CURL *e = h->easy;
    curl_easy_setopt(e, CURLOPT_URL, s->url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, s->headers);
    curl_easy_setopt(e, CURLOPT_CAINFO, s->ca_file);   /* NULL: the system's */
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)s->timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)s->connect_timeout_ms);
}

/* The origin a redirect points to (its path and query may hold a token). */
static void redirect_origin(CURL *e, char *out, size_t outlen)
{
    char *location = NULL;
    snprintf(out, outlen, "an address it did not give");
    if (curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &location) != CURLE_OK || !location)
        return;
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL;
    if (u && curl_url_set(u, CURLUPART_URL, location, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
        snprintf(out, outlen, "%s://%s:%s", scheme, host, port);
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
}

/* The kept answer as one printable line. */
static const char *answer_line(struct http *h)
{
    for (size_t i = 0; i < h->answer_len; i++)
        if ((unsigned char)h->answer[i] < ' ' || (unsigned char)h->answer[i] >= 0x7f)
            h->answer[i] = ' ';
    return h->answer_len ? h->answer : "(no body)";
}

static enum post_outcome judge(struct http *h, CURLcode result, char *why, size_t whylen)
{
    if (result != CURLE_OK) {
        snprintf(why, whylen, "%s", h->errbuf[0] ? h->errbuf : curl_easy_strerror(result));
        return POST_FAILED;
    }
    long status = 0;
    curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300)
        return POST_DELIVERED;
    if (status >= 300 && status < 400) {
        char where[300];
        redirect_origin(h->easy, where, sizeof(where));
        snprintf(why, whylen, "HTTP %ld, a redirect to %s: not followed (alerts go only where --alerts-url "
                 "says; point it there)", status, where);
        return POST_FAILED;
    }
    if (status >= 400 && status < 500 && status != 408 && status != 429) {
        snprintf(why, whylen, "HTTP %ld: %s", status, answer_line(h));
        return POST_REJECTED;
    }
    snprintf(why, whylen, "HTTP %ld: %s", status, answer_line(h));
    return POST_FAILED;
}

enum post_outcome http_post(struct http *h, const char *body, size_t len, const atomic_bool *abort, char *why,
                            size_t whylen)
{
    h->errbuf[0] = '\0';
    h->answer_len = 0;
    h->answer[0] = '\0';
    curl_easy_setopt(h->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(h->easy, CURLOPT_POSTFIELDS, body);
    if (curl_multi_add_handle(h->multi, h->easy) != CURLM_OK) {
        snprintf(why, whylen, "libcurl cannot start a request");
        return POST_FAILED;
    }
    int running = 1;
    bool aborted = false;
    CURLcode result = CURLE_OK;
    for (;;) {
        CURLMcode mc = curl_multi_perform(h->multi, &running);
        if (mc != CURLM_OK) {
            result = CURLE_SEND_ERROR;
            snprintf(h->errbuf, sizeof(h->errbuf), "libcurl: %s", curl_multi_strerror(mc));
            break;
        }
        if (!running)
            break;
        if (atomic_load(abort)) {
            aborted = true;
            break;
        }
        curl_multi_poll(h->multi, NULL, 0, HTTP_POLL_MS, NULL);
    }
    CURLMsg *m;
    int left;
    while (!aborted && (m = curl_multi_info_read(h->multi, &left)) != NULL)
        if (m->msg == CURLMSG_DONE)
            result = m->data.result;
    /* Done: the connection goes back to the multi's cache for the next
     * request. Unfinished (aborted): libcurl closes it. */
    curl_multi_remove_handle(h->multi, h->easy);
    if (aborted) {
        snprintf(why, whylen, "stopped");
        return POST_ABORTED;
    }
    return judge(h, result, why, whylen);
}

void http_wait(struct http *h, int timeout_ms)
{
    curl_multi_poll(h->multi, NULL, 0, timeout_ms > 0 ? timeout_ms : 0, NULL);
}

void http_wake(struct http *h)
{
    curl_multi_wakeup(h->multi);
}
