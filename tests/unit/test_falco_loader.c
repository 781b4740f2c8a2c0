/* test_falco_loader.c - Falco's own rule loader tests, case by case: each
 * case is one of falcosecurity/falco's unit tests (at the commit of
 * RULES_FALCO_COMMIT), named by its file and line, with upstream's rules
 * text and upstream's answer: the file loads or fails (with upstream's
 * message), warns (with upstream's message), so many rules are enabled, and
 * what the compiled condition matches on crafted events where upstream
 * asserts the compiled condition.
 *
 * Adapted where seccheckd has no counterpart, each said at the case:
 *  - outputs' %user.name is %user.uid (seccheckd has no user.name field yet);
 *  - "which rules match" stands for upstream's get_compiled_rule_condition:
 *    the condition's meaning on events, not its printed form;
 *  - the cases of the filter language's newer features (transformers,
 *    oneof/anyof/allof) are skipped, saying why, if it lacks them;
 *  - evt.dir's deprecation (Falco dropped enter events; runsc sends them,
 *    so seccheckd's evt.dir means what it says) is not warned about:
 *    test_rule_loader.cpp:1588, 1606, 1621, 1646 are left out for it;
 *  - test_plugin_requirements.cpp's cases have one plugin here, the
 *    container plugin's fields built in, at any version: its cases are
 *    written with container where upstream's plugin is loaded, and keep
 *    upstream's other names where it is not;
 *  - test_enable_rule.cpp, test_rulesets.cpp, test_alt_rule_loader.cpp,
 *    test_add_source.cpp and test_extra_output.cpp test the engine's API
 *    (enabling by name or tag, alternate loaders, extra output formats), not
 *    what a rules file means: left out.
 * Semantics upstream states in code and this file tests on its own
 * (rule_loader_compiler.cpp, rule_loader_collector.cpp): lists have no
 * order against conditions, a list inside a list and a macro inside a
 * macro go by definition order, quoted list items are the filter
 * language's, skip-if-unknown-filter, unused macros' unknown fields.
 */
#include "rules_util.h"

#define UPSTREAM "falco unit_tests/engine/test_rule_loader.cpp:"
#define PLUGINS "falco unit_tests/engine/test_plugin_requirements.cpp:"

/* Falco's messages (userspace/engine/rule_loading_messages.h). */
#define WARNING_APPEND "'append' key is deprecated. Add an 'append' entry"
#define WARNING_ENABLED "The standalone 'enabled' key usage is deprecated."
#define ERROR_OVERRIDE_APPEND "Keys 'override' and 'append: true' cannot be used together."
#define ERROR_NO_PREVIOUS_MACRO "Macro uses 'append' or 'override.condition: append' but no macro by that name"
#define ERROR_NO_PREVIOUS_LIST "List uses 'append' or 'override.items: append' but no list by that name"
#define ERROR_NO_PREVIOUS_RULE_APPEND "Rule uses 'append' or 'override.<key>: append' but no rule by that name"
#define ERROR_NO_PREVIOUS_RULE_REPLACE "An 'override.<key>: replace' to a rule was requested but no rule by that name"
#define WARNING_NO_EVTTYPE "Rule matches too many evt.type values"

#define OUT "user=%user.uid command=%proc.cmdline file=%fd.name"
#define ENABLED(n) .enabled1 = (n) + 1

enum needs { NEEDS_NOTHING, NEEDS_MODIFIERS, NEEDS_TRANSFORMERS };

struct fcase {
    const char *name;
    const char *where;          /* the upstream file and line */
    const char *yaml;
    bool loads;
    const char *error;          /* a substring of an error (the case fails) */
    const char *warning;        /* a substring of a warning it must give */
    const char *no_warning;     /* a substring no warning may hold; "" none at all */
    int enabled1;               /* rules enabled, plus one (0: not checked): ENABLED(n) */
    /* "KIND NAME [ARG] => RULE,RULE | ...": events and the rules they raise
     * (KIND open, openat, close or execve, by process NAME) */
    const char *events;
    const char *desc;           /* the first rule's description */
    const char *output;         /* a substring of the first alert's output */
    const char *priority;       /* the first alert's priority */
    const char *tags;           /* the first alert's tags */
    enum needs needs;
};

/* ---- events ---- */

static struct ctx_parts CP;
static int32_t next_tgid = 100;

static const struct event *open_ev(uint64_t sysno, const char *name)
{
    static Gvisor__Syscall__Open m;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__open__init(&m);
    gvisor__syscall__exit__init(&x);
    x.result = 3;
    m.context_data = mk_ctx(&CP, next_tgid++, name, 1700000000000000001);
    m.exit = &x;
    m.sysno = sysno;
    m.fd = -100;
    m.pathname = (char *)"/etc/x";
    return evb_build(&B, 1, 7, 0, &m.base);
}

static const struct event *close_ev(const char *name)
{
    static Gvisor__Syscall__Close m;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__close__init(&m);
    gvisor__syscall__exit__init(&x);
    m.context_data = mk_ctx(&CP, next_tgid++, name, 1700000000000000001);
    m.exit = &x;
    m.sysno = 3;
    m.fd = 3;
    return evb_build(&B, 1, 8, 0, &m.base);
}

static const struct event *exec_ev(const char *name, const char *arg)
{
    static Gvisor__Syscall__Execve m;
    static Gvisor__Syscall__Exit x;
    static char path[128];
    static char *argv[2];
    gvisor__syscall__execve__init(&m);
    gvisor__syscall__exit__init(&x);
    snprintf(path, sizeof(path), "/bin/%s", name);
    argv[0] = (char *)name;
    argv[1] = (char *)arg;
    m.context_data = mk_ctx(&CP, next_tgid++, name, 1700000000000000001);
    m.exit = &x;
    m.sysno = 59;
    m.pathname = path;
    m.argv = argv;
    m.n_argv = arg ? 2 : 1;
    return evb_build(&B, 1, 11, 0, &m.base);
}

static const struct event *event_of(const char *spec)
{
    char kind[16], name[64], arg[128] = "";
    int n = sscanf(spec, "%15s %63s %127[^\n]", kind, name, arg);
    if (n < 2)
        fail_msg("bad event '%s'", spec);
    for (size_t k = strlen(arg); k > 0 && arg[k - 1] == ' '; k--)
        arg[k - 1] = '\0';
    if (strcmp(kind, "open") == 0)
        return open_ev(2, name);
    if (strcmp(kind, "openat") == 0)
        return open_ev(257, name);
    if (strcmp(kind, "close") == 0)
        return close_ev(name);
    if (strcmp(kind, "execve") == 0)
        return exec_ev(name, n == 3 ? arg : NULL);
    fail_msg("bad event kind '%s'", kind);
    return NULL;
}

/* ---- what the filter language has ---- */

static bool filter_has(const char *cond)
{
    char text[512];
    snprintf(text, sizeof(text), "- rule: r\n  desc: d\n  condition: %s\n  output: o\n  priority: Notice\n", cond);
    struct rules_diag d = {0};
    struct rule_set *rs = rule_set_load_buffer("probe.yaml", text, strlen(text), &d);
    rules_diag_free(&d);
    rule_set_free(rs);
    return rs != NULL;
}

/* ---- running a case ---- */

static bool diag_has(const struct rules_diag *d, bool errors, const char *s)
{
    for (size_t i = 0; i < d->count; i++)
        if (d->items[i].is_error == errors && strstr(d->items[i].message, s))
            return true;
    return false;
}

static void print_diag(const struct rules_diag *d)
{
    rules_diag_print(d, stderr);
}

static void check_events(struct rules_engine *e, const struct fcase *c)
{
    char spec[1024];
    snprintf(spec, sizeof(spec), "%s", c->events);
    char *save = NULL;
    for (char *one = strtok_r(spec, "|", &save); one; one = strtok_r(NULL, "|", &save)) {
        char *arrow = strstr(one, "=>");
        if (!arrow)
            fail_msg("%s: bad event spec '%s'", c->name, one);
        *arrow = '\0';
        char *want = arrow + 2;
        while (*want == ' ')
            want++;
        size_t wl = strlen(want);
        while (wl && want[wl - 1] == ' ')
            want[--wl] = '\0';
        const struct event *ev = event_of(one);
        eval_count(e, ev, &L);
        char got[512] = "";
        for (size_t i = 0; i < L.count; i++)
            snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? "," : "", L.items[i].rule);
        if (strcmp(got, want) != 0)
            fail_msg("%s (%s): '%s' raised '%s', upstream's condition raises '%s'", c->name, c->where, one, got, want);
    }
}

/* A sequence item (seccheckd's own: Falco's reader skips it, "Unknown top
 * level item", rule_loader_reader.cpp:959-963) that no case's events can
 * complete: every case that loads must load, warn, enable and match the
 * same with it in the file. */
#define SEQUENCE_ITEM                                                                                                 \
    "\n- sequence: seccheckd sequence beside Falco's items\n  desc: d\n  by: [container.id]\n  within: 1m\n"       \
    "  steps:\n    - name: attach\n      condition: evt.type = ptrace and evt.arg.request = PTRACE_ATTACH\n"         \
    "    - name: run\n      condition: evt.type = execve and proc.pid = %attach.proc.pid\n"                          \
    "  output: \"attached by %attach.proc.name then ran %proc.cmdline\"\n  priority: WARNING\n"

