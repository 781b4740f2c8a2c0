/* fields_proc.c - proc.*, user.uid, group.gid: the event's process and its
 * ancestors, from the process table (proctab.h) and the event's context.
 */
#include "fields_class.h"

enum {
    F_PROC_NAME = FIELD_BASE_PROC, F_PROC_EXEPATH, F_PROC_CMDLINE, F_PROC_ARGS, F_PROC_PID, F_PROC_TID, F_PROC_CWD,
    F_PROC_DURATION, F_PROC_PPID, F_PROC_PNAME, F_PROC_PCMDLINE, F_PROC_ANAME, F_PROC_APID,
    F_USER_UID, F_GROUP_GID,
};

static void cmdline(const struct proc *p, struct fval *v, struct strbuf *buf)
{
    if (!p || !p->name[0])
        return;
    strbuf_reset(buf);
    strbuf_puts(buf, p->name);
    if (p->args.len) {
        strbuf_putc(buf, ' ');
        strbuf_append(buf, p->args.data, p->args.len);
    }
    fv_buf(v, buf);
}

static const struct proc *ancestor(struct evctx *x, unsigned level)
{
    const struct proc *p = x->proc;
    for (unsigned i = 0; i < level && p; i++) {
        const struct proc *q = proctab_parent(x->pt, p);
        p = q == p ? NULL : q;
    }
    return p;
}

void fields_ancestor(struct evctx *x, const struct fieldref *f, unsigned level, struct fval *out)
{
    out->kind = FV_ABSENT;
    if (level > PROC_ANCESTORS_MAX)
        return;
    const struct proc *a = ancestor(x, level);
    if (!a)
        return;
    if (f->id == F_PROC_ANAME)
        fv_cstr(out, a->name);
    else
        fv_int(out, a->tgid);
}

static void proc_extract(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    const struct proc *p = x->proc;
    const Gvisor__Common__ContextData *ctx = x->ev->context;
    switch (f->id) {
    case F_PROC_PID:
        if (ctx && ctx->thread_group_id > 0)
            fv_int(v, ctx->thread_group_id);
        return;
    case F_PROC_TID:
        if (ctx && ctx->thread_id > 0)
            fv_int(v, ctx->thread_id);
        return;
    case F_PROC_PPID:   /* runsc release-20260525.0 on sends it: no table needed */
        if (ctx && ctx->parent_thread_group_id > 0 && ctx->parent_thread_group_id != ctx->thread_group_id) {
            fv_int(v, ctx->parent_thread_group_id);
            return;
        }
        break;
    default:
        break;
    }
    if (!p)
        return;
    const struct proc *parent;
    switch (f->id) {
    case F_PROC_NAME: fv_cstr(v, p->name); return;
    case F_PROC_EXEPATH: if (p->exepath.len) fv_str(v, p->exepath.data, p->exepath.len); return;
    case F_PROC_ARGS: fv_str(v, p->args.len ? p->args.data : "", p->args.len); return;
    case F_PROC_CMDLINE: cmdline(p, v, buf); return;
    case F_PROC_CWD:
        if (!p->cwd.len)
            return;
        if (p->cwd.data[p->cwd.len - 1] == '/') {
            fv_str(v, p->cwd.data, p->cwd.len);
            return;
        }
        strbuf_reset(buf);   /* Falco's proc.cwd ends in '/' */
        strbuf_append(buf, p->cwd.data, p->cwd.len);
        strbuf_putc(buf, '/');
        fv_buf(v, buf);
        return;
    case F_PROC_DURATION:
        if (p->start_ns)
            fv_int(v, x->time_ns - p->start_ns);
        return;
    case F_PROC_PPID:
        if ((parent = proctab_parent(x->pt, p)))
            fv_int(v, parent->tgid);
        return;
    case F_PROC_PNAME:
        if ((parent = proctab_parent(x->pt, p)))
            fv_cstr(v, parent->name);
        return;
    case F_PROC_PCMDLINE: cmdline(proctab_parent(x->pt, p), v, buf); return;
    case F_PROC_ANAME:
    case F_PROC_APID:
        fields_ancestor(x, f, f->index < 0 ? 1 : (unsigned)f->index, v);
        return;
    case F_USER_UID: if (p->has_creds) fv_uint(v, p->uid); return;
    case F_GROUP_GID: if (p->has_creds) fv_uint(v, p->gid); return;
    default: return;
    }
}

#define P FIELD_CTX_PROCESS
#define NAME (P | RULES_CTX_PROCESS_NAME)
static const struct field_def proc_defs[] = {
    {"proc.name", FT_STR, FA_NONE, F_PROC_NAME, NAME, 0, FIELD_PROC_COMM, FIELD_REPORTED},
    {"proc.exepath", FT_STR, FA_NONE, F_PROC_EXEPATH, P | RULES_CTX_CWD, 0, FIELD_PROC_IMAGE | FIELD_PROC_CWD,
     FIELD_REPORTED},
    {"proc.cmdline", FT_STR, FA_NONE, F_PROC_CMDLINE, NAME, 0, FIELD_PROC_IMAGE | FIELD_PROC_COMM, FIELD_REPORTED},
    {"proc.args", FT_STR, FA_NONE, F_PROC_ARGS, P, 0, FIELD_PROC_IMAGE, FIELD_REPORTED},
    {"proc.pid", FT_INT, FA_NONE, F_PROC_PID, RULES_CTX_GROUP_ID, 0, 0, FIELD_REPORTED},
    {"proc.tid", FT_INT, FA_NONE, F_PROC_TID, RULES_CTX_THREAD_ID, 0, 0, FIELD_REPORTED},
    {"proc.cwd", FT_STR, FA_NONE, F_PROC_CWD, P | RULES_CTX_CWD, 0, 0, FIELD_REPORTED},
    {"proc.duration", FT_INT, FA_NONE, F_PROC_DURATION, P, 0, 0, FIELD_REPORTED},
    {"proc.ppid", FT_INT, FA_NONE, F_PROC_PPID, P, 0, FIELD_PROC_PARENTS, FIELD_REPORTED},
    {"proc.pname", FT_STR, FA_NONE, F_PROC_PNAME, P, 0, FIELD_PROC_PARENTS, FIELD_REPORTED},
    {"proc.pcmdline", FT_STR, FA_NONE, F_PROC_PCMDLINE, P, 0, FIELD_PROC_PARENTS, FIELD_REPORTED},
    {"proc.aname", FT_STR, FA_ANCESTOR, F_PROC_ANAME, P, 0, FIELD_PROC_PARENTS, FIELD_REPORTED},
    {"proc.apid", FT_INT, FA_ANCESTOR, F_PROC_APID, P, 0, FIELD_PROC_PARENTS, FIELD_REPORTED},
    {"user.uid", FT_UINT, FA_NONE, F_USER_UID, P | RULES_CTX_CREDENTIALS, 0, 0, FIELD_REPORTED},
    {"group.gid", FT_UINT, FA_NONE, F_GROUP_GID, P | RULES_CTX_CREDENTIALS, 0, 0, FIELD_REPORTED},
};
#undef P
#undef NAME

const struct field_class fields_proc_class = {
    "proc", proc_defs, sizeof(proc_defs) / sizeof(proc_defs[0]), proc_extract,
};
