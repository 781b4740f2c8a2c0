/* fields_proc.c - proc.*, thread.*, user.uid, group.gid: the event's
 * process and its ancestors, from the process table (proctab.h) and the
 * event's context. A sandbox's pids are its own namespace's, so the v
 * fields (proc.vpid, thread.vtid, proc.vpgid) are the same numbers.
 */
#include "fields_class.h"

enum {
    F_PROC_NAME = FIELD_BASE_PROC, F_PROC_EXEPATH, F_PROC_CMDLINE, F_PROC_ARGS, F_PROC_PID, F_PROC_TID, F_PROC_CWD,
    F_PROC_DURATION, F_PROC_PPID, F_PROC_PNAME, F_PROC_PCMDLINE, F_PROC_ANAME, F_PROC_APID,
    F_USER_UID, F_GROUP_GID,
    F_PROC_EXE, F_PROC_PEXE, F_PROC_AEXE, F_PROC_PEXEPATH, F_PROC_AEXEPATH, F_PROC_VPID, F_PROC_PVPID,
    F_THREAD_TID, F_THREAD_VTID, F_PROC_SID, F_PROC_SNAME, F_PROC_SID_EXE, F_PROC_SID_EXEPATH, F_PROC_IS_SID_LEADER,
    F_PROC_VPGID, F_PROC_VPGID_NAME, F_PROC_VPGID_EXE, F_PROC_VPGID_EXEPATH, F_PROC_IS_VPGID_LEADER, F_PROC_ENV,
    F_THREAD_CAP_PERMITTED, F_THREAD_CAP_INHERITABLE, F_THREAD_CAP_EFFECTIVE,
    /* the rest of libs' thread class that the table can give */
    F_PROC_PGID, F_PROC_PGID_NAME, F_PROC_PGID_EXE, F_PROC_PGID_EXEPATH, F_PROC_IS_PGID_LEADER, F_PROC_CMDNARGS,
    F_PROC_CMDLENARGS, F_PROC_EXELINE, F_PROC_ACMDLINE, F_PROC_AARGS, F_PROC_AENV, F_THREAD_ISMAIN, F_PROC_PID_TS,
    F_PROC_PPID_TS, F_PROC_PPID_DURATION, F_PROC_LOGINSHELLID,
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

static void pstr_value(const struct pstr *s, struct fval *v)
{
    if (s->len)
        fv_str(v, s->data, s->len);
}

void fields_ancestor(struct evctx *x, const struct fieldref *f, unsigned level, struct fval *out)
{
    out->kind = FV_ABSENT;
    if (level > PROC_ANCESTORS_MAX)
        return;
    const struct proc *a = ancestor(x, level);
    if (!a)
        return;
    switch (f->id) {
    case F_PROC_ANAME: fv_cstr(out, a->name); return;
    case F_PROC_AEXE: pstr_value(&a->exe, out); return;
    case F_PROC_AEXEPATH: pstr_value(&a->exepath, out); return;
    default: fv_int(out, a->tgid); return;
    }
}

/* The leader of p's session (by_sid) or process group: the process whose
 * pid is that id, else the eldest ancestor with the same id, as libs finds
 * it (thread_manager.cpp get_oldest_matching_ancestor). NULL when none is
 * known. */
static const struct proc *leader(struct evctx *x, const struct proc *p, bool by_sid)
{
    int32_t id = by_sid ? p->sid : p->pgid;
    const struct proc *l = proctab_find(x->pt, p, id);
    if (l)
        return l;
    const struct proc *q = p;
    for (unsigned i = 0; i < PROC_ANCESTORS_MAX; i++) {
        const struct proc *up = proctab_parent(x->pt, q);
        if (!up || up == q || (by_sid ? up->sid : up->pgid) != id)
            break;
        l = q = up;
    }
    return l;
}

/* proc.sname and its kin: absent when the id is unknown; "" when no leader
 * is known (libs' answer too). */
static void leader_field(struct evctx *x, const struct proc *p, bool by_sid, int what, struct fval *v)
{
    if (!(by_sid ? p->sid : p->pgid))
        return;
    const struct proc *l = leader(x, p, by_sid);
    if (!l) {
        fv_str(v, "", 0);
        return;
    }
    const struct pstr *s = what == 1 ? &l->exe : &l->exepath;
    if (what == 0)
        fv_str(v, l->name, strlen(l->name));
    else
        fv_str(v, s->len ? s->data : "", s->len);
}

/* Whether s starts an environment entry: a name, then '='. */
static bool is_entry_start(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
                     (i > 0 && s[i] >= '0' && s[i] <= '9')))
        i++;
    return i > 0 && i < n && s[i] == '=';
}

