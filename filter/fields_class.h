/* fields_class.h - how a family of fields plugs into fields.c, as
 * libsinsp's filtercheck classes do: a table of definitions and one
 * extractor. fields.c keeps the registry (one line per class), resolves
 * names, caches values per event and renders them; a class file knows only
 * where its values come from.
 *
 * Adding a class: a file filter/fields_NAME.c defining a `const struct
 * field_class`, its id base below, its extern here, one line in fields.c's
 * registry and one in CMakeLists.txt. Ids are unique over every class (the
 * base plus the class's own enum), so a fieldref's id names one field.
 */
#ifndef SECCHECKD_FILTER_FIELDS_CLASS_H
#define SECCHECKD_FILTER_FIELDS_CLASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "filter.h"
#include "proctab.h"

/* First id of each class (F_EVT_* in filter.h start at 0). */
enum field_class_base {
    FIELD_BASE_EVT = 0,
    FIELD_BASE_PROC = 0x100,
    FIELD_BASE_FD = 0x200,
    FIELD_BASE_CONTAINER = 0x300,
    FIELD_BASE_EXEC = 0x400,
    FIELD_BASE_USER = 0x500,
    FIELD_BASE_GEN_EVENT = 0x600,
    FIELD_BASE_UNREPORTED = 0x700,
    FIELD_BASE_K8SMETA = 0x800,
};

enum field_arg {
    FA_NONE,        /* no argument */
    FA_ANCESTOR,    /* [N] (0 self, 1 parent...); none: any ancestor (conditions only) */
    FA_EVT_ARG,     /* .NAME or [N]: a message field */
    FA_ENV_NAME,    /* [NAME]: one environment variable; none: all of them */
    FA_MOUNT,       /* [N] (a mount's index) or [PATH] (a glob of a mount's path), required */
    FA_KEY,         /* [KEY] or .KEY (a label's name, an event type): argname; none allowed */
    FA_KEY_REQUIRED,/* the same, required: the plugins' labels (req_key_arg, {.key, .required}) */
    FA_INDEX,       /* [N]: index; none: -1 (proc.acmdline: every ancestor's, libs' reading) */
    FA_ENV_LEVEL,   /* [NAME] (argname) or [N] (index), or none: proc.aenv */
};

#define FIELD_KEY_MAX 256   /* an FA_KEY argument */

#define FIELD_MOUNT_GLOB_MAX 4096   /* container.mount.*[PATH]: PATH_MAX */

struct field_def {
    const char *name;
    enum ftype type;
    enum field_arg arg;
    uint16_t id;                  /* unique over every class */
    /* What runsc must send for the field, at the points the rule matches. */
    unsigned context;             /* RULES_CTX_* */
    unsigned optional;            /* RULES_OPT_* */
    unsigned process;             /* FIELD_PROC_* */
    enum field_avail avail;
};

struct field_class {
    const char *name;             /* "evt", "proc", "fd" */
    const struct field_def *defs;
    size_t ndefs;
    /* The value of f for the event in x (v starts absent); buf backs a
     * computed string. */
    void (*extract)(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf);
};

extern const struct field_class fields_evt_class;
extern const struct field_class fields_proc_class;
extern const struct field_class fields_fd_class;
extern const struct field_class fields_container_class;
extern const struct field_class fields_exec_class;

/* The runsc release (RULES_RUNSC_*) a FIELD_NEWER_RUNSC field needs: the
 * exec class knows its own; any other's, the newest this build knows. */
unsigned fields_exec_release(const struct field_def *d);

extern const struct field_class fields_user_class;
/* libs' gen_event class: the event's time in Falco's other forms, its
 * source, the host (fields_gen_event.c). */
extern const struct field_class fields_gen_event_class;
/* What libs and Falco's container plugin define that gVisor and the node
 * cannot feed, or that Falco itself leaves empty (fields_unreported.c). */
extern const struct field_class fields_unreported_class;
/* Falco's k8smeta plugin (fields_k8smeta.c). */
extern const struct field_class fields_k8smeta_class;

/* The event's container record from runsc's state (container.h), NULL
 * when not known; asked once per event (fields_container.c). */
struct container_record;
const struct container_record *fields_container_record(struct evctx *x);
/* container.id of the event (its first 12 characters when it is 64 hex
 * digits, as Falco's); absent when the event carries none. */
void fields_container_id(const struct evctx *x, struct fval *v);

/* ---- shared by the class files ---- */

static inline void fv_str(struct fval *v, const char *s, size_t len)
{
    v->kind = FV_STR;
    v->s = s;
    v->len = (uint32_t)len;
}

/* A NUL-terminated string; empty or NULL is absent. */
static inline void fv_cstr(struct fval *v, const char *s)
{
    if (s && s[0])
        fv_str(v, s, strlen(s));
    else
        v->kind = FV_ABSENT;
}

static inline void fv_int(struct fval *v, int64_t i)
{
    v->kind = FV_INT;
    v->i = i;
}

static inline void fv_uint(struct fval *v, uint64_t u)
{
    v->kind = FV_UINT;
    v->u = u;
}

static inline void fv_bool(struct fval *v, bool b)
{
    v->kind = FV_BOOL;
    v->b = b;
}

/* The strbuf's text becomes v (the strbuf backs it); absent if it failed. */
void fv_buf(struct fval *v, struct strbuf *b);

/* Fields a message's common view needs, by name, per message type (NULL
 * where the message has none). */
struct msg_layout {
    const ProtobufCFieldDescriptor *fd, *fd_path, *pathname, *address, *flags, *mode;
};
const struct msg_layout *fields_layout(uint16_t message_type);

/* A scalar field of m: false when f is NULL, repeated, or not of that kind. */
bool fields_read_int(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, int64_t *out);
const char *fields_read_str(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f);
const ProtobufCBinaryData *fields_read_bytes(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f);

/* evt.arg.NAME (index < 0) or evt.arg[N]: the descriptor per message type,
 * in arena a (fields_evt.c). */
int fields_evt_resolve_arg(const char *name, size_t len, int32_t index, struct arena *a, struct fieldref *out,
                           char *err, size_t errlen);

void fields_put_ip(struct strbuf *b, uint8_t family, const uint8_t *ip);

struct tm;
/* ns since the epoch as UTC calendar time in *tm (zeros past gmtime's
 * range); the nanoseconds of its second. */
int fields_utc(int64_t ns, struct tm *tm);

/* The event's fd as fd.* sees it (fields_fd.c), computed once per event. */
const struct fdinfo *fields_fd_info(struct evctx *x);

/* Falco's event parameters (fields_args.c). A list is the parameters of
 * one event type as one message type reports it; ids are 0 to
 * fields_args_lists() - 1. */
/* (fields_args_list, fields_args_reported and fields_args_optional: filter.h) */
size_t fields_args_lists(void);
int fields_args_find(int list, const char *name, size_t len);          /* the parameter's index, or -1 */
bool fields_args_known_name(const char *name, size_t len);             /* some list names it */
/* evt.arg.NAME of that parameter (text, the resolved form), and evt.args. */
void fields_args_value(struct evctx *x, int list, int param, struct fval *v, struct strbuf *buf);
void fields_args_all(struct evctx *x, struct fval *v, struct strbuf *buf);

/* The syscall's return value as Falco has it: -errno when it failed. A
 * sandbox's errno of INT64_MIN has no negation in int64_t: it saturates. */
static inline int64_t fields_rawres(const struct event *ev)
{
    if (!ev->errorno)
        return ev->result;
    return ev->errorno == INT64_MIN ? INT64_MAX : -ev->errorno;
}

#endif
