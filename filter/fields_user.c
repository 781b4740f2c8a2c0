/* fields_user.c - user.* and group.* names: the event's process's uid and
 * gid (the process table's, from credentials) looked up in its container's
 * own /etc/passwd and /etc/group (container/container.h), as libs'
 * sinsp_filter_check_user and _group do (userspace/libsinsp/
 * sinsp_filtercheck_user.cpp:100-125, sinsp_filtercheck_group.cpp:58-68 at
 * libs 48dfd53cd): uid 0 is root (home /root) and gid 0 root when the files
 * do not say; any other uid or gid they do not name is the string "<NA>",
 * not an absent value, so upstream's `user.name in ("<NA>","N/A","")`
 * (falco-incubating_rules.yaml, known_user_in_container) holds for it as in
 * Falco. gVisor reports no audit login uid, so user.loginuid is -1, Falco's
 * value for a task without a login session, and user.loginname "<NA>".
 * user.uid and group.gid themselves are the proc class's. */
#include "container.h"
#include "fields_class.h"

enum {
    F_USER_NAME = FIELD_BASE_USER,
    F_USER_HOMEDIR, F_USER_SHELL, F_USER_LOGINUID, F_USER_LOGINNAME, F_GROUP_NAME,
};

/* libs' name for what the files do not say (sinsp_usergroup_manager's
 * fallback user, userspace/libsinsp/user.cpp:226-229). */
#define USER_UNKNOWN "<NA>"

static void user_extract(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    (void)buf;
    const struct proc *p = x->proc;
    if (!p)
        return;
    if (f->id == F_USER_LOGINUID) {
        fv_int(v, -1);
        return;
    }
    if (!p->has_creds || f->id == F_USER_LOGINNAME) {   /* no uid to look up: libs' fallback */
        fv_cstr(v, USER_UNKNOWN);
        return;
    }
    const struct container_record *r = fields_container_record(x);
    if (f->id == F_GROUP_NAME) {
        const struct container_group *g = container_group_by_gid(r, p->gid);
        fv_cstr(v, g ? g->name : p->gid == 0 ? "root" : USER_UNKNOWN);
        return;
    }
    const struct container_user *u = container_user_by_uid(r, p->uid);
    switch (f->id) {
    case F_USER_NAME: fv_cstr(v, u ? u->name : p->uid == 0 ? "root" : USER_UNKNOWN); return;
    case F_USER_HOMEDIR: fv_cstr(v, u ? u->home : p->uid == 0 ? "/root" : USER_UNKNOWN); return;
    case F_USER_SHELL: fv_cstr(v, u ? u->shell : USER_UNKNOWN); return;
    default: return;
    }
}

#define U (FIELD_CTX_PROCESS | RULES_CTX_CREDENTIALS | RULES_CTX_CONTAINER_ID)
static const struct field_def user_defs[] = {
    {"user.name", FT_STR, FA_NONE, F_USER_NAME, U, 0, 0, FIELD_REPORTED},
    {"user.homedir", FT_STR, FA_NONE, F_USER_HOMEDIR, U, 0, 0, FIELD_REPORTED},
    {"user.shell", FT_STR, FA_NONE, F_USER_SHELL, U, 0, 0, FIELD_REPORTED},
    {"user.loginuid", FT_INT, FA_NONE, F_USER_LOGINUID, FIELD_CTX_PROCESS, 0, 0, FIELD_REPORTED},
    {"user.loginname", FT_STR, FA_NONE, F_USER_LOGINNAME, FIELD_CTX_PROCESS, 0, 0, FIELD_REPORTED},
    {"group.name", FT_STR, FA_NONE, F_GROUP_NAME, U, 0, 0, FIELD_REPORTED},
};
#undef U

const struct field_class fields_user_class = {
    "user", user_defs, sizeof(user_defs) / sizeof(user_defs[0]), user_extract,
};
