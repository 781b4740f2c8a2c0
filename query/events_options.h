/* events_options.h - `seccheckd events`'s options, shared by its two
 * readers: a host's database (events.c) and the central copy
 * (events_central.c). Internal to the command. */
#ifndef SECCHECKD_EVENTS_OPTIONS_H
#define SECCHECKD_EVENTS_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "central_urls.h"
#include "ingest_filter.h"
#include "term_color.h"

struct events_options {
    const char *db_path;
    const char *to_url;           /* the central copy instead, one host's rows (the first --to) */
    struct central_urls to;       /* every --to: the host is read in the one that holds it */
    const char *host_id;          /* --to: that host [the id forward ships as] */
    bool follow;
    const char *container;        /* id or name; --pod, --namespace beside it (container_filter.h) */
    const char *pod, *ns;
    const char *process;
    const char *types;            /* as given: filter.h parses it */
    struct filter type_filter;
    bool has_since;
    uint64_t since_s;
    bool json;
    bool has_lines;
    uint64_t lines;               /* -n: the last N stored first (--follow: 10 unless given) */
    enum term_color_mode color;
};

enum { EVENTS_OK = 0, EVENTS_FAILED = 1, EVENTS_USAGE = 2, EVENTS_OUTPUT_GONE = 3 };

#endif
