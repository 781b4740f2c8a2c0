/* fields.h - Falco's field names over a decoded gVisor event: the table of
 * fields, their resolution when a rules file is compiled, and extraction
 * when an event is evaluated (lazy: only what a condition or an output
 * reads, each value computed once per event and cached in its slot).
 *
 * A field the event does not carry is absent (FV_ABSENT): every comparison
 * on it is false, `<NA>` in text, null in JSON. Values point into the
 * event's message, the process table or the slot's own buffer, all valid
 * until the next event; nothing is allocated once the slot buffers have
 * grown to the workload's sizes.
 */
#ifndef SECCHECKD_RULES_FIELDS_H
#define SECCHECKD_RULES_FIELDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <protobuf-c/protobuf-c.h>

#include "arena.h"
#include "decode.h"
#include "event.h"
#include "evtype.h"
#include "proctab.h"
#include "strbuf.h"

/* The event's own fields (fields_evt.c); the compiler, the renderer and
 * rules_needs test these ids. Other classes number theirs from their own
 * base (fields_class.h), so an id names one field over every class. */
enum field_id {
    F_EVT_TYPE, F_EVT_DIR, F_EVT_TIME, F_EVT_NUM, F_EVT_RES, F_EVT_RAWRES, F_EVT_FAILED,
    F_EVT_IS_OPEN_READ, F_EVT_IS_OPEN_WRITE, F_EVT_IS_OPEN_EXEC, F_EVT_ARG, F_EVT_DROPPED, F_EVT_DROPPED_NEW,
    F_GVISOR_POINT, F_EVT_ARGS, F_EVT_BUFFER,
    F_EVT_COUNT
};

/* Whether gVisor can give a field a value. */
enum field_avail {
    FIELD_REPORTED = 0,           /* runsc sends what it needs (2022-12 on) */
    FIELD_NEWER_RUNSC,            /* only runsc releases after 2022-12 send it: absent with older ones */
    FIELD_NEVER,                  /* gVisor never reports it: known to the loader, always absent */
};

enum ftype { FT_STR, FT_INT, FT_UINT, FT_BOOL, FT_IP, FT_DYN /* evt.arg: the message field's own type */ };

enum fval_kind { FV_ABSENT = 0, FV_STR, FV_INT, FV_UINT, FV_BOOL, FV_IP };

struct fval {
    enum fval_kind kind;
    uint32_t len;                 /* FV_STR: bytes (NUL-terminated as well); FV_IP: 4 or 16 */
    union {
        const char *s;
        int64_t i;
        uint64_t u;
        bool b;
        uint8_t ip[16];
    };
};

struct field_def;

/* A field as a condition or an output names it. */
struct fieldref {
    uint16_t id;                  /* unique over every class (F_EVT_* for the event's own) */
    const struct field_def *def;  /* its definition: name, type, class, what runsc must send */
    int32_t index;                /* proc.aname[N], proc.apid[N], evt.arg[N]; -1: none */
    const char *argname;          /* proc.env[NAME], evt.arg.NAME: NAME (in the rule set's arena); NULL: none */
    uint32_t argname_len;
    bool any_ancestor;            /* proc.aname / proc.apid without an index (conditions only) */
    /* evt.arg: the message field per message type, resolved once at load
     * (DECODE_TYPE_MAX + 1 entries, NULL where the type has none). */
    const ProtobufCFieldDescriptor *const *arg;
    /* evt.arg.NAME under Falco's name: per parameter list (fields_args.c),
     * the parameter's index + 1, 0 where the list has no such name; NULL
     * for evt.arg[N] */
    const uint8_t *falco;
    uint32_t slot;                /* value cache slot, per rule set */
};

enum ftype fields_type(const struct fieldref *f);
/* Whether a and b read the same value (they may share a cache slot). */
bool fields_same(const struct fieldref *a, const struct fieldref *b);
enum field_avail fields_avail(const struct fieldref *f);
const char *fields_name(const struct fieldref *f);

/* The shared decoder's message layouts (descriptors per message type). */
const struct decoder *fields_decoder(void);

/* Resolves "proc.aname" with its optional [arg] ("evt.arg.NAME" carries its
 * name in the field name); evt.arg's descriptor table goes in arena a (the
 * rule set's). 0, or -1 with a message naming the problem. */
int fields_resolve(const char *name, size_t len, const char *arg, size_t arglen, bool has_arg, struct arena *a,
                   struct fieldref *out, char *err, size_t errlen);

/* ---- evaluation context: one event ---- */

struct field_slot {
    uint32_t gen;                 /* the event the value belongs to */
    struct fval v;
    struct strbuf buf;            /* backs computed strings */
};

struct fdinfo;
struct container_view;
struct container_record;

struct evctx {
    const struct event *ev;
    struct evclass cls;
    int64_t time_ns;              /* context time_ns, else receive time */
    uint64_t num;                 /* evt.num */
    uint64_t dropped_new;         /* evt.dropped_new: the connection's dropped count grew by this */
    struct proctab *pt;
    struct proc *proc;            /* NULL: the event names no process */
    struct field_slot *slots;
    uint32_t gen;
    bool have_point, have_fd;
    char point[EVTYPE_POINT_MAX];
    struct fdinfo *fd;            /* lazily filled, owned by the engine */
    struct strbuf *fdname;        /* backs fd.name when it is built (joined path, address) */
    /* container.name, k8s.*, user.name: the event's container record,
     * asked of the view once per event (fields_container.c); NULL view:
     * absent. */
    struct container_view *containers;
    const struct container_record *container;
    bool have_container;
};

/* The value of f for the context's event (cached in f's slot). */
const struct fval *fields_get(struct evctx *x, const struct fieldref *f);

/* proc.aname / proc.apid of the level-th ancestor (1: parent), for the
 * any-ancestor walk; FV_ABSENT past the known chain. */
void fields_ancestor(struct evctx *x, const struct fieldref *f, unsigned level, struct fval *out);

/* Text of a value as Falco prints it (`<NA>` when absent): appended to out. */
void fields_render_text(struct strbuf *out, const struct fval *v);

/* "HH:MM:SS.nnnnnnnnn" (UTC) and "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ". */
void fields_format_time(struct strbuf *out, int64_t ns, bool iso);

/* The field table, for documentation and `rules check`. */
struct field_info {
    const char *name;
    enum ftype type;
    const char *arg;              /* "[N]", ".NAME or [N]", or NULL */
    enum field_avail avail;
};
size_t fields_count(void);
const struct field_info *fields_info(size_t i);

/* Internal state of fd.* extraction, exposed for its size only. */
struct fdinfo {
    uint32_t gen;
    bool has_num, has_name, is_socket;
    char typechar;                /* 0: absent */
    int64_t num;
    const char *name;
    uint32_t name_len;
    uint8_t role;                 /* which side of a socket the address is (fields_fd.c) */
    uint8_t family;               /* 4, 6 or 0 */
    uint16_t port;
    uint8_t ip[16];
    /* the socket as the process table knows it, and as the event itself
     * says: domain, type, protocol (domain 0: not known) */
    const struct psock *sock;
    uint8_t domain, type;
    uint16_t protocol;
    int8_t connected;             /* -1: not known */
    bool name_changed;
};

#endif