static void run_case_text(const struct fcase *c, const char *yaml, bool with_sequence);

static void run_case(void **state)
{
    const struct fcase *c = *state;
    if (c->needs == NEEDS_MODIFIERS && !filter_has("proc.name startswith oneof (a, b)"))
        skip();   /* the filter language has no oneof/anyof/allof yet */
    if (c->needs == NEEDS_TRANSFORMERS && !filter_has("toupper(proc.name) = A"))
        skip();   /* the filter language has no transformers yet */
    run_case_text(c, c->yaml, false);
    if (!c->loads)
        return;
    size_t n = strlen(c->yaml);
    char *with = malloc(n + sizeof(SEQUENCE_ITEM));
    assert_non_null(with);
    memcpy(with, c->yaml, n);
    memcpy(with + n, SEQUENCE_ITEM, sizeof(SEQUENCE_ITEM));
    run_case_text(c, with, true);
    free(with);
}

static void run_case_text(const struct fcase *c, const char *yaml, bool with_sequence)
{
    struct rules_diag d = {0};
    struct rule_set *rs = rule_set_load_buffer("rules.yaml", yaml, strlen(yaml), &d);
    if (with_sequence && rs && rule_set_sequence_count(rs) != 1)
        fail_msg("%s (%s): the sequence item beside the case's did not load", c->name, c->where);
    if ((rs != NULL) != c->loads) {
        print_diag(&d);
        fail_msg("%s (%s): %s, upstream: %s", c->name, c->where, rs ? "loaded" : "failed",
                 c->loads ? "loads" : "fails");
    }
    if (c->error && !diag_has(&d, true, c->error)) {
        print_diag(&d);
        fail_msg("%s (%s): no error holding '%s'", c->name, c->where, c->error);
    }
    if (c->warning && !diag_has(&d, false, c->warning)) {
        print_diag(&d);
        fail_msg("%s (%s): no warning holding '%s'", c->name, c->where, c->warning);
    }
    if (c->no_warning && (c->no_warning[0] ? diag_has(&d, false, c->no_warning) : d.warnings > 0)) {
        print_diag(&d);
        fail_msg("%s (%s): a warning upstream does not give ('%s')", c->name, c->where, c->no_warning);
    }
    rules_diag_free(&d);
    if (!rs)
        return;
    struct rule_set_stats st;
    rule_set_get_stats(rs, &st);
    if (c->enabled1 && (int)st.rules_enabled != c->enabled1 - 1)
        fail_msg("%s (%s): %zu rules enabled, upstream %d", c->name, c->where, st.rules_enabled, c->enabled1 - 1);
    if (c->desc) {
        struct rule_info info;
        rule_set_rule_info(rs, 0, &info);
        if (strcmp(info.desc, c->desc) != 0)
            fail_msg("%s (%s): desc '%s', upstream '%s'", c->name, c->where, info.desc, c->desc);
    }
    struct rules_engine *e = engine_with(NULL);
    rules_engine_set_rules(e, rs);
    if (c->events)
        check_events(e, c);
    if (c->output || c->priority || c->tags) {
        if (L.count == 0)
            fail_msg("%s: no alert to check the output of (the last event must raise one)", c->name);
        const struct alert *a = &L.items[0];
        if (c->output && !strstr(a->output, c->output))
            fail_msg("%s (%s): output '%s' lacks '%s'", c->name, c->where, a->output, c->output);
        if (c->priority && strcmp(rules_priority_name(a->priority), c->priority) != 0)
            fail_msg("%s (%s): priority %s, upstream %s", c->name, c->where, rules_priority_name(a->priority),
                     c->priority);
        if (c->tags && strcmp(a->tags, c->tags) != 0)
            fail_msg("%s (%s): tags %s, upstream %s", c->name, c->where, a->tags, c->tags);
    }
    rules_engine_free(e);
}

/* ---- the cases ---- */

#define RULE_BASE(cond, extra)                                                                                        \
    "- rule: test_rule\n  desc: test rule description\n  condition: " cond "\n  output: " OUT "\n  priority: INFO\n" \
    extra

