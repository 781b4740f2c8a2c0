/* event_redecode.h - an events row made again from its raw column alone:
 * what the daemon stores for that packet, to compare with what the row holds.
 *
 * The tamper-evident chain (chain.h) covers raw (and id, conn_id, recv_ns,
 * msg_type); the columns people query, and detail, are decoded from raw.
 * `seccheckd verify` (verify.c) and `verify --to` (forward/central_verify.c)
 * decode raw again with the daemon's decoder and bind the result with the
 * daemon's own binding (event_row.h), so what they compare a row with is
 * what the daemon would store, value for value.
 *
 * Schema version 1 rows (ids below meta.schema_v2_first_event_id) hold the
 * whole message in detail and NULL in the four columns version 2 added
 * (schema.sql.h).
 */
#ifndef SECCHECKD_EVENT_REDECODE_H
#define SECCHECKD_EVENT_REDECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <sqlite3.h>

#include "arena.h"
#include "decode.h"
#include "event.h"
#include "event_row.h"
#include "strbuf.h"

enum redecode_kind { REDECODE_INT, REDECODE_TEXT, REDECODE_JSON };

struct redecode_column {
    const char *name;             /* the events table's column */
    enum redecode_kind kind;
};

/* The columns decoded from raw, in the order of the row event_redecode
 * gives: dropped_count .. errno, detail, version 2's four, type_name. */
#define REDECODE_COLUMNS 24
#define REDECODE_DETAIL 18          /* version 2's detail */
#define REDECODE_V2_FIRST 19        /* thread_start_time_ns .. is_exec_session */
#define REDECODE_V2_LAST 22
#define REDECODE_TYPE_NAME 23
#define REDECODE_WHOLE_DETAIL 24    /* one more column: version 1's detail */
extern const struct redecode_column redecode_columns[REDECODE_COLUMNS];

struct event_redecoder {
    struct decoder decoder;
    struct arena arena;           /* one row's decoded message at a time */
    struct strbuf detail, whole;
    sqlite3 *mem;                 /* hosts the statement the values are bound to */
    sqlite3_stmt *values;
};

/* 0, or -1 with the reason in err. */
int event_redecoder_init(struct event_redecoder *r, char *err, size_t errlen);
void event_redecoder_free(struct event_redecoder *r);

/* Decodes raw as the daemon decoded it on arrival (header, then the
 * payload; an undecodable payload is an event too) into ev, which points
 * into raw and r until the next call. false when raw does not start with a
 * valid packet header: the daemon never stores such a packet. */
bool event_redecode_event(struct event_redecoder *r, const void *raw, size_t len, struct event *ev);

/* Decodes raw and returns a statement on one row: column i < REDECODE_COLUMNS
 * holds what the daemon stores in redecode_columns[i] for this packet (as
 * version 2 does), column REDECODE_WHOLE_DETAIL the whole message as version 1's
 * detail held it (rendered only when whole_detail; NULL otherwise and for an
 * undecoded payload). Valid until the next call. NULL when raw has no valid
 * header (event_redecode_event). */
sqlite3_stmt *event_redecode(struct event_redecoder *r, const void *raw, size_t len, bool whole_detail);

/* The parameter (event_row.h's ?N, and EVENT_ROW_PARAMS + 1 for the
 * whole message) each column of event_redecode's row is. */
extern const int redecode_params[REDECODE_COLUMNS + 1];

/* event_redecode without SQLite: the values of the row event_row_bind
 * would bind for raw, v[redecode_params[col]] holding column col's
 * (v[EVENT_ROW_PARAMS + 1]: the whole message when whole_detail, else
 * NULL). Pointing into raw and r until the next call. false when raw has
 * no valid header. A value an SQLite round trip would change (unclean
 * text) is marked so, and the caller takes event_redecode's row instead. */
bool event_redecode_values(struct event_redecoder *r, const void *raw, size_t len, bool whole_detail,
                           struct event_value v[EVENT_ROW_PARAMS + 2]);

/* Column a of st_a and column b of st_b hold the same value: the same
 * storage class, and the same integer, number or bytes. */
bool event_redecode_same(sqlite3_stmt *st_a, int a, sqlite3_stmt *st_b, int b);

#endif
