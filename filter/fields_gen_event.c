/* fields_gen_event.c - libs' gen_event class (falcosecurity/libs 48dfd53cd
 * userspace/libsinsp/sinsp_filtercheck_gen_event.cpp) beyond evt.num and
 * evt.time (fields_evt.c): the event's time in Falco's other forms, the
 * source and the host. Times are the event's (context time_ns, else its
 * receive time) and, as evt.time here, UTC: libs formats them in the
 * host's zone. In output_fields every time form is the integer of
 * nanoseconds, as libs' extract_as_js gives it (lines 159-176).
 */
#include <time.h>

#include "fields_class.h"

enum {
    F_EVT_TIME_S = FIELD_BASE_GEN_EVENT, F_EVT_TIME_ISO8601, F_EVT_DATETIME, F_EVT_DATETIME_S, F_EVT_RAWTIME,
    F_EVT_RAWTIME_S, F_EVT_RAWTIME_NS, F_EVT_OUTPUTTIME, F_EVT_SOURCE, F_EVT_IS_ASYNC, F_EVT_HOSTNAME,
    F_EVT_PLUGINNAME, F_EVT_PLUGININFO, F_EVT_ASYNCTYPE, F_EVT_RELTIME, F_EVT_RELTIME_S, F_EVT_RELTIME_NS,
};

/* sinsp_utils::ts_to_string (libs utils.cpp:816-860): "YYYY-MM-DD " when
 * date, then HH:MM:SS, then .nnnnnnnnn when ns; ts_to_iso_8601 (862-885):
 * %FT%T.nnnnnnnnn%z. */
static void put_time(struct strbuf *b, int64_t ns, bool date, bool with_ns, bool iso)
{
    struct tm tm;
    int frac = fields_utc(ns, &tm);
    if (iso) {
        strbuf_printf(b, "%04d-%02d-%02dT%02d:%02d:%02d.%09d+0000", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                      tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
        return;
    }
    if (date)
        strbuf_printf(b, "%04d-%02d-%02d ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
    strbuf_printf(b, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
    if (with_ns)
        strbuf_printf(b, ".%09d", (int)frac);
}

static void gen_extract(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    uint64_t ns = x->time_ns > 0 ? (uint64_t)x->time_ns : 0;
    switch (f->id) {
    case F_EVT_TIME_S:
    case F_EVT_TIME_ISO8601:
    case F_EVT_DATETIME:
    case F_EVT_DATETIME_S:
    case F_EVT_OUTPUTTIME:
        strbuf_reset(buf);
        put_time(buf, x->time_ns, f->id == F_EVT_DATETIME || f->id == F_EVT_DATETIME_S,
                 f->id == F_EVT_DATETIME || f->id == F_EVT_OUTPUTTIME, f->id == F_EVT_TIME_ISO8601);
        fv_buf(v, buf);
        return;
    case F_EVT_RAWTIME: fv_uint(v, ns); return;
    case F_EVT_RAWTIME_S: fv_uint(v, ns / 1000000000); return;
    case F_EVT_RAWTIME_NS: fv_uint(v, ns % 1000000000); return;
    case F_EVT_SOURCE: fv_cstr(v, "syscall"); return;
    case F_EVT_IS_ASYNC: fv_bool(v, false); return;   /* libs' meta-events: none comes from gVisor */
    case F_EVT_HOSTNAME: fv_cstr(v, x->hostname); return;
    default: return;   /* a plugin's event, an async event: never a syscall's */
    }
}

bool fields_json_time(const struct fieldref *f)
{
    return f->id == F_EVT_TIME || (f->id >= F_EVT_TIME_S && f->id <= F_EVT_DATETIME_S) || f->id == F_EVT_OUTPUTTIME;
}

static const struct field_def gen_defs[] = {
    {"evt.time.s", FT_STR, FA_NONE, F_EVT_TIME_S, 0, 0, 0, FIELD_REPORTED},
    {"evt.time.iso8601", FT_STR, FA_NONE, F_EVT_TIME_ISO8601, 0, 0, 0, FIELD_REPORTED},
    {"evt.datetime", FT_STR, FA_NONE, F_EVT_DATETIME, 0, 0, 0, FIELD_REPORTED},
    {"evt.datetime.s", FT_STR, FA_NONE, F_EVT_DATETIME_S, 0, 0, 0, FIELD_REPORTED},
    {"evt.rawtime", FT_UINT, FA_NONE, F_EVT_RAWTIME, 0, 0, 0, FIELD_REPORTED},
    {"evt.rawtime.s", FT_UINT, FA_NONE, F_EVT_RAWTIME_S, 0, 0, 0, FIELD_REPORTED},
    {"evt.rawtime.ns", FT_UINT, FA_NONE, F_EVT_RAWTIME_NS, 0, 0, 0, FIELD_REPORTED},
    {"evt.outputtime", FT_STR, FA_NONE, F_EVT_OUTPUTTIME, 0, 0, 0, FIELD_REPORTED},
    {"evt.source", FT_STR, FA_NONE, F_EVT_SOURCE, 0, 0, 0, FIELD_REPORTED},
    {"evt.is_async", FT_BOOL, FA_NONE, F_EVT_IS_ASYNC, 0, 0, 0, FIELD_REPORTED},
    {"evt.hostname", FT_STR, FA_NONE, F_EVT_HOSTNAME, 0, 0, 0, FIELD_REPORTED},
    /* absent on every syscall event in Falco too: rules reading them run, as there */
    {"evt.pluginname", FT_STR, FA_NONE, F_EVT_PLUGINNAME, 0, 0, 0, FIELD_REPORTED},
    {"evt.plugininfo", FT_STR, FA_NONE, F_EVT_PLUGININFO, 0, 0, 0, FIELD_REPORTED},
    {"evt.asynctype", FT_STR, FA_NONE, F_EVT_ASYNCTYPE, 0, 0, 0, FIELD_REPORTED},
    /* the time since the capture's first event: a daemon that runs for
     * months over sandboxes that come and go has no such first event */
    {"evt.reltime", FT_UINT, FA_NONE, F_EVT_RELTIME, 0, 0, 0, FIELD_NEVER},
    {"evt.reltime.s", FT_UINT, FA_NONE, F_EVT_RELTIME_S, 0, 0, 0, FIELD_NEVER},
    {"evt.reltime.ns", FT_UINT, FA_NONE, F_EVT_RELTIME_NS, 0, 0, 0, FIELD_NEVER},
};

const struct field_class fields_gen_event_class = {
    "gen_event", gen_defs, sizeof(gen_defs) / sizeof(gen_defs[0]), gen_extract,
};
