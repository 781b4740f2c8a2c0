/* test_rules_sequence.c - sequence rules (rules/sequence*.c): the
 * `- sequence:` item read and refused as the rest of a rules file is (every
 * error at its file, line and column), and the matcher on crafted events
 * in a clock of the test's own: order, within, by, the join on an earlier
 * step's field, counts and distinct counts, unless, connections kept
 * apart, the bounds (per sequence and connection, and in bytes over all)
 * with their evictions said in the next alert, the alert's Falco JSON with
 * each step's event, and the state dropped when the rules change or the
 * connection closes. */
#include "rules_util.h"

#include <fcntl.h>

#include "strbuf.h"

static struct ctx_parts CP;
static int64_t now_ns = 1000000000;
static uint32_t dropped_now;   /* the dropped_count of the events exec_ev builds */

static int64_t test_clock(void *data)
{
    (void)data;
    return now_ns;
}

/* An engine with text's rules, every alert raised (no limits), the test's
 * clock, and the sequence bounds given (0: the defaults). */
static struct rules_engine *engine_seq(const char *text, size_t max_bytes, size_t per_group)
{
    struct rules_engine_config cfg;
    rules_engine_config_defaults(&cfg);
    cfg.hostname = "h1";
    cfg.matching = RULES_MATCH_ALL;
    cfg.rate = 0;
    cfg.ceiling = 0;
    cfg.clock_ns = test_clock;
    cfg.sequence_max_bytes = max_bytes;
    cfg.sequence_max_per_group = per_group;
    struct rules_engine *e = rules_engine_new(&cfg);
    assert_non_null(e);
    rules_engine_set_rules(e, rules_ok(text));
    return e;
}

/* ---- events ---- */

struct who {
    uint64_t conn;
    int32_t pid;
    const char *name;
    const char *container;
};

static Gvisor__Common__ContextData *ctx_of(const struct who *w, int64_t time_ns)
{
    Gvisor__Common__ContextData *c = mk_ctx(&CP, w->pid, w->name, time_ns);
    CP.ctx.container_id = (char *)(w->container ? w->container : "c1");
    return c;
}

/* open(path) by w: for writing when write, failing with errno when err. */
static const struct event *open_ev(const struct who *w, const char *path, bool write, int err, uint32_t dropped)
{
    static Gvisor__Syscall__Open m;
    static Gvisor__Syscall__Exit x;
    gvisor__syscall__open__init(&m);
    gvisor__syscall__exit__init(&x);
    m.context_data = ctx_of(w, now_ns);
    m.exit = &x;
    x.result = err ? -1 : 3;
    x.errorno = err;
    m.sysno = 257;
    m.fd = -100;
    m.pathname = (char *)path;
    m.flags = write ? O_WRONLY | O_CREAT : O_RDONLY;
    return evb_build(&B, w->conn, 7, dropped, &m.base);
}

/* w executes path (sentry/execve). */
static const struct event *exec_ev(const struct who *w, const char *path)
{
    static Gvisor__Sentry__ExecveInfo m;
    static char *argv[2];
    gvisor__sentry__execve_info__init(&m);
    m.context_data = ctx_of(w, now_ns);
    m.binary_path = (char *)path;
    argv[0] = (char *)path;
    argv[1] = (char *)"-x";
    m.argv = argv;
    m.n_argv = 2;
    return evb_build(&B, w->conn, 3, dropped_now, &m.base);
}

/* w's process ends (sentry/task_exit). */
static const struct event *exit_ev(const struct who *w)
{
    static Gvisor__Sentry__TaskExit m;
    gvisor__sentry__task_exit__init(&m);
    m.context_data = ctx_of(w, now_ns);
    return evb_build(&B, w->conn, 5, 0, &m.base);
}

/* w clones child (sentry/clone, in w's context). */
static const struct event *clone_ev(const struct who *w, int32_t child)
{
    static Gvisor__Sentry__CloneInfo m;
    gvisor__sentry__clone_info__init(&m);
    m.context_data = ctx_of(w, now_ns);
    m.created_thread_id = child;
    m.created_thread_group_id = child;
    m.created_thread_start_time_ns = 1000 + child;
    return evb_build(&B, w->conn, 2, 0, &m.base);
}

/* Evaluates ev at index; the number of alerts it raised (list not reset). */
static size_t feed_at(struct rules_engine *e, const struct event *ev, size_t index)
{
    size_t before = L.count;
    rules_engine_eval(e, ev, index, &L);
    return L.count - before;
}

static size_t feed(struct rules_engine *e, const struct event *ev)
{
    alert_list_reset(&L);
    return feed_at(e, ev, 0);
}

/* ---- the sequences of these tests ---- */