/* proc.env: "NAME=value NAME2=value2"; proc.env[NAME]: NAME's value, spaces
 * trimmed, "" when unset (libs threadinfo.cpp get_env). */
static void env_field(const struct proc *p, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    if (!p->has_env)
        return;
    const char *e = p->env.len ? p->env.data : "";
    size_t len = p->env.len;
    if (!f->argname) {
        fv_str(v, e, len);
        return;
    }
    size_t nlen = f->argname_len;
    fv_str(v, "", 0);
    /* entries are separated by single spaces; a value may hold spaces too,
     * so an entry starts after a space where NAME= follows */
    for (size_t i = 0; i + nlen < len; i++) {
        if ((i == 0 || e[i - 1] == ' ') && memcmp(e + i, f->argname, nlen) == 0 && e[i + nlen] == '=') {
            size_t start = i + nlen + 1, end = start;
            while (end < len && !(e[end] == ' ' && is_entry_start(e + end + 1, len - end - 1)))
                end++;
            while (start < end && e[start] == ' ')
                start++;
            while (end > start && e[end - 1] == ' ')
                end--;
            strbuf_reset(buf);
            strbuf_append(buf, e + start, end - start);
            fv_buf(v, buf);
            return;
        }
    }
}

/* The time since start (0: unknown), saturated, never overflowing: both
 * times are the sandbox's. */
static void duration_since(struct evctx *x, int64_t start, struct fval *v)
{
    int64_t d;
    if (start)
        fv_int(v, !__builtin_sub_overflow(x->time_ns, start, &d) ? d : start < 0 ? INT64_MAX : INT64_MIN);
}

/* proc.acmdline and proc.aargs without an index: libs joins those of
 * every ancestor, parent first (traverse_parent_state), by spaces. */
static void all_ancestors(struct evctx *x, const struct proc *p, bool args, struct fval *v, struct strbuf *buf)
{
    strbuf_reset(buf);
    const struct proc *q = p;
    for (unsigned i = 0; i < PROC_ANCESTORS_MAX; i++) {
        const struct proc *up = proctab_parent(x->pt, q);
        if (!up || up == q)
            break;
        if (buf->len)
            strbuf_putc(buf, ' ');
        if (!args) {
            strbuf_puts(buf, up->name);
            if (up->args.len)
                strbuf_putc(buf, ' ');
        }
        strbuf_append(buf, up->args.data, up->args.len);
        q = up;
    }
    if (buf->len)
        fv_buf(v, buf);
}

/* proc.aenv (libs sinsp_filtercheck_thread.cpp TYPE_AENV): no argument or
 * [0], the process's own environment; [N], the N-th ancestor's; [NAME],
 * NAME's value in the nearest ancestor (the parent first) that sets it. */
static void aenv_field(struct evctx *x, const struct proc *p, const struct fieldref *f, struct fval *v,
                       struct strbuf *buf)
{
    if (!f->argname) {
        const struct proc *a = f->index > 0 ? ancestor(x, (unsigned)f->index) : p;
        if (a && a->has_env)
            fv_str(v, a->env.len ? a->env.data : "", a->env.len);
        return;
    }
    struct fieldref named = *f;
    fv_str(v, "", 0);
    const struct proc *q = p;
    for (unsigned i = 0; i < 20; i++) {   /* libs looks up to 20 levels */
        const struct proc *up = proctab_parent(x->pt, q);
        if (!up || up == q)
            return;
        struct fval one = {0};
        env_field(up, &named, &one, buf);
        if (one.kind == FV_STR && one.len) {
            *v = one;
            return;
        }
        q = up;
    }
}

/* proc.loginshellid: the pid of the oldest process, the event's own
 * included, whose name ends in "sh" (libs' test: bash, sh, zsh...). */
