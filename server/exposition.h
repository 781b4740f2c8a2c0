/* exposition.h - the daemon's counters in the Prometheus text format
 * (version 0.0.4), for the metrics endpoint (metrics.h) to serve.
 *
 * Read on the loop thread at scrape time from what the loop already keeps
 * (server stats, pipeline totals, the open batch): rendering adds no work
 * and no lock to the per-message path. The metric names and what each
 * counts are listed in docs/reference.md ("Metrics").
 */
#ifndef SECCHECKD_EXPOSITION_H
#define SECCHECKD_EXPOSITION_H

#include "server.h"
#include "strbuf.h"

/* Appends every metric of s to out. */
void exposition_render(struct strbuf *out, struct server *s);

#endif