#define DOWNLOAD_EXEC                                                                                                 \
    "- list: download_programs\n"                                                                                     \
    "  items: [curl, wget]\n"                                                                                         \
    "- sequence: Downloaded file executed\n"                                                                          \
    "  desc: a file written by a download tool, then executed\n"                                                      \
    "  by: [container.id]\n"                                                                                          \
    "  within: 10m\n"                                                                                                 \
    "  steps:\n"                                                                                                      \
    "    - name: write\n"                                                                                             \
    "      condition: evt.type in (open, openat) and evt.is_open_write = true and proc.name in (download_programs)\n" \
    "    - name: run\n"                                                                                               \
    "      condition: evt.type = execve and proc.exepath = %write.fd.name\n"                                          \
    "  output: \"Downloaded file executed (file=%write.fd.name by=%write.proc.name run_by=%proc.name "              \
    "container=%container.id)\"\n"                                                                                    \
    "  priority: CRITICAL\n"                                                                                          \
    "  tags: [mitre_execution, T1105]\n"

static const struct who CURL = {1, 10, "curl", "c1"}, SH = {1, 11, "sh", "c1"};

/* ---- loading ---- */

static void test_loads_and_lists(void **state)
{
    (void)state;
    struct rule_set *rs = rules_ok(DOWNLOAD_EXEC
                                   "- sequence: Denied then read\n"
                                   "  desc: d\n"
                                   "  within: 90s\n"
                                   "  steps:\n"
                                   "    - name: denied\n"
                                   "      condition: evt.type = openat and evt.res = EACCES\n"
                                   "      at_least: 20\n"
                                   "      distinct: fd.name\n"
                                   "    - name: read\n"
                                   "      condition: evt.type = openat and evt.res = SUCCESS\n"
                                   "  unless: evt.type = procexit\n"
                                   "  output: x %denied.fd.name\n"
                                   "  priority: notice\n"
                                   "  enabled: false\n");
    assert_int_equal(rule_set_sequence_count(rs), 2);
    assert_int_equal(rule_set_rule_count(rs), 0);
    struct sequence_info si;
    rule_set_sequence_info(rs, 0, &si);
    assert_string_equal(si.name, "Downloaded file executed");
    assert_int_equal(si.priority, RULES_CRITICAL);
    assert_true(si.enabled);
    assert_int_equal(si.within_ns, 600000000000ll);
    assert_string_equal(si.by, "container.id");
    assert_int_equal(si.nsteps, 2);
    assert_false(si.has_unless);
    assert_int_equal(si.ntags, 2);
    assert_string_equal(si.tags[0], "T1105");
    assert_string_equal(si.file, "t.yaml");
    assert_int_equal(si.line, 3);
    char types[256];
    rule_set_sequence_step_types(rs, 0, 0, types, sizeof(types));
    assert_string_equal(types, "open,openat");
    rule_set_sequence_step_types(rs, 0, 1, types, sizeof(types));
    assert_string_equal(types, "execve");
    rule_set_sequence_info(rs, 1, &si);
    assert_false(si.enabled);
    assert_true(si.has_unless);
    assert_int_equal(si.within_ns, 90000000000ll);
    assert_string_equal(si.by, "");
    struct sequence_step_info st;
    rule_set_sequence_step(rs, 1, 0, &st);
    assert_string_equal(st.name, "denied");
    assert_int_equal(st.at_least, 20);
    assert_string_equal(st.distinct, "fd.name");
    rule_set_sequence_step(rs, 1, 2, &st);
    assert_string_equal(st.name, "unless");
    rule_set_sequence_step_types(rs, 1, 2, types, sizeof(types));
    assert_string_equal(types, "procexit");
    rule_set_free(rs);
}

#define SEQ_HEAD "- sequence: S\n  desc: d\n  within: 1m\n  output: o\n  priority: INFO\n"

