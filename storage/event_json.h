/* event_json.h - one event as one NDJSON line.
 *
 * The object holds the events table's columns under their column names,
 * with the table's NULL rules (a column the table would store as NULL is
 * left out), plus "detail" (event_detail_render: the decoded message less
 * what the columns hold) for decoded events
 * or "raw" (the packet as lowercase hex) for the others, so nothing is lost.
 * The live NDJSON sink and `seccheckd export --format ndjson` both render
 * through here, so the stream and the export of the database agree.
 */
#ifndef SECCHECKD_EVENT_JSON_H
#define SECCHECKD_EVENT_JSON_H

#include "event.h"
#include "strbuf.h"

/* "unknown_type" / "bad_payload" for undecoded events, NULL for decoded ones:
 * the events table's decode_error column. */
const char *event_decode_error_name(enum decode_status status);

/* Appends the events table's detail for a decoded event (ev->msg): the
 * message as JSON (json.h) without the fields the columns already hold
 * (context_data, sysno, exit), so each is stored once; a field the columns
 * cannot hold exactly (unknown sub-fields, a sysno past INT64_MAX) stays.
 * The events_full view puts the message back together. 0, or -1 when the
 * buffer could not grow. */
int event_detail_render(struct strbuf *out, const struct event *ev);

/* Appends ev as one JSON object followed by '\n'. Returns 0, or -1 if the
 * buffer could not grow (out->failed). */
int event_json_render(struct strbuf *out, const struct event *ev);

#endif