static const struct fcase cases[] = {
    {.name = "list_append", .where = UPSTREAM "12", .loads = true, .no_warning = WARNING_APPEND,
     .yaml = "- list: shell_binaries\n  items: [ash, bash, csh, ksh, sh, tcsh, zsh, dash]\n\n"
             "- rule: legit_rule\n  desc: legit rule description\n"
             "  condition: evt.type=open and proc.name in (shell_binaries)\n  output: " OUT "\n  priority: INFO\n\n"
             "- list: shell_binaries\n  items: [pwsh]\n  override:\n    items: append\n",
     /* (evt.type = open and proc.name in (ash, bash, csh, ksh, sh, tcsh, zsh, dash, pwsh)): the
      * list appended after the rule that uses it */
     .events = "open pwsh => legit_rule | open dash => legit_rule | open cat => | openat bash =>"},
    {.name = "condition_append", .where = UPSTREAM "36", .loads = true,
     .yaml = "- macro: interactive\n  condition: >\n    ((proc.aname=sshd and proc.name != sshd) or\n"
             "    proc.name=systemd-logind or proc.name=login)\n\n"
             "- rule: legit_rule\n  desc: legit rule description\n  condition: evt.type=open and interactive\n"
             "  output: " OUT "\n  priority: INFO\n\n"
             "- macro: interactive\n  condition: or proc.name = ssh\n  override:\n    condition: append\n",
     .events = "open ssh => legit_rule | open login => legit_rule | open systemd-logind => legit_rule | open sshd =>"},
    {.name = "rule_override_append", .where = UPSTREAM "62", .loads = true, .no_warning = WARNING_APPEND,
     .yaml = "- rule: legit_rule\n  desc: legit rule description\n  condition: evt.type=open\n  output: " OUT
             "\n  priority: INFO\n\n"
             "- rule: legit_rule\n  desc: with append\n  condition: and proc.name = cat\n  output: proc=%proc.name\n"
             "  override:\n    desc: append\n    condition: append\n    output: append\n",
     .events = "open bash => | open cat => legit_rule", .desc = "legit rule description with append",
     .output = "command=cat file=/etc/x proc=cat"},
    {.name = "rule_append", .where = UPSTREAM "98", .loads = true, .warning = WARNING_APPEND,
     .yaml = "- rule: legit_rule\n  desc: legit rule description\n  condition: evt.type=open\n  output: " OUT
             "\n  priority: INFO\n\n- rule: legit_rule\n  condition: and proc.name = cat\n  append: true\n",
     .events = "open bash => | open cat => legit_rule"},
    {.name = "rule_override_replace", .where = UPSTREAM "120", .loads = true,
     .yaml = "- rule: legit_rule\n  desc: legit rule description\n  condition: evt.type=open\n  output: " OUT
             "\n  priority: INFO\n\n- rule: legit_rule\n  desc: a replaced legit description\n"
             "  condition: evt.type = close\n  override:\n    desc: replace\n    condition: replace\n",
     .events = "open cat => | close cat => legit_rule", .desc = "a replaced legit description",
     .output = "user=1000 command=cat file="},
    {.name = "rule_override_append_replace", .where = UPSTREAM "151", .loads = true,
     .yaml = "- rule: legit_rule\n  desc: legit rule description\n  condition: evt.type = close\n  output: " OUT
             "\n  priority: INFO\n\n- rule: legit_rule\n  desc: a replaced legit description\n"
             "  condition: and proc.name = cat\n  priority: WARNING\n"
             "  override:\n    desc: replace\n    condition: append\n    priority: replace\n",
     .events = "close bash => | close cat => legit_rule", .desc = "a replaced legit description",
     .priority = "Warning"},
    {.name = "rule_incorrect_override_type", .where = UPSTREAM "187", .loads = false,
     .error = "Key 'priority' cannot be appended to, use 'replace' instead",
     .yaml = "- rule: failing_rule\n  desc: legit rule description\n  condition: evt.type = close\n  output: " OUT
             "\n  priority: INFO\n\n- rule: failing_rule\n  desc: an appended incorrect field\n"
             "  condition: and proc.name = cat\n  priority: WARNING\n"
             "  override:\n    desc: replace\n    condition: append\n    priority: append\n"},
    {.name = "rule_incorrect_append_override", .where = UPSTREAM "212", .loads = false, .warning = WARNING_APPEND,
     .error = ERROR_OVERRIDE_APPEND,
     .yaml = "- rule: failing_rule\n  desc: legit rule description\n  condition: evt.type = close\n  output: " OUT
             "\n  priority: INFO\n\n- rule: failing_rule\n  desc: an appended incorrect field\n"
             "  condition: and proc.name = cat\n  append: true\n  override:\n    desc: replace\n    condition: append\n"},
    {.name = "macro_override_append_before_macro_definition", .where = UPSTREAM "238", .loads = false,
     .error = ERROR_NO_PREVIOUS_MACRO,
     .yaml = "\n- macro: open_simple\n  condition: or evt.type = openat2\n  override:\n    condition: append\n\n"
             "- macro: open_simple\n  condition: evt.type in (open,openat)\n\n- rule: test_rule\n  desc: simple rule\n"
             "  condition: open_simple\n  output: command=%proc.cmdline\n  priority: INFO\n"},
    {.name = "macro_override_replace_before_macro_definition", .where = UPSTREAM "263", .loads = true,
     /* the first item defines the macro, which the second redefines: evt.type in (open, openat) */
     .yaml = "\n- macro: open_simple\n  condition: or evt.type = openat2\n  override:\n    condition: replace\n\n"
             "- macro: open_simple\n  condition: evt.type in (open,openat)\n\n- rule: test_rule\n  desc: simple rule\n"
             "  condition: open_simple\n  output: command=%proc.cmdline\n  priority: INFO\n",
     .events = "open cat => test_rule | openat cat => test_rule | close cat =>"},
    {.name = "macro_append_before_macro_definition", .where = UPSTREAM "288", .loads = false,
     .error = ERROR_NO_PREVIOUS_MACRO,
     .yaml = "\n- macro: open_simple\n  condition: or evt.type = openat2\n  append: true\n\n"
             "- macro: open_simple\n  condition: evt.type in (open,openat)\n\n- rule: test_rule\n  desc: simple rule\n"
             "  condition: open_simple\n  output: command=%proc.cmdline\n  priority: INFO\n"},
    {.name = "macro_override_append_after_macro_definition", .where = UPSTREAM "312", .loads = true,
     .yaml = "\n- macro: open_simple\n  condition: evt.type in (open,openat)\n\n"
             "- macro: open_simple\n  condition: or evt.type = openat2\n  override:\n    condition: append\n\n"
             "- rule: test_rule\n  desc: simple rule\n  condition: open_simple\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n",
     .events = "open cat => test_rule | openat cat => test_rule | close cat =>"},
    {.name = "macro_append_after_macro_definition", .where = UPSTREAM "338", .loads = true,
     .yaml = "\n- macro: open_simple\n  condition: evt.type in (open,openat)\n\n"
             "- macro: open_simple\n  condition: or evt.type = openat2\n  append: true\n\n"
             "- rule: test_rule\n  desc: simple rule\n  condition: open_simple\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n",
     .events = "open cat => test_rule | openat cat => test_rule | close cat =>"},
    {.name = "rule_override_append_before_rule_definition", .where = UPSTREAM "363", .loads = false,
     .error = ERROR_NO_PREVIOUS_RULE_APPEND,
     .yaml = "- rule: test_rule\n  condition: and proc.name = cat\n  override:\n    condition: append\n\n"
             "- rule: test_rule\n  desc: simple rule\n  condition: evt.type in (open,openat)\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n"},
    {.name = "rule_override_replace_before_rule_definition", .where = UPSTREAM "383", .loads = false,
     .error = ERROR_NO_PREVIOUS_RULE_REPLACE,
     .yaml = "- rule: test_rule\n  condition: and proc.name = cat\n  override:\n    condition: replace\n\n"
             "- rule: test_rule\n  desc: simple rule\n  condition: evt.type in (open,openat)\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n"},
    {.name = "rule_append_before_rule_definition", .where = UPSTREAM "403", .loads = false,
     .error = ERROR_NO_PREVIOUS_RULE_APPEND,
     .yaml = "- rule: test_rule\n  condition: and proc.name = cat\n  append: true\n\n"
             "- rule: test_rule\n  desc: simple rule\n  condition: evt.type in (open,openat)\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n"},
    {.name = "rule_override_append_after_rule_definition", .where = UPSTREAM "422", .loads = true,
     .yaml = "- rule: test_rule\n  desc: simple rule\n  condition: evt.type in (open,openat)\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n\n"
             "- rule: test_rule\n  condition: and proc.name = cat\n  override:\n    condition: append\n",
     .events = "open cat => test_rule | openat cat => test_rule | openat bash =>"},
    {.name = "rule_append_after_rule_definition", .where = UPSTREAM "442", .loads = true,
     .yaml = "- rule: test_rule\n  desc: simple rule\n  condition: evt.type in (open,openat)\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n\n"
             "- rule: test_rule\n  condition: and proc.name = cat\n  append: true\n",
     .events = "open cat => test_rule | openat cat => test_rule | openat bash =>"},
    {.name = "list_override_append_wrong_key", .where = UPSTREAM "461", .loads = true,
     .warning = "Unknown key 'override_written_wrong'",
     /* the misspelt key is not an override: the list is defined twice, the second wins */
     .yaml = "- list: dev_creation_binaries\n  items: [\"csi-provisioner\", \"csi-attacher\"]\n"
             "  override_written_wrong:\n    items: append\n\n- list: dev_creation_binaries\n  items: [blkid]\n\n"
             "- rule: test_rule\n  desc: simple rule\n  condition: evt.type = execve and proc.name in (dev_creation_binaries)\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n",
     .events = "execve blkid => test_rule | execve csi-attacher =>"},
    {.name = "list_override_append_before_list_definition", .where = UPSTREAM "490", .loads = false,
     .error = ERROR_NO_PREVIOUS_LIST,
     .yaml = "- list: dev_creation_binaries\n  items: [\"csi-provisioner\", \"csi-attacher\"]\n  override:\n"
             "    items: append\n\n- list: dev_creation_binaries\n  items: [blkid]\n\n"
             "- rule: test_rule\n  desc: simple rule\n  condition: evt.type = execve and proc.name in (dev_creation_binaries)\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n"},
    {.name = "list_override_replace_before_list_definition", .where = UPSTREAM "514", .loads = true,
     .yaml = "- list: dev_creation_binaries\n  items: [\"csi-provisioner\", \"csi-attacher\"]\n  override:\n"
             "    items: replace\n\n- list: dev_creation_binaries\n  items: [blkid]\n\n"
             "- rule: test_rule\n  desc: simple rule\n  condition: evt.type = execve and proc.name in (dev_creation_binaries)\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n",
     .events = "execve blkid => test_rule | execve csi-attacher =>"},
    {.name = "list_append_before_list_definition", .where = UPSTREAM "539", .loads = false,
     .error = ERROR_NO_PREVIOUS_LIST,
     .yaml = "- list: dev_creation_binaries\n  items: [\"csi-provisioner\", \"csi-attacher\"]\n  append: true\n\n"
             "- list: dev_creation_binaries\n  items: [blkid]\n\n"
             "- rule: test_rule\n  desc: simple rule\n  condition: evt.type = execve and proc.name in (dev_creation_binaries)\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n"},
    {.name = "list_override_append_after_list_definition", .where = UPSTREAM "562", .loads = true,
     .yaml = "- list: dev_creation_binaries\n  items: [blkid]\n\n"
             "- list: dev_creation_binaries\n  items: [\"csi-provisioner\", \"csi-attacher\"]\n  override:\n"
             "    items: append\n\n"
             "- rule: test_rule\n  desc: simple rule\n  condition: evt.type = execve and proc.name in (dev_creation_binaries)\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n",
     .events = "execve blkid => test_rule | execve csi-attacher => test_rule | execve csi-provisioner => test_rule | "
               "execve sh =>"},
    {.name = "list_append_after_list_definition", .where = UPSTREAM "586", .loads = true,
     .yaml = "- list: dev_creation_binaries\n  items: [blkid]\n\n"
             "- list: dev_creation_binaries\n  items: [\"csi-provisioner\", \"csi-attacher\"]\n  append: true\n\n"
             "- rule: test_rule\n  desc: simple rule\n  condition: evt.type = execve and proc.name in (dev_creation_binaries)\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n",
     .events = "execve blkid => test_rule | execve csi-attacher => test_rule | execve sh =>"},
    {.name = "rule_override_without_field", .where = UPSTREAM "608", .loads = false,
     .error = "An append override for 'condition' was specified but 'condition' is not defined",
     .yaml = "- rule: failing_rule\n  desc: legit rule description\n  condition: evt.type = close\n  output: " OUT
             "\n  priority: INFO\n\n- rule: failing_rule\n  desc: an appended incorrect field\n"
             "  override:\n    desc: replace\n    condition: append\n"},
    {.name = "rule_override_extra_field", .where = UPSTREAM "629", .loads = false, .error = "Unexpected key 'priority'",
     .yaml = "- rule: failing_rule\n  desc: legit rule description\n  condition: evt.type = close\n  output: " OUT
             "\n  priority: INFO\n\n- rule: failing_rule\n  desc: an appended incorrect field\n"
             "  condition: and proc.name = cat\n  priority: WARNING\n  override:\n    desc: replace\n"
             "    condition: append\n"},
    {.name = "missing_enabled_key_with_override", .where = UPSTREAM "651", .loads = false,
     .error = "'enabled' was specified but 'enabled' is not defined",
     .yaml = RULE_BASE("evt.type = close", "  enabled: false\n\n")
             "- rule: test_rule\n  desc: missing enabled key\n  condition: and proc.name = cat\n"
             "  override:\n    desc: replace\n    condition: append\n    enabled: replace\n"},
    {.name = "rule_override_with_enabled", .where = UPSTREAM "675", .loads = true, .no_warning = "", ENABLED(1),
     .yaml = RULE_BASE("evt.type = close", "  enabled: false\n\n")
             "- rule: test_rule\n  desc: correct override\n  condition: and proc.name = cat\n  enabled: true\n"
             "  override:\n    desc: replace\n    condition: append\n    enabled: replace\n",
     .events = "close cat => test_rule | close bash =>"},
    {.name = "rule_override_exceptions_required_fields", .where = UPSTREAM "701", .loads = false, .no_warning = "",
     .error = "Item has no mapping for key 'fields'",
     .yaml = RULE_BASE("evt.type = close", "  exceptions:\n    - name: test_exception\n      fields: proc.name\n"
                                           "      comps: in\n      values: [\"cat\"]\n\n")
             "# when appending, it's fine to provide partial exception definitions\n"
             "- rule: test_rule\n  exceptions:\n    - name: test_exception\n      values: [echo]\n"
             "  override:\n    exceptions: append\n\n"
             "# when replacing, we don't allow partial exception definitions\n"
             "- rule: test_rule\n  exceptions:\n    - name: test_exception\n      values: [id]\n"
             "  override:\n    exceptions: replace\n"},
    {.name = "rule_not_enabled", .where = UPSTREAM "738", .loads = true, .no_warning = "", ENABLED(0),
     .yaml = "- rule: test_rule\n  desc: rule not enabled\n  condition: evt.type = close\n  output: " OUT
             "\n  priority: INFO\n  enabled: false\n"},
    {.name = "rule_enabled_warning", .where = UPSTREAM "754", .loads = true, .warning = WARNING_ENABLED, ENABLED(1),
     .yaml = RULE_BASE("evt.type = close", "  enabled: false\n\n") "- rule: test_rule\n  enabled: true\n"},
    {.name = "no_evttype_warning_for_narrow_condition", .where = UPSTREAM "776", .loads = true,
     .no_warning = WARNING_NO_EVTTYPE,
     .yaml = "- rule: test_rule\n  desc: rule with an evt.type restriction\n  condition: evt.type = close\n"
             "  output: " OUT "\n  priority: INFO\n"},
    {.name = "evttype_warning_for_broad_condition", .where = UPSTREAM "789", .loads = true,
     .warning = WARNING_NO_EVTTYPE,
     .yaml = "- rule: test_rule\n  desc: rule without any evt.type restriction\n  condition: proc.name = cat\n"
             "  output: " OUT "\n  priority: INFO\n"},
    {.name = "evttype_warning_disabled_by_warn_evttypes", .where = UPSTREAM "802", .loads = true,
     .no_warning = WARNING_NO_EVTTYPE,
     .yaml = "- rule: test_rule\n  desc: rule without any evt.type restriction but with the warning disabled\n"
             "  condition: proc.name = cat\n  output: " OUT "\n  priority: INFO\n  warn_evttypes: false\n"},
    {.name = "no_evttype_warning_for_unsatisfiable_condition", .where = UPSTREAM "819", .loads = true,
     .no_warning = WARNING_NO_EVTTYPE, ENABLED(1),
     .yaml = "- rule: test_rule\n  desc: rule with a statically unsatisfiable condition\n  condition: evt.num = 0\n"
             "  output: " OUT "\n  priority: INFO\n",
     .events = "open cat => | execve cat =>"},
    {.name = "no_evttype_warning_for_evt_type_contradiction", .where = UPSTREAM "834", .loads = true,
     .no_warning = WARNING_NO_EVTTYPE, ENABLED(1),
     .yaml = "- rule: test_rule\n  desc: rule with contradicting evt.type checks\n"
             "  condition: evt.type = open and evt.type = close\n  output: " OUT "\n  priority: INFO\n",
     .events = "open cat => | close cat =>"},
    {.name = "no_evttype_warning_for_never_true_macro", .where = UPSTREAM "849", .loads = true,
     .no_warning = WARNING_NO_EVTTYPE, ENABLED(2),
     .yaml = "- macro: never_true\n  condition: (evt.num=0)\n\n- macro: user_known_activity\n  condition: (never_true)\n\n"
             "- rule: anchored_rule_with_placeholder\n  desc: anchored rule negating a never_true placeholder\n"
             "  condition: evt.type = open and not user_known_activity\n  output: " OUT "\n  priority: INFO\n\n"
             "- rule: placeholder_only_rule\n  desc: rule whose condition reduces entirely to never_true\n"
             "  condition: never_true\n  output: " OUT "\n  priority: INFO\n",
     .events = "open cat => anchored_rule_with_placeholder | close cat =>"},
    {.name = "rule_enabled_is_ignored_by_append", .where = UPSTREAM "876", .loads = true, ENABLED(0),
     .yaml = RULE_BASE("evt.type = close", "  enabled: false\n\n")
             "- rule: test_rule\n  condition: and proc.name = cat\n  append: true\n  enabled: true\n"},
    {.name = "rewrite_rule", .where = UPSTREAM "899", .loads = true, ENABLED(1),
     .yaml = RULE_BASE("evt.type = close", "  enabled: false\n\n")
             "- rule: test_rule\n  desc: redefined rule syntax\n  condition: proc.name = cat\n  output: " OUT
             "\n  priority: WARNING\n  enabled: true\n",
     .events = "open cat => test_rule | close bash =>", .priority = NULL},
    {.name = "required_engine_version_semver", .where = UPSTREAM "925", .loads = true, .no_warning = "",
     .yaml = "- required_engine_version: 0.26.0\n\n" RULE_BASE("evt.type = close", "  enabled: false\n")},
    {.name = "required_engine_version_not_semver", .where = UPSTREAM "943", .loads = true, .no_warning = "",
     .yaml = "- required_engine_version: 26\n\n" RULE_BASE("evt.type = close", "  enabled: false\n")},
    {.name = "required_engine_version_invalid", .where = UPSTREAM "961", .loads = false,
     .error = "Unable to parse engine version",
     .yaml = "- required_engine_version: seven\n\n" RULE_BASE("evt.type = close", "  enabled: false\n")},
    {.name = "list_value_with_escaping", .where = UPSTREAM "980", .loads = true,
     .warning = "List not referred to by any other rule/macro",
     .yaml = "- list: my_list\n  items: [non_escaped_val, \"escaped val\"]\n"},
    {.name = "list_value_with_escaping (used)", .where = UPSTREAM "980", .loads = true,
     /* the item with a blank is one value ("escaped val"), not two */
     .yaml = "- list: my_list\n  items: [non_escaped_val, \"escaped val\"]\n"
             "- rule: r\n  desc: d\n  condition: evt.type = execve and proc.cmdline in (my_list)\n  output: o\n"
             "  priority: INFO\n",
     .events = "execve escaped val => r | execve escaped => | execve non_escaped_val => r"},
    {.name = "exceptions_condition", .where = UPSTREAM "1010", .loads = true,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: proc.cmdline contains curl or proc.cmdline contains wget\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [proc.cmdline]\n      comps: [contains]\n      values:\n        - [curl 127.0.0.1]\n",
     /* ((proc.cmdline contains curl or proc.cmdline contains wget) and not proc.cmdline contains "curl 127.0.0.1") */
     .events = "execve curl 127.0.0.1 => | execve curl 10.0.0.1 => test_rule | execve wget 127.0.0.1 => test_rule"},
    {.name = "macro_name_invalid", .where = UPSTREAM "1032", .loads = true,
     .warning = "Macro has an invalid name. Macro names should match a regular expression",
     .yaml = "- macro: test-macro\n  condition: evt.type = close\n"},
    {.name = "list_name_invalid", .where = UPSTREAM "1044", .loads = true,
     .warning = "List has an invalid name. List names should match a regular expression",
     .yaml = "- list: test list\n  items: [open, openat, openat2]\n\n"
             RULE_BASE("evt.type in (test list)", "  enabled: false\n\n")},
    {.name = "list_name_invalid (enabled)", .where = UPSTREAM "1044", .loads = true,
     /* the name with a blank is found in the condition, as Falco finds it */
     .yaml = "- list: test list\n  items: [open, openat, openat2]\n\n" RULE_BASE("evt.type in (test list)", "\n"),
     .events = "open cat => test_rule | openat cat => test_rule | close cat =>"},
    {.name = "exceptions_append_no_values", .where = UPSTREAM "1066", .loads = true,
     .warning = "Overriding/appending exception with no values",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: proc.cmdline contains curl\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [proc.cmdline]\n      comps: [contains]\n      values:\n        - [curl 127.0.0.1]\n\n"
             "- rule: test_rule\n  exceptions:\n    - name: test_exception\n      value: curl 1.1.1.1\n  append: true\n"},
    {.name = "exceptions_override_no_values", .where = UPSTREAM "1092", .loads = true,
     .warning = "Overriding/appending exception with no values",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: proc.cmdline contains curl\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [proc.cmdline]\n      comps: [contains]\n      values:\n        - [curl 127.0.0.1]\n\n"
             "- rule: test_rule\n  exceptions:\n    - name: test_exception\n      value: curl 1.1.1.1\n"
             "  override:\n    exceptions: append\n"},
    {.name = "exceptions_names_not_unique", .where = UPSTREAM "1119", .loads = true,
     .warning = "Multiple definitions of exception",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: proc.cmdline contains curl\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [proc.cmdline]\n      comps: [contains]\n      values:\n        - [curl 127.0.0.1]\n"
             "    - name: test_exception\n      fields: [proc.cmdline]\n      comps: [endswith]\n      values:\n"
             "        - [curl 127.0.0.1]\n",
     .events = "execve curl 127.0.0.1 => | execve curl 1.1.1.1 => test_rule"},
    {.name = "exceptions_names_not_unique (both apply)", .where = UPSTREAM "1119", .loads = true,
     .warning = "Multiple definitions of exception",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: proc.cmdline contains curl\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [proc.cmdline]\n      comps: [contains]\n      values:\n        - [curl 127.0.0.1]\n"
             "    - name: test_exception\n      fields: [proc.cmdline]\n      comps: [endswith]\n      values:\n"
             "        - [curl 10.0.0.1]\n",
     .events = "execve curl 127.0.0.1 => | execve curl 10.0.0.1 => | execve curl 1.1.1.1 => test_rule"},
    {.name = "exceptions_values_rhs_field_ambiguous", .where = UPSTREAM "1152", .loads = true,
     .warning = "'proc.pname' may be a valid field misused as a const string value",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = execve\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [proc.name]\n      comps: [=]\n      values:\n        - [proc.pname]\n",
     .events = "execve proc.pname => | execve cat => test_rule"},
    {.name = "exceptions_values_rhs_field_ambiguous_quoted", .where = UPSTREAM "1170", .loads = true,
     .warning = "'proc.pname' may be a valid field misused as a const string value",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = execve\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [proc.name]\n      comps: [=]\n      values:\n        - [\"proc.pname\"]\n",
     .events = "execve proc.pname => | execve cat => test_rule"},
    {.name = "exceptions_values_rhs_field_ambiguous_space_quoted", .where = UPSTREAM "1188", .loads = true,
     .warning = "'proc.pname ' may be a valid field misused as a const string value",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = execve\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [proc.cmdline]\n      comps: [=]\n      values:\n        - [\"proc.pname \"]\n",
     .events = "execve proc.pname => test_rule"},
    {.name = "exceptions_values_rhs_transformer", .where = UPSTREAM "1206", .loads = true, .needs = NEEDS_TRANSFORMERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [proc.name]\n      comps: [=]\n      values:\n        - [toupper(proc.pname)]\n"},
    {.name = "exceptions_values_transformer_value_quoted", .where = UPSTREAM "1222", .loads = true,
     .needs = NEEDS_TRANSFORMERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [proc.name]\n      comps: [=]\n      values:\n        - [\"toupper(proc.pname)\"]\n"},
    {.name = "exceptions_values_transformer_space", .where = UPSTREAM "1238", .loads = true,
     .warning = "'toupper( proc.pname)' may be a valid field transformer misused as a const string value",
     /* a value with a blank is quoted: the string "toupper( proc.pname)" */
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = execve\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [proc.cmdline]\n      comps: [=]\n      values:\n        - [toupper( proc.pname)]\n",
     .events = "execve toupper( proc.pname) => | execve cat => test_rule"},
    {.name = "exceptions_values_transformer_space_quoted", .where = UPSTREAM "1257", .loads = true,
     .warning = "'toupper( proc.pname)' may be a valid field transformer misused as a const string value",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = execve\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [proc.cmdline]\n      comps: [=]\n      values:\n        - [\"toupper( proc.pname)\"]\n",
     .events = "execve toupper( proc.pname) => | execve cat => test_rule"},
    {.name = "exceptions_fields_transformer", .where = UPSTREAM "1276", .loads = true, .needs = NEEDS_TRANSFORMERS,
     .no_warning = "",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = execve\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [tolower(proc.name)]\n      comps: [=]\n      values:\n        - [test]\n",
     .events = "execve TEST => | execve cat => test_rule"},
    {.name = "exceptions_fields_transformer_quoted", .where = UPSTREAM "1293", .loads = true,
     .needs = NEEDS_TRANSFORMERS, .no_warning = "",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = execve\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [\"tolower(proc.name)\"]\n      comps: [=]\n      values:\n        - [test]\n",
     .events = "execve TEST => | execve cat => test_rule"},
    {.name = "exceptions_fields_transformer_space_quoted", .where = UPSTREAM "1310", .loads = true,
     .needs = NEEDS_TRANSFORMERS, .no_warning = "",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = execve\n"
             "  output: command=%proc.cmdline\n  priority: INFO\n  exceptions:\n    - name: test_exception\n"
             "      fields: [\"tolower( proc.name)\"]\n      comps: [=]\n      values:\n        - [test]\n",
     .events = "execve TEST => | execve cat => test_rule"},
    {.name = "redefine_rule_different_source", .where = UPSTREAM "1327", .loads = false,
     .error = "Rule has been re-defined with a different source",
     .yaml = "- rule: LD_PRELOAD trick\n  desc: Some desc\n  condition: ka.verb = GET\n  output: some output\n"
             "  priority: INFO\n  source: k8s_audit\n\n- rule: LD_PRELOAD trick\n  desc: Some desc\n"
             "  condition: and 1 = 2\n  output: Some output\n  priority: INFO\n  source: syscall\n"},
    {.name = "append_across_sources", .where = UPSTREAM "1348", .loads = false,
     .error = "Rule has been re-defined with a different source",
     .yaml = "- rule: LD_PRELOAD trick\n  desc: Some desc\n  condition: ka.verb = GET\n  output: some output\n"
             "  priority: INFO\n  source: k8s_audit\n\n- rule: LD_PRELOAD trick\n  desc: Some desc\n"
             "  condition: and 1 = 2\n  output: Some output\n  priority: INFO\n  source: syscall\n  append: true\n"},
    {.name = "selective_replace_across_sources", .where = UPSTREAM "1370", .loads = false,
     .error = "Rule has been re-defined with a different source",
     .yaml = "- rule: LD_PRELOAD trick\n  desc: Some desc\n  condition: ka.verb = GET\n  output: some output\n"
             "  priority: INFO\n  source: k8s_audit\n\n- rule: LD_PRELOAD trick\n  condition: 1 = 2\n"
             "  override:\n    condition: replace\n  source: syscall\n"},
    {.name = "empty_source_addl_rule", .where = UPSTREAM "1390", .loads = true,
     .yaml = "- rule: LD_PRELOAD trick\n  desc: Some desc\n  condition: evt.type=execve\n  output: some output\n"
             "  priority: INFO\n  source: syscall\n\n- rule: LD_PRELOAD trick\n  desc: Some desc\n"
             "  condition: and proc.name=apache\n  output: Some output\n  priority: INFO\n  source:\n  append: true\n",
     /* an append takes the condition only: the output stays */
     .events = "execve cat => | execve apache => LD_PRELOAD trick", .output = "Informational some output"},
    {.name = "empty_string_source_addl_rule", .where = UPSTREAM "1411", .loads = true,
     .yaml = "- rule: LD_PRELOAD trick\n  desc: Some desc\n  condition: evt.type=execve\n  output: some output\n"
             "  priority: INFO\n  source: syscall\n\n- rule: LD_PRELOAD trick\n  desc: Some desc\n"
             "  condition: and proc.name=apache\n  output: Some output\n  priority: INFO\n  source: \"\"\n  append: true\n",
     .events = "execve cat => | execve apache => LD_PRELOAD trick"},
    {.name = "rule_with_warn_evttypes", .where = UPSTREAM "1434", .loads = true, ENABLED(1),
     .yaml = RULE_BASE("evt.type = close", "  warn_evttypes: false\n")},
    {.name = "rule_with_skip_if_unknown_filter", .where = UPSTREAM "1448", .loads = true, ENABLED(1),
     .yaml = RULE_BASE("evt.type = close", "  skip-if-unknown-filter: true\n")},
    {.name = "override_replace_warn_evttypes", .where = UPSTREAM "1462", .loads = true,
     .yaml = RULE_BASE("evt.type = close", "  warn_evttypes: true\n\n")
             "- rule: test_rule\n  warn_evttypes: false\n  override:\n    warn_evttypes: replace\n"},
    {.name = "override_replace_capture", .where = UPSTREAM "1481", .loads = true,
     .yaml = RULE_BASE("evt.type = close", "\n") "- rule: test_rule\n  capture: true\n  override:\n    capture: replace\n"},
    {.name = "override_replace_tags", .where = UPSTREAM "1499", .loads = true,
     .yaml = RULE_BASE("evt.type = close", "  tags: [filesystem]\n\n")
             "- rule: test_rule\n  tags: [network]\n  override:\n    tags: replace\n",
     .events = "close cat => test_rule", .tags = "[\"network\"]"},
    {.name = "rule_unknown_key", .where = UPSTREAM "1520", .loads = true, .warning = "Unknown key 'typo_field'",
     .yaml = RULE_BASE("evt.type = close", "  typo_field: some_value\n")},
    {.name = "list_unknown_key", .where = UPSTREAM "1534", .loads = true, .warning = "Unknown key 'typo_field'",
     .yaml = "- list: my_list\n  items: [cat, bash]\n  typo_field: some_value\n\n"
             RULE_BASE("evt.type = close and proc.name in (my_list)", ""),
     .events = "close cat => test_rule | close sh =>"},
    {.name = "macro_unknown_key", .where = UPSTREAM "1551", .loads = true, .warning = "Unknown key 'typo_field'",
     .yaml = "- macro: my_macro\n  condition: evt.type = close\n  typo_field: some_value\n\n" RULE_BASE("my_macro", ""),
     .events = "close cat => test_rule | open cat =>"},
    {.name = "list_cross_type_key_priority", .where = UPSTREAM "1568", .loads = true,
     .warning = "Unknown key 'priority'",
     .yaml = "- list: my_list\n  items: [cat, bash]\n  priority: INFO\n\n"
             RULE_BASE("evt.type = close and proc.name in (my_list)", "")},
    /* UPSTREAM "1588", "1606", "1621", "1646": evt.dir's deprecation, left out (see the top). */
    {.name = "rule_capture_enabled", .where = UPSTREAM "1678", .loads = true,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = close\n  output: user=%user.uid\n"
             "  priority: WARNING\n  capture: true\n"},
    {.name = "rule_capture_disabled_by_default", .where = UPSTREAM "1696", .loads = true,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = close\n  output: user=%user.uid\n"
             "  priority: INFO\n"},
    {.name = "rule_capture_duration", .where = UPSTREAM "1715", .loads = true,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = close\n  output: user=%user.uid\n"
             "  priority: WARNING\n  capture: true\n  capture_duration: 10000\n"},
    {.name = "rule_override_capture_replace", .where = UPSTREAM "1735", .loads = true,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = close\n  output: user=%user.uid\n"
             "  priority: WARNING\n  capture: true\n\n- rule: test_rule\n  capture: false\n  override:\n"
             "    capture: replace\n"},
    {.name = "rule_override_capture_duration_replace", .where = UPSTREAM "1758", .loads = true,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = close\n  output: user=%user.uid\n"
             "  priority: WARNING\n  capture: true\n  capture_duration: 5000\n\n- rule: test_rule\n"
             "  capture_duration: 15000\n  override:\n    capture_duration: replace\n"},
    {.name = "rule_capture_duration_wrong_type", .where = UPSTREAM "1783", .loads = false,
     .error = "Can't decode YAML scalar value of 'capture_duration'",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = close\n  output: user=%user.uid\n"
             "  priority: INFO\n  capture_duration: \"not_a_number\"\n"},
    {.name = "rule_capture_duration_negative", .where = UPSTREAM "1783", .loads = false,
     .error = "Can't decode YAML scalar value of 'capture_duration'",
     /* an unsigned 32-bit number, as yaml-cpp decodes it */
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = close\n  output: user=%user.uid\n"
             "  priority: INFO\n  capture_duration: -1\n"},
    {.name = "rule_capture_wrong_type", .where = UPSTREAM "1796", .loads = true,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = close\n  output: user=%user.uid\n"
             "  priority: INFO\n  capture: \"yes\"\n"},
    {.name = "exceptions_modifier_op_startswith_oneof", .where = UPSTREAM "1828", .loads = true,
     .needs = NEEDS_MODIFIERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [proc.name]\n"
             "      comps: [startswith oneof]\n      values:\n        - [[sshd, sudo, systemd]]\n",
     .events = "open sshd-x => | open cat => test_rule"},
    {.name = "exceptions_modifier_op_contains_allof", .where = UPSTREAM "1851", .loads = true,
     .needs = NEEDS_MODIFIERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = execve\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [proc.cmdline]\n"
             "      comps: [contains allof]\n      values:\n        - [[curl, bash]]\n",
     .events = "execve curl bash => | execve curl x => test_rule"},
    {.name = "exceptions_modifier_op_endswith_anyof", .where = UPSTREAM "1875", .loads = true,
     .needs = NEEDS_MODIFIERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [fd.name]\n"
             "      comps: [endswith anyof]\n      values:\n        - [[.sh, .py, .pl]]\n"},
    {.name = "exceptions_modifier_op_glob_oneof", .where = UPSTREAM "1897", .loads = true, .needs = NEEDS_MODIFIERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [fd.name]\n      comps: [glob oneof]\n"
             "      values:\n        - [[\"/tmp/*.sh\", \"/tmp/*.py\", \"/dev/shm/*.sh\"]]\n"},
    {.name = "exceptions_modifier_op_icontains_oneof", .where = UPSTREAM "1917", .loads = true,
     .needs = NEEDS_MODIFIERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = execve\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [proc.cmdline]\n"
             "      comps: [icontains oneof]\n      values:\n        - [[MONITOR, HEALTHCHECK, PROBE]]\n"},
    {.name = "exceptions_modifier_op_multi_field_mixed", .where = UPSTREAM "1939", .loads = true,
     .needs = NEEDS_MODIFIERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [proc.name, fd.name]\n"
             "      comps: [startswith oneof, startswith]\n      values:\n        - [[sshd, sudo], /etc/]\n",
     .events = "open sudo => | open cat => test_rule"},
    {.name = "exceptions_modifier_op_multi_field_both_compound", .where = UPSTREAM "1963", .loads = true,
     .needs = NEEDS_MODIFIERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [proc.exepath, fd.name]\n"
             "      comps: [endswith anyof, glob oneof]\n      values:\n"
             "        - [[/dpkg, /rpm, /pip], [\"/tmp/*.deb\", \"/tmp/*.rpm\"]]\n"},
    {.name = "exceptions_modifier_op_invalid_base_operator", .where = UPSTREAM "1985", .loads = false,
     .error = "'frobulate oneof' is not a supported comparison operator",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [proc.name]\n"
             "      comps: [frobulate oneof]\n      values:\n        - [[bash]]\n"},
    {.name = "exceptions_modifier_op_invalid_base_operator_scalar_field", .where = UPSTREAM "2005", .loads = false,
     .error = "comps must be one of",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: proc.name\n      comps: frobulate oneof\n"
             "      values:\n        - [bash]\n"},
    {.name = "exceptions_modifier_op_list_op_with_modifier", .where = UPSTREAM "2027", .loads = false,
     .error = "'in oneof' is not a supported comparison operator",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [proc.name]\n      comps: [in oneof]\n"
             "      values:\n        - [[bash]]\n"},
    {.name = "exceptions_modifier_op_numeric_op_with_modifier", .where = UPSTREAM "2050", .loads = false,
     .error = "'>= oneof' is not a supported comparison operator",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [proc.pid]\n      comps: [\">= oneof\"]\n"
             "      values:\n        - [[1000]]\n"},
    {.name = "exceptions_modifier_op_modifier_alone", .where = UPSTREAM "2073", .loads = false,
     .error = "'oneof' is not a supported comparison operator",
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [proc.name]\n      comps: [oneof]\n"
             "      values:\n        - [[bash]]\n"},
    {.name = "exceptions_modifier_op_list_op_unchanged", .where = UPSTREAM "2093", .loads = true,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex_in\n      fields: proc.name\n      comps: in\n"
             "      values:\n        - cat\n        - grep\n    - name: ex_pmatch\n      fields: proc.exepath\n"
             "      comps: pmatch\n      values:\n        - /usr/bin/\n        - /usr/local/bin/\n",
     .events = "open cat => | open grep => | open sh => test_rule"},
    {.name = "exceptions_modifier_op_eq_oneof", .where = UPSTREAM "2121", .loads = true, .needs = NEEDS_MODIFIERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = execve\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [proc.name]\n      comps: [= oneof]\n"
             "      values:\n        - [[nmap, masscan, nikto]]\n",
     .events = "execve nmap => | execve cat => test_rule"},
    {.name = "exceptions_modifier_op_scalar_value_parenthesised", .where = UPSTREAM "2166", .loads = true,
     .needs = NEEDS_MODIFIERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [proc.name]\n"
             "      comps: [startswith oneof]\n      values:\n        - [sshd]\n",
     .events = "open sshd2 => | open cat => test_rule"},
    {.name = "exceptions_modifier_op_all_three_modifiers", .where = UPSTREAM "2194", .loads = true,
     .needs = NEEDS_MODIFIERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = execve\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex_oneof\n      fields: [proc.name]\n"
             "      comps: [startswith oneof]\n      values:\n        - [[ssh, su]]\n    - name: ex_anyof\n"
             "      fields: [proc.name]\n      comps: [startswith anyof]\n      values:\n        - [[ssh, su]]\n"
             "    - name: ex_allof\n      fields: [proc.cmdline]\n      comps: [contains allof]\n      values:\n"
             "        - [[curl, ci.internal]]\n"},
    {.name = "exceptions_modifier_op_comp_whitespace_normalized", .where = UPSTREAM "2232", .loads = true,
     .needs = NEEDS_MODIFIERS,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex_single\n      fields: [proc.name]\n"
             "      comps: [\"  startswith oneof  \"]\n      values:\n        - [[sshd, sudo]]\n    - name: ex_multi\n"
             "      fields: [proc.name, fd.name]\n      comps: [\"  contains  \", \"  startswith anyof  \"]\n"
             "      values:\n        - [agent, [/etc/, /var/]]\n"},
    {.name = "exceptions_modifier_op_comp_whitespace_normalized (plain)", .where = UPSTREAM "2232", .loads = true,
     /* the same normalizing, on operators the filter language has */
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex_multi\n      fields: [proc.name, fd.name]\n"
             "      comps: [\"  contains  \", \"  startswith  \"]\n      values:\n        - [agent, /etc/]\n",
     .events = "open my-agent => | open cat => test_rule"},
    {.name = "exceptions_modifier_op_str_op_multi_field_regression", .where = UPSTREAM "2263", .loads = true,
     .yaml = "- rule: test_rule\n  desc: test rule\n  condition: evt.type = open\n  output: command=%proc.cmdline\n"
             "  priority: INFO\n  exceptions:\n    - name: ex\n      fields: [proc.name, fd.name, proc.exepath]\n"
             "      comps: [contains, startswith, =]\n      values:\n        - [agent, /var/log/, /usr/bin/prometheus]\n",
     .events = "open agent => test_rule"},

    /* ---- test_plugin_requirements.cpp, with the one plugin here ---- */
    {.name = "check_plugin_requirements_success: no requirement", .where = PLUGINS "38", .loads = true, .yaml = ""},
    {.name = "check_plugin_requirements_success: single plugin", .where = PLUGINS "41", .loads = true,
     .yaml = "- required_plugin_versions:\n  - name: container\n    version: 0.1.0\n"},
    {.name = "check_plugin_requirements_success: single plugin multiple versions", .where = PLUGINS "67",
     .loads = true,
     .yaml = "- required_plugin_versions:\n  - name: container\n    version: 0.1.0\n"
             "- required_plugin_versions:\n  - name: container\n    version: 0.2.0\n"},
    {.name = "check_plugin_requirements_success: with alternatives", .where = PLUGINS "77", .loads = true,
     .yaml = "- required_plugin_versions:\n  - name: k8saudit\n    version: 0.1.0\n    alternatives:\n"
             "      - name: container\n        version: 0.4.0\n"},
    {.name = "falco_rules.yaml's requirement", .where = "falcosecurity/rules rules/falco_rules.yaml:30", .loads = true,
     .yaml = "- required_engine_version: 0.57.0\n\n- required_plugin_versions:\n    - name: container\n"
             "      version: 0.4.0\n"},
    {.name = "check_plugin_requirements_reject: no plugin loaded", .where = PLUGINS "131", .loads = false,
     .error = "Plugin requirement not satisfied, must load one of: k8saudit (>= 0.1.0)",
     .yaml = "- required_plugin_versions:\n  - name: k8saudit\n    version: 0.1.0\n"},
    {.name = "check_plugin_requirements_reject: multiple plugins", .where = PLUGINS "156", .loads = false,
     .error = "must load one of: json (>= 0.3.0)",
     .yaml = "- required_plugin_versions:\n  - name: container\n    version: 0.1.0\n  - name: json\n    version: 0.3.0\n"},
    {.name = "check_plugin_requirements_reject: alternatives", .where = PLUGINS "175", .loads = false,
     .error = "must load one of: k8saudit (>= 0.1.0), k8saudit-other (>= 0.4.0)",
     .yaml = "- required_plugin_versions:\n  - name: k8saudit\n    version: 0.1.0\n    alternatives:\n"
             "      - name: k8saudit-other\n        version: 0.4.0\n"},
    {.name = "check_plugin_requirements_reject: overlapping alternatives", .where = PLUGINS "185", .loads = false,
     .error = "Defined multiple alternative version requirements for plugin 'container'",
     .yaml = "- required_plugin_versions:\n  - name: container\n    version: 0.1.0\n    alternatives:\n"
             "      - name: container\n        version: 0.4.0\n"},
    {.name = "invalid required plugin version", .where = "falco userspace/engine/rule_loader_collector.cpp:174",
     .loads = false, .error = "Invalid required version 'latest' for plugin 'container'",
     .yaml = "- required_plugin_versions:\n  - name: container\n    version: latest\n"},

    /* ---- the engine's code, read (rule_loader_*.cpp) ---- */
    {.name = "a list appended after the macro that uses it", .where = "falco userspace/engine/rule_loader_compiler.cpp:303",
     .loads = true,
     /* "there is no visibility order between filter conditions and lists" */
     .yaml = "- list: known_binaries\n  items: [cat]\n- macro: known_proc\n  condition: proc.name in (known_binaries)\n"
             "- rule: r\n  desc: d\n  condition: evt.type = execve and not known_proc\n  output: o\n  priority: INFO\n"
             "- list: known_binaries\n  items: [ls]\n  override: {items: append}\n",
     .events = "execve cat => | execve ls => | execve sh => r"},
    {.name = "a list defined after the macro that uses it", .where = "falco userspace/engine/rule_loader_compiler.cpp:303",
     .loads = true,
     .yaml = "- macro: known_proc\n  condition: proc.name in (known_binaries)\n"
             "- rule: r\n  desc: d\n  condition: evt.type = execve and known_proc\n  output: o\n  priority: INFO\n"
             "- list: known_binaries\n  items: [cat, ls]\n",
     .events = "execve ls => r | execve known_binaries =>"},
    {.name = "a list inside a list goes by definition order", .where = "falco userspace/engine/rule_loader_compiler.cpp:345",
     .loads = true,
     /* inner is defined after outer: the item stays the name (and Falco, substituting the lists in
      * order, then expands it in the condition, inner coming after outer) */
     .yaml = "- list: outer\n  items: [inner, sh]\n- list: inner\n  items: [bash]\n"
             "- list: early\n  items: [zsh]\n- list: late\n  items: [early, ksh]\n"
             "- rule: r\n  desc: d\n  condition: evt.type = execve and proc.name in (outer, late)\n  output: o\n"
             "  priority: INFO\n",
     .events = "execve bash => r | execve sh => r | execve zsh => r | execve ksh => r | execve inner => | "
               "execve early =>"},
    {.name = "a list takes another's items one level deep", .where = "falco userspace/engine/rule_loader_compiler.cpp:345",
     .loads = true,
     /* c takes b's items as written: the name a, already substituted when c's turn comes */
     .yaml = "- list: a\n  items: [x]\n- list: b\n  items: [a]\n- list: c\n  items: [b]\n"
             "- rule: r\n  desc: d\n  condition: evt.type = execve and proc.name in (c)\n  output: o\n  priority: INFO\n",
     .events = "execve x => | execve a => r | execve b =>"},
    {.name = "quoted list items are the filter language's", .where = "falco userspace/engine/rule_loader_compiler.cpp:267",
     .loads = true,
     /* upstream login_binaries holds '"(systemd)"'; rfc_1918_addresses '"10.0.0.0/8"' */
     .yaml = "- list: login_binaries\n  items: [login, '\"(systemd)\"', '\"cat\"', 'x y']\n"
             "- rule: r\n  desc: d\n  condition: evt.type = execve and proc.name in (login_binaries)\n  output: o\n"
             "  priority: INFO\n",
     .events = "execve cat => r | execve (systemd) => r | execve \"cat\" =>"},
    {.name = "an empty list takes a comma away", .where = "falco userspace/engine/rule_loader_compiler.cpp:227",
     .loads = true,
     .yaml = "- list: none\n  items: []\n- rule: r\n  desc: d\n"
             "  condition: evt.type = execve and proc.name in (none, cat) and not proc.name in (ls, none)\n"
             "  output: o\n  priority: INFO\n",
     .events = "execve cat => r | execve ls =>"},
    {.name = "a macro overridden later keeps its first index", .where = "falco userspace/engine/rule_loader_collector.cpp:63",
     .loads = true,
     .yaml = "- macro: a\n  condition: proc.name = x\n- macro: b\n  condition: evt.type = execve and a\n"
             "- macro: a\n  condition: proc.name = y\n  override: {condition: replace}\n"
             "- rule: r\n  desc: d\n  condition: b\n  output: o\n  priority: INFO\n",
     .events = "execve y => r | execve x =>"},
    {.name = "a macro inside a macro goes by definition order", .where = "falco userspace/engine/rule_loader_compiler.cpp:374",
     .loads = false, .error = "Undefined macro 'later' used in filter",
     .yaml = "- macro: early\n  condition: later\n- macro: later\n  condition: proc.name = x\n"
             "- rule: r\n  desc: d\n  condition: evt.type = execve and early\n  output: o\n  priority: INFO\n"},
    {.name = "an append makes later macros visible", .where = "falco userspace/engine/rule_loader_collector.cpp:73",
     .loads = true,
     .yaml = "- macro: early\n  condition: proc.name = x\n- macro: later\n  condition: proc.name = y\n"
             "- macro: early\n  condition: or later\n  override: {condition: append}\n"
             "- rule: r\n  desc: d\n  condition: evt.type = execve and early\n  output: o\n  priority: INFO\n",
     .events = "execve y => r | execve x => r | execve z =>"},
    {.name = "an unused macro's unknown field warns", .where = "falco userspace/engine/rule_loader_compiler.cpp:313",
     .loads = true, .warning = "unknown field 'proc.nosuch'", ENABLED(1),
     .yaml = "- macro: unused\n  condition: proc.nosuch = x\n" RULE_BASE("evt.type = close", "")},
    {.name = "a used macro's unknown field is an error", .where = "falco userspace/engine/rule_loader_compiler.cpp:448",
     .loads = false, .error = "unknown field 'proc.nosuch'",
     .yaml = "- macro: m\n  condition: proc.nosuch = x\n" RULE_BASE("evt.type = close and m", "")},
    {.name = "skip-if-unknown-filter skips the rule", .where = "falco userspace/engine/rule_loader_compiler.cpp:455",
     .loads = true, .warning = "rule 'test_rule' skipped: skip-if-unknown-filter is true", ENABLED(1),
     .yaml = "- macro: m\n  condition: proc.nosuch = x\n"
             RULE_BASE("evt.type = close and m", "  skip-if-unknown-filter: true\n")
             "- rule: other\n  desc: d\n  condition: evt.type = close and proc.nosuch2 = y\n  output: o\n"
             "  priority: INFO\n  skip-if-unknown-filter: true\n"
             "- rule: kept\n  desc: d\n  condition: evt.type = close\n  output: o\n  priority: INFO\n"
             "  skip-if-unknown-filter: true\n",
     .events = "close cat => kept"},
    {.name = "skip-if-unknown-filter and an unknown output field", .where = "falco userspace/engine/rule_loader_compiler.cpp:538",
     .loads = true, .warning = "unknown field 'fd.nosuch'", ENABLED(0),
     .yaml = "- rule: r\n  desc: d\n  condition: evt.type = close\n  output: \"%fd.nosuch\"\n  priority: INFO\n"
             "  skip-if-unknown-filter: true\n"},
    {.name = "skip-if-unknown-filter does not skip a syntax error", .where = "falco userspace/engine/rule_loader_compiler.cpp:449",
     .loads = false, .error = "syntax error",
     .yaml = "- rule: r\n  desc: d\n  condition: evt.type = close and (\n  output: o\n  priority: INFO\n"
             "  skip-if-unknown-filter: true\n"},
    {.name = "append: true ignores output and enabled", .where = "falco userspace/engine/rule_loader_reader.cpp:945",
     .loads = true, ENABLED(0),
     .yaml = "- rule: r\n  desc: d\n  condition: evt.type = close\n  output: first\n  priority: INFO\n"
             "  enabled: false\n- rule: r\n  condition: and proc.name = cat\n  output: second\n  enabled: true\n"
             "  append: true\n"},
    {.name = "append: true ignores output", .where = "falco userspace/engine/rule_loader_reader.cpp:945",
     .loads = true,
     .yaml = "- rule: r\n  desc: d\n  condition: evt.type = close\n  output: first\n  priority: INFO\n"
             "- rule: r\n  condition: and proc.name = cat\n  output: second\n  append: true\n",
     .events = "close bash => | close cat => r", .output = "Informational first"},
    {.name = "append: true with output alone", .where = "falco userspace/engine/rule_loader_collector.cpp:212",
     .loads = false, .error = "Appended rule must have exceptions or condition property",
     .yaml = "- rule: r\n  desc: d\n  condition: evt.type = close\n  output: first\n  priority: INFO\n"
             "- rule: r\n  output: second\n  append: true\n"},
    {.name = "exception fields appended to an existing exception", .where = "falco userspace/engine/rule_loader_collector.cpp:259",
     .loads = false, .error = "Can not append exception fields to existing exception, only values",
     .yaml = "- rule: r\n  desc: d\n  condition: evt.type = close\n  output: o\n  priority: INFO\n  exceptions:\n"
             "    - name: e\n      fields: proc.name\n      values: [cat]\n"
             "- rule: r\n  exceptions:\n    - name: e\n      fields: proc.name\n      values: [ls]\n  append: true\n"},
    {.name = "exception comps appended to an existing exception", .where = "falco userspace/engine/rule_loader_collector.cpp:262",
     .loads = false, .error = "Can not append exception comps to existing exception, only values",
     .yaml = "- rule: r\n  desc: d\n  condition: evt.type = close\n  output: o\n  priority: INFO\n  exceptions:\n"
             "    - name: e\n      fields: proc.name\n      values: [cat]\n"
             "- rule: r\n  exceptions:\n    - name: e\n      comps: in\n      values: [ls]\n"
             "  override: {exceptions: append}\n"},
    {.name = "exception values appended to an existing exception", .where = "falco userspace/engine/rule_loader_collector.cpp:265",
     .loads = true,
     .yaml = "- rule: r\n  desc: d\n  condition: evt.type = close\n  output: o\n  priority: INFO\n  exceptions:\n"
             "    - name: e\n      fields: proc.name\n      values: [cat]\n"
             "- rule: r\n  exceptions:\n    - name: e\n      values: [ls]\n  override: {exceptions: append}\n",
     .events = "close cat => | close ls => | close sh => r"},
    {.name = "exception fields and comps of unequal length", .where = "falco userspace/engine/rule_loader_collector.cpp:86",
     .loads = false, .error = "Fields and comps lists must have equal length",
     .yaml = "- rule: r\n  desc: d\n  condition: evt.type = close\n  output: o\n  priority: INFO\n  exceptions:\n"
             "    - name: e\n      fields: [proc.name, fd.name]\n      comps: [=]\n      values: [[cat, x]]\n"},
    {.name = "exception fields and values of unequal length", .where = "falco userspace/engine/rule_loader_compiler.cpp:108",
     .loads = false, .error = "Fields and values lists must have equal length",
     .yaml = "- rule: r\n  desc: d\n  condition: evt.type = close\n  output: o\n  priority: INFO\n  exceptions:\n"
             "    - name: e\n      fields: [proc.name, fd.name]\n      values: [[cat]]\n"},
    {.name = "an exception on one field with a list of lists", .where = "falco userspace/engine/rule_loader_compiler.cpp:98",
     .loads = false, .error = "Expected values array to contain a list of strings",
     .yaml = "- rule: r\n  desc: d\n  condition: evt.type = close\n  output: o\n  priority: INFO\n  exceptions:\n"
             "    - name: e\n      fields: proc.name\n      values: [[cat]]\n"},
    {.name = "an exception's list value names a list", .where = "falco userspace/engine/rule_loader_compiler.cpp:133",
     .loads = true,
     .yaml = "- list: trusted\n  items: [make, gcc]\n"
             "- rule: r\n  desc: d\n  condition: evt.type = execve\n  output: o\n  priority: INFO\n  exceptions:\n"
             "    - name: e\n      fields: [proc.name, proc.cmdline]\n      comps: [in, startswith]\n"
             "      values: [[trusted, gcc -O2]]\n",
     .events = "execve gcc -O2 x => | execve gcc -O0 => r | execve make -O2 => r"},
    {.name = "override replace of a list before any definition defines it",
     .where = "falco userspace/engine/rule_loader_reader.cpp:588", .loads = true,
     .yaml = "- list: l\n  items: [cat]\n  override: {items: replace}\n"
             "- rule: r\n  desc: d\n  condition: evt.type = execve and proc.name in (l)\n  output: o\n  priority: INFO\n",
     .events = "execve cat => r"},
    {.name = "a standalone enabled without a rule", .where = "falco userspace/engine/rule_loader_collector.cpp:376",
     .loads = false, .error = "Rule has 'enabled' key but no rule by that name already exists",
     .yaml = "- rule: nothing\n  enabled: false\n"},
    {.name = "required_engine_version: 99", .where = "falco userspace/engine/rule_loader_collector.cpp:157",
     .loads = false, .error = "Rules require engine version 0.99.0, but engine version is 0.63.0",
     .yaml = "- required_engine_version: 99\n"},
    {.name = "required_engine_version: a newer major", .where = "libs userspace/libsinsp/version.h:122",
     .loads = false, .error = "Rules require engine version 1.0.0, but engine version is 0.63.0",
     .yaml = "- required_engine_version: 1.0.0\n"},
    {.name = "required_engine_version: this engine's", .where = "falco userspace/engine/falco_engine_version.h:22",
     .loads = true, .yaml = "- required_engine_version: 0.63.0\n- required_engine_version: 63\n"},
    {.name = "required_engine_version: a newer patch", .where = "libs userspace/libsinsp/version.h:122",
     .loads = false, .error = "Rules require engine version 0.63.1", .yaml = "- required_engine_version: 0.63.1\n"},
    {.name = "required_engine_version: two parts", .where = "libs userspace/libsinsp/version.h:34",
     .loads = false, .error = "Unable to parse engine version '0.26'", .yaml = "- required_engine_version: \"0.26\"\n"},
    {.name = "required_engine_version: empty", .where = "falco userspace/engine/rule_loader_reader.cpp:66",
     .loads = false, .error = "Mapping for key 'required_engine_version' is empty",
     .yaml = "- required_engine_version:\n"},
};

int main(void)
{
    size_t n = sizeof(cases) / sizeof(cases[0]);
    struct CMUnitTest *tests = calloc(n, sizeof(*tests));
    if (!tests)
        return 1;
    for (size_t i = 0; i < n; i++)
        tests[i] = (struct CMUnitTest){.name = cases[i].name, .test_func = run_case,
                                       .initial_state = (void *)&cases[i]};
    int rc = _cmocka_run_group_tests("falco_loader", tests, n, rules_group_setup, rules_group_teardown);
    free(tests);
    return rc;
}