static void test_refused_with_positions(void **state)
{
    (void)state;
    static const struct {
        const char *yaml, *error;
    } cases[] = {
        {"- sequence: S\n  desc: d\n  output: o\n  priority: INFO\n  steps:\n    - name: a\n      condition: evt.type = "
         "open\n",
         "t.yaml:1:13: error: sequence 'S': Item has no mapping for key 'within'"},
        {"- sequence: S\n  desc: d\n  within: 10x\n  output: o\n  priority: INFO\n  steps:\n    - name: a\n"
         "      condition: evt.type = open\n",
         "t.yaml:3:11: error: sequence 'S': 'within' is how long the whole chain may take"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open and fd.name = %b.fd.name\n"
                  "    - name: b\n      condition: evt.type = open\n",
         "t.yaml:8:48: error: sequence 'S', step 'a': '%b.fd.name' names step 'b', which is not before this one"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open\n"
                  "    - name: b\n      condition: evt.type = open and (fd.name = %a.fd.name or proc.name = x)\n",
         "t.yaml:10:49: error: sequence 'S', step 'b': a comparison with an earlier step's field goes at the top level"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open\n"
                  "    - name: b\n      condition: evt.type = open or fd.name = %a.fd.name\n",
         "t.yaml:10:47: error: sequence 'S', step 'b': a comparison with an earlier step's field goes at the top level"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open\n"
                  "    - name: b\n      condition: evt.type = open and fd.name contains %a.fd.name\n",
         "t.yaml:10:38: error: sequence 'S', step 'b': an earlier step's field compares as FIELD = %STEP.FIELD"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open\n"
                  "    - name: b\n      condition: evt.type = open and proc.pid = %a.fd.name\n",
         "t.yaml:10:38: error: sequence 'S', step 'b': 'proc.pid' and '%a.fd.name' hold different kinds of values"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open\n"
                  "    - name: b\n      condition: fd.name = %a.fd.name\n",
         "t.yaml:10:28: error: sequence 'S', step 'b': a step needs a condition besides its comparisons"},
        {SEQ_HEAD "  steps:\n    - name: proc\n      condition: evt.type = open\n",
         "t.yaml:7:13: error: sequence 'S': a step named 'proc' would read as a field"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open\n    - name: a\n"
                  "      condition: evt.type = open\n",
         "t.yaml:9:13: error: sequence 'S': two steps named 'a'"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open and fd.nam = x\n",
         "t.yaml:8:38: error: unknown field 'fd.nam'"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open\n      at_least: 0\n",
         "t.yaml:9:17: error: sequence 'S': step 'a': at_least is a count from 1 to 1000"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open\n      distinct: fd.name\n",
         "t.yaml:9:17: error: sequence 'S': step 'a': distinct counts the values of one field"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open\n  by: [proc.aname]\n",
         "t.yaml:9:8: error: sequence 'S': by: 'proc.aname' needs an index"},
        {"- sequence: S\n  desc: d\n  within: 1m\n  priority: INFO\n  steps:\n    - name: a\n"
         "      condition: evt.type = open\n  output: x %a.fd.nme\n",
         "t.yaml:8:14: error: unknown field 'fd.nme'"},
        {"- rule: S\n  desc: d\n  condition: evt.type = open\n  output: o\n  priority: INFO\n" SEQ_HEAD
         "  steps:\n    - name: a\n      condition: evt.type = open\n",
         "t.yaml:6:13: error: sequence 'S': a rule has this name"},
        {"- sequence: S\n  enabled: false\n  override: {enabled: replace}\n",
         "t.yaml:1:13: error: sequence 'S': override of a sequence that is not defined before"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open\n"
                  "- sequence: S\n  enabled: false\n  priority: INFO\n  override: {enabled: replace}\n",
         "t.yaml:11:3: error: sequence 'S': Unexpected key 'priority'"},
        {SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open and undefined_macro\n",
         "t.yaml:8:38: error: Undefined macro 'undefined_macro' used in filter."},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[4096];
        rules_errors(cases[i].yaml, out, sizeof(out));
        if (cases[i].error && !strstr(out, cases[i].error))
            fail_msg("case %zu: expected\n  %s\ngot\n%s", i, cases[i].error, out);
    }
}

/* %NAME.FIELD where NAME is no step of the sequence is no reference: the
 * condition language reads it (here a string), as Falco would. */
static void test_percent_not_a_step(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = openat and "
                                        "fd.name endswith %zz.fd.name\n    - name: b\n      condition: evt.type = execve "
                                        "and proc.exepath != %nope.x\n  unless: evt.type = procexit and proc.name = "
                                        "%later.proc.name\n",
                                        0, 0);
    struct who p = {1, 60, "sh", "c1"};
    assert_int_equal(feed(e, open_ev(&p, "%zz.fd.name", false, 0, 0)), 0);
    assert_int_equal(feed(e, exec_ev(&p, "/bin/ls")), 1);
    rules_engine_free(e);
}

static void test_override_and_redefine(void **state)
{
    (void)state;
    struct rule_set *rs = rules_ok(DOWNLOAD_EXEC "- sequence: Downloaded file executed\n  enabled: false\n"
                                                 "  tags: [extra]\n  override: {enabled: replace, tags: append}\n");
    struct sequence_info si;
    rule_set_sequence_info(rs, 0, &si);
    assert_false(si.enabled);
    assert_int_equal(si.ntags, 3);
    rule_set_free(rs);
    /* a definition of the same name replaces it where it stands */
    rs = rules_ok(DOWNLOAD_EXEC SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open\n"
                  "- sequence: Downloaded file executed\n  desc: again\n  within: 2h\n  output: o\n  priority: INFO\n"
                  "  steps:\n    - name: x\n      condition: evt.type = close\n");
    assert_int_equal(rule_set_sequence_count(rs), 2);
    rule_set_sequence_info(rs, 0, &si);
    assert_string_equal(si.desc, "again");
    assert_int_equal(si.within_ns, 7200000000000ll);
    assert_int_equal(si.nsteps, 1);
    rule_set_free(rs);
}

/* Unknown keys warn as Falco's do, the item loads. */
static void test_unknown_keys_warn(void **state)
{
    (void)state;
    const char *text = SEQ_HEAD "  steps:\n    - name: a\n      condition: evt.type = open\n      weight: 3\n"
                                "  color: red\n";
    struct rules_diag d = {0};
    struct rule_set *rs = rule_set_load_buffer("t.yaml", text, strlen(text), &d);
    assert_non_null(rs);
    char out[2048];
    FILE *fp = fmemopen(out, sizeof(out), "w");
    rules_diag_print(&d, fp);
    fclose(fp);
    assert_non_null(strstr(out, "t.yaml:9:7: warning: Unknown key 'weight'. The key will be ignored."));
    assert_non_null(strstr(out, "t.yaml:10:3: warning: Unknown key 'color'. The key will be ignored."));
    rules_diag_free(&d);
    rule_set_free(rs);
}

