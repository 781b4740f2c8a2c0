/* http.h - one POST at a time to the receiver. libcurl's multi interface
 * drives one reused easy handle (its connection kept alive between
 * requests), so a wait, a request included, can be woken from another
 * thread: new alerts, new settings, stop. Internal to deliver/. */
#ifndef SECCHECKD_DELIVER_HTTP_H
#define SECCHECKD_DELIVER_HTTP_H

#include <stdatomic.h>
#include <stddef.h>
#include <curl/curl.h>

#include "settings.h"

enum post_outcome {
    POST_DELIVERED,   /* 2xx */
    POST_FAILED,      /* try the same alert again later */
    POST_REJECTED,    /* a 4xx about this alert: skip it */
    POST_ABORTED,     /* abort was set */
};

#define HTTP_ANSWER_KEPT 200   /* bytes of a response kept for the log */

struct http {
    CURLM *multi;
    CURL *easy;
    char errbuf[CURL_ERROR_SIZE];
    char answer[HTTP_ANSWER_KEPT + 1];
    size_t answer_len;
};

/* 0, or -1 with err. */
int http_open(struct http *h, char *err, size_t errlen);
void http_close(struct http *h);

/* The receiver and how to reach it, for the requests from now on; s must
 * outlive them (its header list is not copied). */
void http_use(struct http *h, const struct deliver_settings *s);

/* POSTs body (len bytes, kept until this returns); why tells a failure or
 * rejection in one line (never the URL's path or query). */
enum post_outcome http_post(struct http *h, const char *body, size_t len, const atomic_bool *abort, char *why,
                            size_t whylen);

/* Sleeps until timeout_ms pass or http_wake. */
void http_wait(struct http *h, int timeout_ms);

/* Any thread. */
void http_wake(struct http *h);

#endif
