/* settings.h - deliver_settings (deliver.h) as the module uses them, and
 * libcurl's one-time set-up. Internal to deliver/. */
#ifndef SECCHECKD_DELIVER_SETTINGS_H
#define SECCHECKD_DELIVER_SETTINGS_H

#include <curl/curl.h>

#include "deliver.h"

#define DELIVER_CONNECT_TIMEOUT_MAX_MS 5000

struct deliver_settings {
    char *url;
    char *origin;                   /* scheme://host:port, for the log */
    char *ca_file;                  /* NULL: the system's CAs */
    struct curl_slist *headers;     /* Content-Type, no Expect, the header file's */
    unsigned timeout_ms;            /* the whole request */
    unsigned connect_timeout_ms;
};

/* curl_global_init, once; first called before any thread starts (main.c
 * loads the settings before the daemon's threads). 0, or -1 with err. */
int deliver_curl_init(char *err, size_t errlen);

#endif