/* ---- matching ---- */

static void test_order_matters(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(DOWNLOAD_EXEC, 0, 0);
    assert_int_equal(feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0)), 0);
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 1);
    const struct alert *a = &L.items[0];
    assert_string_equal(a->rule, "Downloaded file executed");
    assert_int_equal(a->priority, RULES_CRITICAL);
    assert_non_null(strstr(a->output, "Downloaded file executed (file=/tmp/x by=curl run_by=x container=c1)"));
    assert_int_equal(a->nsteps, 2);
    assert_string_equal(a->steps[0].name, "write");
    assert_string_equal(a->steps[1].name, "run");
    /* the chain is consumed: running it again is no second alert */
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 0);
    /* reversed: run, then write */
    struct rules_engine *r = engine_seq(DOWNLOAD_EXEC, 0, 0);
    assert_int_equal(feed(r, exec_ev(&SH, "/tmp/y")), 0);
    assert_int_equal(feed(r, open_ev(&CURL, "/tmp/y", true, 0, 0)), 0);
    /* read, not written; another file run: nothing */
    assert_int_equal(feed(r, open_ev(&CURL, "/tmp/z", false, 0, 0)), 0);
    assert_int_equal(feed(r, exec_ev(&SH, "/tmp/z")), 0);
    assert_int_equal(feed(r, open_ev(&CURL, "/tmp/w", true, 0, 0)), 0);
    assert_int_equal(feed(r, exec_ev(&SH, "/tmp/other")), 0);
    struct rules_engine_stats st;
    rules_engine_get_stats(r, &st);
    assert_int_equal(st.sequence_partials, 2);   /* /tmp/y and /tmp/w wait to be run */
    assert_int_equal(st.sequence_alerts, 0);
    rules_engine_free(e);
    rules_engine_free(r);
}

/* The window is the daemon's clock: the events' own times say nothing. */
static void test_within_is_the_daemons_clock(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(DOWNLOAD_EXEC, 0, 0);
    now_ns = 1000000000;
    feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0));
    now_ns += 600000000000ll;   /* exactly 10 minutes: still in */
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 1);
    feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0));
    now_ns += 600000000001ll;   /* one nanosecond too late */
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 0);
    struct rules_engine_stats st;
    rules_engine_get_stats(e, &st);
    assert_int_equal(st.sequence_expired, 1);
    assert_int_equal(st.sequence_partials, 0);
    /* an event time far in the future changes nothing: only now_ns counts */
    feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0));
    CP.ctx.time_ns = INT64_MAX;
    now_ns += 1000;
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 1);
    /* expired chains no event comes back to go between batches */
    feed(e, open_ev(&CURL, "/tmp/q", true, 0, 0));
    now_ns += 700000000000ll;
    rules_engine_batch_stored(e, &L, 0);
    rules_engine_get_stats(e, &st);
    assert_int_equal(st.sequence_partials, 0);
    assert_int_equal(st.sequence_expired, 2);
    rules_engine_free(e);
}

static void test_by_separates(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(DOWNLOAD_EXEC, 0, 0);
    struct who sh2 = SH;
    sh2.container = "c2";
    feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0));
    assert_int_equal(feed(e, exec_ev(&sh2, "/tmp/x")), 0);   /* another container on the same connection */
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 1);
    rules_engine_free(e);
    /* by the process: two processes each doing half raise nothing */
    e = engine_seq("- sequence: Same process\n  desc: d\n  by: [proc.pid]\n  within: 1m\n  steps:\n"
                   "    - name: a\n      condition: evt.type = openat and fd.name = /etc/shadow\n"
                   "    - name: b\n      condition: evt.type = openat and fd.name = /tmp/out\n"
                   "  output: o %a.proc.pid %proc.pid\n  priority: INFO\n",
                   0, 0);
    struct who p1 = {1, 20, "cat", "c1"}, p2 = {1, 21, "cat", "c1"};
    feed(e, open_ev(&p1, "/etc/shadow", false, 0, 0));
    assert_int_equal(feed(e, open_ev(&p2, "/tmp/out", true, 0, 0)), 0);
    assert_int_equal(feed(e, open_ev(&p1, "/tmp/out", true, 0, 0)), 1);
    assert_non_null(strstr(L.items[0].output, "Informational o 20 20"));
    rules_engine_free(e);
}

/* Two connections never complete each other's chains, whatever their
 * events say (the same container id, the same pid). */