static void login_shell(struct evctx *x, const struct proc *p, struct fval *v)
{
    const struct proc *q = p, *shell = NULL;
    for (unsigned i = 0; q && i <= PROC_ANCESTORS_MAX; i++) {
        size_t n = strlen(q->name);
        if (n >= 2 && q->name[n - 2] == 's' && q->name[n - 1] == 'h')
            shell = q;
        const struct proc *up = proctab_parent(x->pt, q);
        q = up == q ? NULL : up;
    }
    if (shell)
        fv_int(v, shell->tgid);
}

static void proc_extract(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    const struct proc *p = x->proc;
    const Gvisor__Common__ContextData *ctx = x->ev->context;
    switch (f->id) {
    case F_PROC_PID:
    case F_PROC_VPID:
        if (ctx && ctx->thread_group_id > 0)
            fv_int(v, ctx->thread_group_id);
        return;
    case F_PROC_TID:
    case F_THREAD_TID:
    case F_THREAD_VTID:
        if (ctx && ctx->thread_id > 0)
            fv_int(v, ctx->thread_id);
        return;
    case F_THREAD_CAP_PERMITTED:
    case F_THREAD_CAP_INHERITABLE:
    case F_THREAD_CAP_EFFECTIVE:
        return;   /* runsc sends no capabilities */
    case F_THREAD_ISMAIN:
        if (ctx && ctx->thread_id > 0 && ctx->thread_group_id > 0)
            fv_bool(v, ctx->thread_id == ctx->thread_group_id);
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
    case F_PROC_DURATION: duration_since(x, p->start_ns, v); return;
    case F_PROC_PPID:
    case F_PROC_PVPID:
        if ((parent = proctab_parent(x->pt, p)))
            fv_int(v, parent->tgid);
        return;
    case F_PROC_EXE: pstr_value(&p->exe, v); return;
    case F_PROC_PEXE:
        if ((parent = proctab_parent(x->pt, p)))
            pstr_value(&parent->exe, v);
        return;
    case F_PROC_PEXEPATH:
        if ((parent = proctab_parent(x->pt, p)))
            pstr_value(&parent->exepath, v);
        return;
    case F_PROC_AEXE:
    case F_PROC_AEXEPATH:
        fields_ancestor(x, f, f->index < 0 ? 1 : (unsigned)f->index, v);
        return;
    case F_PROC_SID: if (p->sid) fv_int(v, p->sid); return;
    /* the sandbox's pids are the only ones: proc.pgid is proc.vpgid */
    case F_PROC_VPGID: case F_PROC_PGID: if (p->pgid) fv_int(v, p->pgid); return;
    case F_PROC_IS_SID_LEADER: if (p->sid) fv_bool(v, p->sid == p->tgid); return;
    case F_PROC_IS_VPGID_LEADER: case F_PROC_IS_PGID_LEADER: if (p->pgid) fv_bool(v, p->pgid == p->tgid); return;
    case F_PROC_SNAME: leader_field(x, p, true, 0, v); return;
    case F_PROC_SID_EXE: leader_field(x, p, true, 1, v); return;
    case F_PROC_SID_EXEPATH: leader_field(x, p, true, 2, v); return;
    case F_PROC_VPGID_NAME: case F_PROC_PGID_NAME: leader_field(x, p, false, 0, v); return;
    case F_PROC_VPGID_EXE: case F_PROC_PGID_EXE: leader_field(x, p, false, 1, v); return;
    case F_PROC_VPGID_EXEPATH: case F_PROC_PGID_EXEPATH: leader_field(x, p, false, 2, v); return;
    case F_PROC_CMDNARGS: fv_uint(v, p->nargs); return;
    case F_PROC_CMDLENARGS: fv_uint(v, p->lenargs); return;
    case F_PROC_EXELINE:   /* libs: exe, a space, the args */
        strbuf_reset(buf);
        strbuf_append(buf, p->exe.data, p->exe.len);
        strbuf_putc(buf, ' ');
        strbuf_append(buf, p->args.data, p->args.len);
        fv_buf(v, buf);
        return;
    case F_PROC_ACMDLINE:
    case F_PROC_AARGS: {
        bool args = f->id == F_PROC_AARGS;
        if (f->index < 0) {
            all_ancestors(x, p, args, v, buf);
            return;
        }
        const struct proc *a = ancestor(x, (unsigned)f->index);
        if (!a)
            return;
        if (args)
            fv_str(v, a->args.len ? a->args.data : "", a->args.len);
        else
            cmdline(a, v, buf);
        return;
    }
    case F_PROC_AENV: aenv_field(x, p, f, v, buf); return;
    case F_PROC_PID_TS: if (p->start_ns) fv_int(v, p->start_ns); return;
    case F_PROC_PPID_TS:
        if ((parent = proctab_parent(x->pt, p)) && parent->start_ns)
            fv_int(v, parent->start_ns);
        return;
    case F_PROC_PPID_DURATION:
        if ((parent = proctab_parent(x->pt, p)))
            duration_since(x, parent->start_ns, v);
        return;
    case F_PROC_LOGINSHELLID: login_shell(x, p, v); return;
    case F_PROC_ENV: env_field(p, f, v, buf); return;
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
#define PARENTS (FIELD_PROC_IMAGE | FIELD_PROC_PARENTS)
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
    {"proc.exe", FT_STR, FA_NONE, F_PROC_EXE, P, 0, FIELD_PROC_IMAGE, FIELD_REPORTED},
    {"proc.pexe", FT_STR, FA_NONE, F_PROC_PEXE, P, 0, PARENTS, FIELD_REPORTED},
    {"proc.aexe", FT_STR, FA_ANCESTOR, F_PROC_AEXE, P, 0, PARENTS, FIELD_REPORTED},
    {"proc.pexepath", FT_STR, FA_NONE, F_PROC_PEXEPATH, P | RULES_CTX_CWD, 0, PARENTS | FIELD_PROC_CWD,
     FIELD_REPORTED},
    {"proc.aexepath", FT_STR, FA_ANCESTOR, F_PROC_AEXEPATH, P | RULES_CTX_CWD, 0, PARENTS | FIELD_PROC_CWD,
     FIELD_REPORTED},
    {"proc.vpid", FT_INT, FA_NONE, F_PROC_VPID, RULES_CTX_GROUP_ID, 0, 0, FIELD_REPORTED},
    {"proc.pvpid", FT_INT, FA_NONE, F_PROC_PVPID, P, 0, FIELD_PROC_PARENTS, FIELD_REPORTED},
    {"thread.tid", FT_INT, FA_NONE, F_THREAD_TID, RULES_CTX_THREAD_ID, 0, 0, FIELD_REPORTED},
    {"thread.vtid", FT_INT, FA_NONE, F_THREAD_VTID, RULES_CTX_THREAD_ID, 0, 0, FIELD_REPORTED},
    {"proc.sid", FT_INT, FA_NONE, F_PROC_SID, P, 0, FIELD_PROC_SESSION, FIELD_REPORTED},
    {"proc.sname", FT_STR, FA_NONE, F_PROC_SNAME, NAME, 0, FIELD_PROC_SESSION | FIELD_PROC_PARENTS, FIELD_REPORTED},
    {"proc.sid.exe", FT_STR, FA_NONE, F_PROC_SID_EXE, P, 0, FIELD_PROC_SESSION | PARENTS, FIELD_REPORTED},
    {"proc.sid.exepath", FT_STR, FA_NONE, F_PROC_SID_EXEPATH, P | RULES_CTX_CWD, 0,
     FIELD_PROC_SESSION | PARENTS | FIELD_PROC_CWD, FIELD_REPORTED},
    {"proc.is_sid_leader", FT_BOOL, FA_NONE, F_PROC_IS_SID_LEADER, P, 0, FIELD_PROC_SESSION, FIELD_REPORTED},
    {"proc.vpgid", FT_INT, FA_NONE, F_PROC_VPGID, P, 0, FIELD_PROC_SESSION, FIELD_REPORTED},
    {"proc.vpgid.name", FT_STR, FA_NONE, F_PROC_VPGID_NAME, NAME, 0, FIELD_PROC_SESSION | FIELD_PROC_PARENTS,
     FIELD_REPORTED},
    {"proc.vpgid.exe", FT_STR, FA_NONE, F_PROC_VPGID_EXE, P, 0, FIELD_PROC_SESSION | PARENTS, FIELD_REPORTED},
    {"proc.vpgid.exepath", FT_STR, FA_NONE, F_PROC_VPGID_EXEPATH, P | RULES_CTX_CWD, 0,
     FIELD_PROC_SESSION | PARENTS | FIELD_PROC_CWD, FIELD_REPORTED},
    {"proc.is_vpgid_leader", FT_BOOL, FA_NONE, F_PROC_IS_VPGID_LEADER, P, 0, FIELD_PROC_SESSION, FIELD_REPORTED},
    {"proc.env", FT_STR, FA_ENV_NAME, F_PROC_ENV, P, RULES_OPT_ENVV | RULES_OPT_ENV, FIELD_PROC_IMAGE | FIELD_PROC_ENV,
     FIELD_REPORTED},
    /* runsc's credentials carry uids and gids, no capability sets */
    {"thread.cap_permitted", FT_STR, FA_NONE, F_THREAD_CAP_PERMITTED, 0, 0, 0, FIELD_NEVER},
    {"thread.cap_inheritable", FT_STR, FA_NONE, F_THREAD_CAP_INHERITABLE, 0, 0, 0, FIELD_NEVER},
    {"thread.cap_effective", FT_STR, FA_NONE, F_THREAD_CAP_EFFECTIVE, 0, 0, 0, FIELD_NEVER},
    {"proc.pgid", FT_INT, FA_NONE, F_PROC_PGID, P, 0, FIELD_PROC_SESSION, FIELD_REPORTED},
    {"proc.pgid.name", FT_STR, FA_NONE, F_PROC_PGID_NAME, NAME, 0, FIELD_PROC_SESSION | FIELD_PROC_PARENTS,
     FIELD_REPORTED},
    {"proc.pgid.exe", FT_STR, FA_NONE, F_PROC_PGID_EXE, P, 0, FIELD_PROC_SESSION | PARENTS, FIELD_REPORTED},
    {"proc.pgid.exepath", FT_STR, FA_NONE, F_PROC_PGID_EXEPATH, P | RULES_CTX_CWD, 0,
     FIELD_PROC_SESSION | PARENTS | FIELD_PROC_CWD, FIELD_REPORTED},
    {"proc.is_pgid_leader", FT_BOOL, FA_NONE, F_PROC_IS_PGID_LEADER, P, 0, FIELD_PROC_SESSION, FIELD_REPORTED},
    {"proc.cmdnargs", FT_UINT, FA_NONE, F_PROC_CMDNARGS, P, 0, FIELD_PROC_IMAGE, FIELD_REPORTED},
    {"proc.cmdlenargs", FT_UINT, FA_NONE, F_PROC_CMDLENARGS, P, 0, FIELD_PROC_IMAGE, FIELD_REPORTED},
    {"proc.exeline", FT_STR, FA_NONE, F_PROC_EXELINE, P, 0, FIELD_PROC_IMAGE, FIELD_REPORTED},
    {"proc.acmdline", FT_STR, FA_INDEX, F_PROC_ACMDLINE, NAME, 0, PARENTS | FIELD_PROC_COMM, FIELD_REPORTED},
    {"proc.aargs", FT_STR, FA_INDEX, F_PROC_AARGS, P, 0, PARENTS, FIELD_REPORTED},
    {"proc.aenv", FT_STR, FA_ENV_LEVEL, F_PROC_AENV, P, RULES_OPT_ENVV | RULES_OPT_ENV,
     PARENTS | FIELD_PROC_ENV, FIELD_REPORTED},
    {"thread.ismain", FT_BOOL, FA_NONE, F_THREAD_ISMAIN, RULES_CTX_THREAD_ID | RULES_CTX_GROUP_ID, 0, 0,
     FIELD_REPORTED},
    {"proc.pid.ts", FT_INT, FA_NONE, F_PROC_PID_TS, P, 0, 0, FIELD_REPORTED},
    {"proc.ppid.ts", FT_INT, FA_NONE, F_PROC_PPID_TS, P, 0, FIELD_PROC_PARENTS, FIELD_REPORTED},
    {"proc.ppid.duration", FT_INT, FA_NONE, F_PROC_PPID_DURATION, P, 0, FIELD_PROC_PARENTS, FIELD_REPORTED},
    {"proc.loginshellid", FT_INT, FA_NONE, F_PROC_LOGINSHELLID, NAME, 0, PARENTS | FIELD_PROC_COMM,
     FIELD_REPORTED},
};
#undef P
#undef NAME
#undef PARENTS

const struct field_class fields_proc_class = {
    "proc", proc_defs, sizeof(proc_defs) / sizeof(proc_defs[0]), proc_extract,
};
