/* events_central.h - `seccheckd events --to URL [--host-id ID]`: one host's
 * events from the central PostgreSQL copy (seccheckd forward), the lines
 * and filters of `seccheckd events --db`: the compact line decoded again
 * from the shipped raw packet, -o json from the central events_full view;
 * --container, --pod and --namespace by the names the host's runsc state
 * gave (container_names, on that host only). --follow asks the central
 * server again every second. */
#ifndef SECCHECKD_EVENTS_CENTRAL_H
#define SECCHECKD_EVENTS_CENTRAL_H

#include "events_options.h"

/* EVENTS_OK, EVENTS_FAILED (printed) or EVENTS_USAGE (printed). */
int events_central_run(const struct events_options *o, int64_t since_ns, bool color);

#endif