static void test_connections_apart(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(DOWNLOAD_EXEC, 0, 0);
    struct who other = SH;
    other.conn = 2;
    feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0));
    assert_int_equal(feed(e, exec_ev(&other, "/tmp/x")), 0);
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 1);
    /* a connection's close drops its chains (counted) */
    feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0));
    rules_engine_conn_closed(e, 1);
    struct rules_engine_stats st;
    rules_engine_get_stats(e, &st);
    assert_int_equal(st.sequence_partials, 0);
    assert_int_equal(st.sequence_dropped, 1);
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 0);
    rules_engine_free(e);
}

#define COUNTS                                                                                                        \
    "- sequence: Credential guessing\n  desc: d\n  by: [proc.pid]\n  within: 1m\n  steps:\n"                         \
    "    - name: denied\n      condition: evt.type = openat and evt.res = EACCES\n      at_least: 5\n%s"           \
    "    - name: got\n      condition: evt.type = openat and evt.res = SUCCESS\n"                                     \
    "  output: got %%fd.name after %%denied.fd.name\n  priority: WARNING\n"

static void test_counts_and_distinct(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof(text), COUNTS, "");
    struct rules_engine *e = engine_seq(text, 0, 0);
    struct who p = {1, 30, "python3", "c1"};
    for (int i = 0; i < 4; i++)
        feed(e, open_ev(&p, "/root/.aws/credentials", false, 13, 0));
    assert_int_equal(feed(e, open_ev(&p, "/etc/hostname", false, 0, 0)), 0);   /* four: not yet */
    feed(e, open_ev(&p, "/root/.aws/credentials", false, 13, 0));
    assert_int_equal(feed(e, open_ev(&p, "/etc/hostname", false, 0, 0)), 1);
    assert_int_equal(L.items[0].steps[0].count, 5);
    assert_non_null(strstr(L.items[0].json, "\"count\":5,\"first_time\":"));
    rules_engine_free(e);
    /* distinct: five denials of one path are one value */
    snprintf(text, sizeof(text), COUNTS, "      distinct: fd.name\n");
    e = engine_seq(text, 0, 0);
    for (int i = 0; i < 5; i++)
        feed(e, open_ev(&p, "/root/.aws/credentials", false, 13, 0));
    assert_int_equal(feed(e, open_ev(&p, "/etc/hostname", false, 0, 0)), 0);
    static const char *const paths[] = {"/a", "/b", "/c", "/d"};
    for (int i = 0; i < 4; i++)
        feed(e, open_ev(&p, paths[i], false, 13, 0));
    assert_int_equal(feed(e, open_ev(&p, "/etc/hostname", false, 0, 0)), 1);
    /* the count slides in the window: four old and one new are not five */
    for (int i = 0; i < 4; i++)
        feed(e, open_ev(&p, paths[i], false, 13, 0));
    now_ns += 61000000000ll;
    feed(e, open_ev(&p, "/e", false, 13, 0));
    assert_int_equal(feed(e, open_ev(&p, "/etc/hostname", false, 0, 0)), 0);
    rules_engine_free(e);
}

#define UNLESS_EXIT                                                                                                   \
    DOWNLOAD_EXEC "  unless: evt.type = procexit and proc.pid = %write.proc.pid\n"

static void test_unless_cancels(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(UNLESS_EXIT, 0, 0);
    feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0));
    feed(e, exit_ev(&SH));   /* another process ends: the chain stays */
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 1);
    feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0));
    feed(e, exit_ev(&CURL));   /* the writer ends: cancelled */
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 0);
    struct rules_engine_stats st;
    rules_engine_get_stats(e, &st);
    assert_int_equal(st.sequence_cancelled, 1);
    rules_engine_free(e);
}

/* `!=` and a join on any ancestor: the connecting process descends from
 * the reader's parent (the same process tree). */
static void test_ne_and_ancestor_join(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(
        "- sequence: Tree\n  desc: d\n  within: 1m\n  steps:\n"
        "    - name: read\n      condition: evt.type = openat and fd.name = /secret\n"
        "    - name: other\n      condition: evt.type = openat and fd.name = /out and proc.apid = %read.proc.ppid"
        " and proc.pid != %read.proc.pid\n"
        "  output: o %read.proc.pid %proc.pid\n  priority: INFO\n",
        0, 0);
    struct who shell = {1, 40, "sh", "c1"}, reader = {1, 41, "cat", "c1"}, sender = {1, 42, "curl", "c1"},
               grandchild = {1, 43, "curl", "c1"}, stranger = {1, 44, "curl", "c1"}, init = {1, 1, "init", "c1"};
    feed(e, clone_ev(&init, 40));
    feed(e, clone_ev(&shell, 41));
    feed(e, clone_ev(&shell, 42));
    feed(e, clone_ev(&sender, 43));
    feed(e, clone_ev(&init, 44));
    feed(e, open_ev(&reader, "/secret", false, 0, 0));
    assert_int_equal(feed(e, open_ev(&reader, "/out", true, 0, 0)), 0);    /* the reader itself: != */
    assert_int_equal(feed(e, open_ev(&stranger, "/out", true, 0, 0)), 0);  /* not under the reader's parent */
    assert_int_equal(feed(e, open_ev(&grandchild, "/out", true, 0, 0)), 1); /* its grandparent is 40 */
    assert_non_null(strstr(L.items[0].output, "o 41 43"));
    feed(e, open_ev(&reader, "/secret", false, 0, 0));
    assert_int_equal(feed(e, open_ev(&sender, "/out", true, 0, 0)), 1);    /* a sibling */
    rules_engine_free(e);
}

/* A step's condition is any Falco condition, transformers included
 * (issue 35 item 1: "every field, list, macro, transformer the rules
 * have"): tolower() and basename() in a step, a later step joined on the
 * earlier one's untransformed value. */
static void test_transformers_in_steps(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(
        "- sequence: Staged\n  desc: d\n  within: 1m\n  steps:\n"
        "    - name: write\n      condition: evt.type = openat and evt.is_open_write = true"
        " and tolower(fd.name) startswith /tmp/dl/\n"
        "    - name: run\n      condition: evt.type = execve and basename(proc.exepath) = payload"
        " and proc.exepath = %write.fd.name\n"
        "  output: o %write.fd.name\n  priority: INFO\n",
        0, 0);
    assert_int_equal(feed(e, open_ev(&CURL, "/TMP/DL/payload", true, 0, 0)), 0);
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/dl/payload")), 0);   /* the join compares the values as written */
    assert_int_equal(feed(e, exec_ev(&SH, "/TMP/DL/payload")), 1);
    assert_non_null(strstr(L.items[0].output, "o /TMP/DL/payload"));
    assert_int_equal(feed(e, open_ev(&CURL, "/tmp/other/payload", true, 0, 0)), 0);   /* tolower: not under /tmp/dl/ */
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/other/payload")), 0);
    assert_int_equal(feed(e, open_ev(&CURL, "/tmp/dl/notit", true, 0, 0)), 0);
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/dl/notit")), 0);   /* basename() is not payload */
    rules_engine_free(e);
}

/* A chain begun again with the same values is one partial match,
 * refreshed; other values are others. */
static void test_repeat_refreshes(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(DOWNLOAD_EXEC, 0, 0);
    for (int i = 0; i < 100; i++)
        feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0));
    struct rules_engine_stats st;
    rules_engine_get_stats(e, &st);
    assert_int_equal(st.sequence_partials, 1);
    /* begun again later: the window counts from the last one */
    now_ns += 500000000000ll;
    feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0));
    now_ns += 500000000000ll;
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 1);
    rules_engine_free(e);
}

/* The alert: Falco's JSON with the steps' events in a key of their own,
 * the ids given when the batch is stored. */
static void test_alert_json(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(DOWNLOAD_EXEC, 0, 0);
    now_ns = 5000000000;
    alert_list_reset(&L);
    CP.ctx.time_ns = 0;
    feed_at(e, open_ev(&CURL, "/tmp/x", true, 0, 7), 3);
    rules_engine_batch_stored(e, &L, 100);   /* index 3 was stored as event 103 */
    alert_list_reset(&L);
    dropped_now = 7;
    feed_at(e, exec_ev(&SH, "/tmp/x"), 0);
    feed_at(e, open_ev(&CURL, "/tmp/y", true, 0, 7), 4);
    dropped_now = 9;   /* the sandbox dropped 2 while the chain was open */
    feed_at(e, exec_ev(&SH, "/tmp/y"), 5);
    dropped_now = 0;
    assert_int_equal(L.count, 2);
    /* before the batch is stored its own steps have no id yet */
    assert_non_null(strstr(L.items[0].json, "{\"name\":\"run\",\"event_id\":null,"));
    rules_engine_batch_stored(e, &L, 200);
    const char *want =
        "{\"hostname\":\"h1\",\"output\":\"00:00:05.000000000: Critical Downloaded file executed (file=/tmp/x by=curl "
        "run_by=x container=c1)\",\"output_fields\":{\"container.id\":\"c1\",\"evt.time\":5000000000,\"proc.name\":"
        "\"x\",\"write.fd.name\":\"/tmp/x\",\"write.proc.name\":\"curl\"},\"priority\":\"Critical\",\"rule\":"
        "\"Downloaded file executed\",\"seccheckd_sequence\":{\"steps\":[{\"name\":\"write\",\"event_id\":103,\"time\":"
        "\"1970-01-01T00:00:05.000000000Z\"},{\"name\":\"run\",\"event_id\":200,\"time\":"
        "\"1970-01-01T00:00:05.000000000Z\"}]},\"source\":\"syscall\",\"tags\":[\"T1105\",\"mitre_execution\"],"
        "\"time\":\"1970-01-01T00:00:05.000000000Z\"}";
    assert_string_equal(L.items[0].json, want);
    assert_int_equal(L.items[0].json_len, strlen(want));
    assert_int_equal(L.items[0].steps[1].event_id, 200);
    assert_non_null(strstr(L.items[1].json, "\"steps\":[{\"name\":\"write\",\"event_id\":204,"));
    assert_non_null(strstr(L.items[1].json, "{\"name\":\"run\",\"event_id\":205,"));
    assert_non_null(strstr(L.items[1].json, "}],\"sandbox_dropped\":2}"));
    assert_int_equal(L.items[1].sandbox_dropped, 2);
    /* the same text as the sink renders it for the database, ids from the batch */
    struct strbuf sb = {0};
    rules_alert_sequence_json(&sb, &L.items[1], 0);
    assert_string_equal(sb.data, "{\"steps\":[{\"name\":\"write\",\"event_id\":204,\"time\":\"1970-01-01T00:00:05."
                                 "000000000Z\"},{\"name\":\"run\",\"event_id\":205,\"time\":\"1970-01-01T00:00:05."
                                 "000000000Z\"}],\"sandbox_dropped\":2}");
    strbuf_free(&sb);
    rules_engine_free(e);
}

/* Per (sequence, connection) bound: the oldest goes, counted, and the
 * connection's next alert, of any rule, says how many. */
static void test_group_bound_and_next_alert(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(DOWNLOAD_EXEC "- rule: Any exec\n  desc: d\n  condition: evt.type = execve and "
                                        "proc.exepath = /bin/ls\n  output: ls\n  priority: INFO\n",
                                        0, 4);
    char path[64];
    for (int i = 0; i < 10; i++) {
        snprintf(path, sizeof(path), "/tmp/f%d", i);
        feed(e, open_ev(&CURL, path, true, 0, 0));
    }
    struct rules_engine_stats st;
    rules_engine_get_stats(e, &st);
    assert_int_equal(st.sequence_partials, 4);
    assert_int_equal(st.sequence_evicted, 6);
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/f0")), 0);   /* evicted: its chain is lost */
    assert_int_equal(feed(e, exec_ev(&SH, "/bin/ls")), 1);   /* a rule's alert says it */
    assert_int_equal(L.items[0].evicted, 6);
    assert_non_null(strstr(L.items[0].json, "\"rule\":\"Any exec\",\"seccheckd_evicted\":6,\"source\""));
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/f9")), 1);   /* said once */
    assert_int_equal(L.items[0].evicted, 0);
    assert_null(strstr(L.items[0].json, "seccheckd_evicted"));
    rules_engine_free(e);
}

/* The byte bound over every connection: a flood of chains on one connection
 * evicts its own, and the quiet connection's chain still completes. */
static void test_byte_bound_blinds_only_the_flood(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(DOWNLOAD_EXEC, 64 * 1024, 100000);
    struct who quiet_curl = {7, 10, "curl", "q"}, quiet_sh = {7, 11, "sh", "q"};
    feed(e, open_ev(&quiet_curl, "/tmp/quiet", true, 0, 0));
    struct who hostile = {9, 66, "curl", "h"};
    char path[64];
    for (int i = 0; i < 100000; i++) {
        snprintf(path, sizeof(path), "/tmp/h%d", i);
        feed(e, open_ev(&hostile, path, true, 0, 0));
    }
    struct rules_engine_stats st;
    rules_engine_get_stats(e, &st);
    assert_true(st.sequence_bytes <= 64 * 1024);
    assert_true(st.sequence_evicted > 99000);
    assert_true(rules_engine_consistent(e));
    assert_int_equal(feed(e, exec_ev(&quiet_sh, "/tmp/quiet")), 1);
    assert_int_equal(L.items[0].evicted, 0);   /* the quiet one lost nothing */
    struct who hostile_sh = {9, 67, "sh", "h"};
    assert_int_equal(feed(e, exec_ev(&hostile_sh, "/tmp/h99999")), 1);   /* its newest survive */
    assert_true(L.items[0].evicted > 99000);
    rules_engine_free(e);
}

/* Thousands of chains on one connection: the index grows under them (its
 * buckets double past 1024, 2048, 4096) and every one is still found. */
static void test_index_grows(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(DOWNLOAD_EXEC, 0, 100000);
    char path[64];
    for (int i = 0; i < 5000; i++) {
        snprintf(path, sizeof(path), "/tmp/f%d", i);
        assert_int_equal(feed(e, open_ev(&CURL, path, true, 0, 0)), 0);
        if (i % 512 == 0 || (i >= 1020 && i <= 1030))
            assert_true(rules_engine_consistent(e));
    }
    assert_true(rules_engine_consistent(e));
    struct rules_engine_stats st;
    rules_engine_get_stats(e, &st);
    assert_int_equal(st.sequence_partials, 5000);
    assert_int_equal(st.sequence_evicted, 0);
    static const int runs[] = {0, 1023, 1024, 2047, 2500, 4095, 4999};
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        snprintf(path, sizeof(path), "/tmp/f%d", runs[i]);
        assert_int_equal(feed(e, exec_ev(&SH, path)), 1);
        assert_int_equal(feed(e, exec_ev(&SH, path)), 0);   /* consumed */
    }
    rules_engine_get_stats(e, &st);
    assert_int_equal(st.sequence_partials, 5000 - 7);
    assert_true(rules_engine_consistent(e));
    rules_engine_conn_closed(e, 1);
    assert_true(rules_engine_consistent(e));
    rules_engine_get_stats(e, &st);
    assert_int_equal(st.sequence_partials, 0);
    assert_int_equal(st.sequence_dropped, 5000 - 7);
    rules_engine_free(e);
}

/* New rules: the old set's partial matches go, counted. */
static void test_rules_change_drops_state(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq(DOWNLOAD_EXEC, 0, 0);
    feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0));
    rules_engine_set_rules(e, rules_ok(DOWNLOAD_EXEC));
    struct rules_engine_stats st;
    rules_engine_get_stats(e, &st);
    assert_int_equal(st.sequence_dropped, 1);
    assert_int_equal(st.sequence_partials, 0);
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 0);
    rules_engine_set_rules(e, NULL);
    assert_int_equal(feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0)), 0);
    rules_engine_free(e);
}

/* A sequence and a rule see the same event: the first rule matching
 * (rule_matching first) does not hide it from the sequences. */
static void test_rules_and_sequences_both(void **state)
{
    (void)state;
    struct rules_diag d = {0};
    const char *text = DOWNLOAD_EXEC "- rule: Exec\n  desc: d\n  condition: evt.type = execve\n  output: e\n"
                                     "  priority: INFO\n";
    struct rule_set *rs = rule_set_load_buffer("t.yaml", text, strlen(text), &d);
    assert_non_null(rs);
    rules_diag_free(&d);
    struct rules_engine_config cfg;
    rules_engine_config_defaults(&cfg);
    cfg.clock_ns = test_clock;
    struct rules_engine *e = rules_engine_new(&cfg);
    rules_engine_set_rules(e, rs);
    feed(e, open_ev(&CURL, "/tmp/x", true, 0, 0));
    assert_int_equal(feed(e, exec_ev(&SH, "/tmp/x")), 2);
    assert_string_equal(L.items[0].rule, "Exec");
    assert_string_equal(L.items[1].rule, "Downloaded file executed");
    rules_engine_free(e);
}

/* A one-step sequence with a count: a burst (a scan) in one alert. */
static void test_one_step_burst(void **state)
{
    (void)state;
    struct rules_engine *e = engine_seq("- sequence: Burst\n  desc: d\n  by: [proc.pid]\n  within: 10s\n  steps:\n"
                                        "    - name: failed\n      condition: evt.type = openat and evt.res = ENOENT\n"
                                        "      at_least: 3\n      distinct: fd.name\n"
                                        "  output: burst %failed.fd.name %proc.name\n  priority: INFO\n",
                                        0, 0);
    struct who p = {1, 50, "nmap", "c1"};
    feed(e, open_ev(&p, "/1", false, 2, 0));
    feed(e, open_ev(&p, "/2", false, 2, 0));
    assert_int_equal(feed(e, open_ev(&p, "/3", false, 2, 0)), 1);
    assert_int_equal(L.items[0].nsteps, 1);
    assert_int_equal(L.items[0].steps[0].count, 3);
    /* the chain is done: the next burst counts from zero */
    assert_int_equal(feed(e, open_ev(&p, "/4", false, 2, 0)), 0);
    rules_engine_free(e);
}

/* A file of sequences by the thousand is refused past SEQ_MAX_SEQUENCES (each
 * takes ~18 KiB compiled): one error, at the first one too many. */
static void test_too_many_sequences(void **state)
{
    (void)state;
    struct strbuf text = {0};
    for (int i = 0; i < 1001; i++)
        strbuf_printf(&text, "- sequence: s%d\n  desc: d\n  within: 1m\n  output: o\n  priority: INFO\n  steps:\n"
                      "    - name: a\n      condition: evt.type = open\n", i);
    char out[4096];
    rules_errors(text.data, out, sizeof(out));
    assert_non_null(strstr(out, "t.yaml:8001:13: error: more than 1000 sequences\n"));
    strbuf_free(&text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loads_and_lists),
        cmocka_unit_test(test_refused_with_positions),
        cmocka_unit_test(test_percent_not_a_step),
        cmocka_unit_test(test_override_and_redefine),
        cmocka_unit_test(test_unknown_keys_warn),
        cmocka_unit_test(test_order_matters),
        cmocka_unit_test(test_within_is_the_daemons_clock),
        cmocka_unit_test(test_by_separates),
        cmocka_unit_test(test_connections_apart),
        cmocka_unit_test(test_counts_and_distinct),
        cmocka_unit_test(test_unless_cancels),
        cmocka_unit_test(test_ne_and_ancestor_join),
        cmocka_unit_test(test_repeat_refreshes),
        cmocka_unit_test(test_alert_json),
        cmocka_unit_test(test_group_bound_and_next_alert),
        cmocka_unit_test(test_byte_bound_blinds_only_the_flood),
        cmocka_unit_test(test_index_grows),
        cmocka_unit_test(test_rules_change_drops_state),
        cmocka_unit_test(test_rules_and_sequences_both),
        cmocka_unit_test(test_one_step_burst),
        cmocka_unit_test(test_too_many_sequences),
        cmocka_unit_test(test_transformers_in_steps),
    };
    return cmocka_run_group_tests(tests, rules_group_setup, rules_group_teardown);
}
