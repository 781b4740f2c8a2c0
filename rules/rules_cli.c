/* rules_cli.c - the rules commands: check a rules set, or run it offline
 * over recorded traces (one connection each) or a seccheckd database (its
 * raw packets decoded again, in id order), printing the alerts the daemon
 * would raise as Falco JSON lines. */
#include "rules_cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>

#include "arena.h"
#include "cli.h"
#include "clock.h"
#include "falco_report.h"
#include "decode.h"
#include "rules.h"
#include "runsc_target.h"
#include "tracefile.h"
#include "wire.h"
#include "yaml_tree.h"

#define PROG "seccheckd rules"

enum { RC_OK = 0, RC_FAILED = 1, RC_USAGE = 2 };

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: seccheckd rules check [--pod-init FILE] [--runsc PATH | --runsc-metadata FILE]\n"
            "                             [--rules-absent-fields disable|run] PATH...\n"
            "       seccheckd rules check --falco [--runsc PATH | --runsc-metadata FILE]\n"
            "                             [--rules-absent-fields disable|run] FILE...\n"
            "       seccheckd rules test PATH... (--trace FILE... | --db DB) [options]\n"
            "Checks Falco-format rules files, or evaluates them offline.\n"
            "\n"
            "  PATH               a rules file, or a directory (its *.yaml and *.yml files in name\n"
            "                     order); only regular files are read\n"
            "\n"
            "Rules load as Falco's engine " RULES_FALCO_ENGINE_VERSION " loads them (its required_engine_version is\n"
            "checked against that version).\n"
            "check: prints the engine version, a summary (lists, macros, rules enabled and skipped)\n"
            "       and one line per rule: its priority and the event types it can match; then each\n"
            "       sequence (its window, by, and each step's event types); every error as\n"
            "       FILE:LINE:COLUMN: error: MESSAGE (exit 2), warnings the same way.\n"
            "  --pod-init FILE    a runsc pod-init config (seccheckd gvisor-config): warns, as\n"
            "                     FILE:LINE: warning: ..., for each point, optional or context field\n"
            "                     a rule needs that FILE does not enable (exit 0 all the same)\n"
            "  --runsc PATH       the runsc the rules run with: warns for each rule that reads what it\n"
            "                     does not send (a newer release does); 2022-12: runsc 0.0~20221219,\n"
            "                     built in [runsc in PATH, else 2022-12; asked only when a rule needs\n"
            "                     more than runsc 2022-12 sends]\n"
            "  --runsc-metadata FILE\n"
            "                     what `runsc trace metadata` printed, saved, as the target\n"
            "  --falco            a migration report for Falco's rules files, given in Falco's\n"
            "                     rules_files order (falco_rules.yaml, falco-incubating_rules.yaml,\n"
            "                     ..., your falco_rules.local.yaml last): per rule, runs / newer runsc\n"
            "                     (which release, for what) / disabled (the fields gVisor never\n"
            "                     reports) / never true (no event satisfies its condition as loaded:\n"
            "                     an empty list to fill, as in Falco) / off (enabled: false); what\n"
            "                     changes in behaviour against Falco; a count of each (runsc:\n"
            "                     --runsc, else the one in PATH, else 2022-12)\n"
            "  --append-output suggested|none|FILE\n"
            "                     what Falco's append_output adds to each rule's output, as the\n"
            "                     daemon's option: suggested (falco.yaml's default: container_id,\n"
            "                     container_name, image, k8s_pod_name, k8s_ns_name), none, or a\n"
            "                     falco.yaml's append_output [suggested] (check and test)\n"
            "  --rules-absent-fields disable|run\n"
            "                     rules whose condition needs a field gVisor never reports\n"
            "                     (evt.buffer, thread.cap_*...) are loaded disabled, each listed\n"
            "                     with those fields [disable]; run: load them enabled anyway\n"
            "                     (check and test)\n"
            "test:  prints each alert as one Falco JSON line on standard output (a sequence's with its\n"
            "       steps: over --db, their stored events' ids), and the alerts per rule and sequence\n"
            "       on standard error.\n"
            "  --trace FILE...    gVisor tracereplay files, each one sandbox connection\n"
            "  --db DB            a seccheckd database: every stored event, in id order\n"
            "  --rule-matching first|all  the first rule in load order that matches alerts,\n"
            "                     as Falco, or every one [%s]\n"
            "  --alerts-rate N    alerts per second per rule and connection [%g]; 0: no\n"
            "                     per-rule limit\n"
            "  --alerts-burst N   per-rule burst [%g]\n"
            "  --alerts-ceiling N alerts per second per connection, every rule [%g]; 0: none\n"
            "  --alerts-ceiling-burst N  alerts a connection may raise at once [%g]\n"
            "                     (the limits' clock: over --db the daemon's stored receive\n"
            "                     times, over traces this run's; never the events' own times)\n"
            "  --max-processes N  process table bound [%d]\n"
            "  --sequence-memory BYTES, --sequence-partials N  the bounds of sequences' partial\n"
            "                     matches, as the daemon's [32M, 1024]\n"
            "  --hostname NAME    the alerts' hostname [this host's]\n"
            "  --rules-absent-fields disable|run   as for check\n"
            "  --help, -h         this text\n"
            "\n"
            "Exit status: 0 done, 1 a trace or database could not be read, 2 usage error or\n"
            "rules with errors.\n",
            rules_matching_name(RULES_DEFAULT_MATCHING), RULES_DEFAULT_RATE, RULES_DEFAULT_BURST, RULES_DEFAULT_CEILING,
            RULES_DEFAULT_CEILING_BURST, RULES_DEFAULT_MAX_PROCESSES);
}

/* "seccheckd rules: PROBLEM[ 'ARG'] (try --help)", exit status 2. */
static int usage_error(const char *problem, const char *arg)
{
    if (arg)
        fprintf(stderr, PROG ": %s '%s' (try --help)\n", problem, arg);
    else
        fprintf(stderr, PROG ": %s (try --help)\n", problem);
    return RC_USAGE;
}

/* ---- check ---- */

static struct rule_set *load(const char *const *paths, size_t n, bool print_warnings)
{
    struct rules_diag diag = {0};
    struct rule_set *rs = rule_set_load(paths, n, &diag);
    if (!rs || print_warnings)
        rules_diag_print(&diag, stderr);
    if (!rs)
        fprintf(stderr, PROG ": %zu error%s: rules not loaded\n", diag.errors, cli_plural(diag.errors));
    rules_diag_free(&diag);
    return rs;
}

/* ---- check against a pod-init config ---- */

#define POD_INIT_MAX_BYTES (1u << 20)

/* The names of a YAML sequence of strings as bits (unknown names ignored:
 * runsc would refuse them itself). */
static unsigned name_bits(const struct ynode *seq, unsigned (*parse)(const char *))
{
    unsigned bits = 0;
    for (size_t i = 0; seq && seq->kind == YN_SEQ && i < seq->count; i++)
        if (seq->items[i]->kind == YN_SCALAR)
            bits |= parse(seq->items[i]->value);
    return bits;
}

/* The whole of a small file, NUL-terminated; NULL with the problem printed. */
static char *read_small_file(const char *path, size_t max, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, PROG ": cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(max + 1);
    *len = buf ? fread(buf, 1, max + 1, fp) : 0;
    bool failed = !buf || ferror(fp);
    fclose(fp);
    if (failed || *len > max) {
        fprintf(stderr, PROG ": cannot read %s: %s\n", path,
                !buf ? "out of memory" : *len > max ? "too large for a pod-init config" : strerror(errno));
        free(buf);
        return NULL;
    }
    buf[*len] = '\0';
    return buf;
}

/* Each point of the list, with its fields, into out. 0, or -1 said. */
static int add_points(const char *path, const struct ynode *points, struct rules_needs *out)
{
    for (size_t i = 0; i < points->count; i++) {
        const struct ynode *p = points->items[i];
        const struct ynode *name = p->kind == YN_MAP ? ytree_get(p, "name") : NULL;
        if (!name || name->kind != YN_SCALAR) {
            fprintf(stderr, PROG ": %s:%u:%u: a point without a name\n", path, p->line, p->column);
            return -1;
        }
        unsigned optional = name_bits(ytree_get(p, "optional_fields"), rules_optional_parse);
        unsigned context = name_bits(ytree_get(p, "context_fields"), rules_context_parse);
        /* a name too long for any point runsc has: nothing a rule needs */
        if (strlen(name->value) < RULES_POINT_MAX &&
            rules_needs_add(out, name->value, optional, context, RULES_WHY_MATCHES) != 0) {
            fprintf(stderr, PROG ": out of memory\n");
            return -1;
        }
    }
    return 0;
}

/* The points a pod-init config enables, with their fields (its JSON read as
 * YAML). 0, or -1 with the problem printed. */
static int read_pod_init(const char *path, struct rules_needs *out)
{
    size_t len;
    char *buf = read_small_file(path, POD_INIT_MAX_BYTES, &len);
    if (!buf)
        return -1;
    struct arena a;
    arena_init(&a, 64 * 1024, 64u << 20);
    struct ynode **docs = NULL;
    size_t ndocs = 0;
    struct ytree_error err = {0};
    int rc = -1;
    if (ytree_parse(&a, buf, len, &docs, &ndocs, &err) != 0) {
        fprintf(stderr, PROG ": %s:%u:%u: cannot read it as JSON: %s\n", path, err.line, err.column, err.message);
    } else {
        const struct ynode *top = ndocs == 1 && docs[0]->kind == YN_MAP ? docs[0] : NULL;
        const struct ynode *session = top ? ytree_get(top, "trace_session") : NULL;
        const struct ynode *points = session && session->kind == YN_MAP ? ytree_get(session, "points") : NULL;
        if (points && points->kind == YN_SEQ)
            rc = add_points(path, points, out);
        else
            fprintf(stderr, PROG ": %s: not a pod-init config: expected {\"trace_session\": {\"points\": [...]}} "
                    "(seccheckd gvisor-config writes one)\n", path);
    }
    arena_free(&a);
    free(buf);
    return rc;
}

/* Prints, per bit of missing, "RULE_FILE:LINE: warning: ..."; returns how
 * many. */
static size_t warn_fields(const struct rule_info *r, const char *config, const char *point, unsigned missing,
                          const char *kind, const char *(*name)(unsigned))
{
    size_t n = 0;
    for (unsigned b = 0; name(b); b++)
        if (missing >> b & 1) {
            fprintf(stderr, "%s:%u: warning: rule '%s' reads the %s field %s at %s, which %s does not enable\n",
                    r->file, r->line, r->name, kind, name(b), point, config);
            n++;
        }
    return n;
}

static const char *why_text(unsigned why)
{
    if (why & RULES_WHY_MATCHES)
        return "the rule matches its events";
    if (why & RULES_WHY_PROCESS)
        return "it keeps the process table the rule reads";
    return "runsc 2022-12 sends the context fields of a raw exit point only with its enter point enabled";
}

/* Rule i, or sequence i - rule count, as check and its warnings name it:
 * its file, line and name (a sequence's as a rule's). */
static void detector_info(const struct rule_set *rs, size_t i, struct rule_info *info)
{
    size_t nrules = rule_set_rule_count(rs);
    if (i < nrules) {
        rule_set_rule_info(rs, i, info);
        return;
    }
    struct sequence_info s;
    rule_set_sequence_info(rs, i - nrules, &s);
    *info = (struct rule_info){.name = s.name, .desc = s.desc, .priority = s.priority, .enabled = s.enabled,
                               .tags = s.tags, .ntags = s.ntags, .file = s.file, .line = s.line};
}

/* What rule i needs (i past the rules: a sequence), on target without what
 * target lacks. 0, or -1 out of memory. */
static int detector_needs(const struct rule_set *rs, size_t i, const struct runsc_target *target, unsigned parts,
                          struct rules_needs *out)
{
    size_t nrules = rule_set_rule_count(rs);
    if (i >= nrules)
        return rule_set_sequence_needs_on(rs, i - nrules, target, parts, out);
    return rule_set_rule_needs_on(rs, i, target, parts, out);
}

static size_t detector_count(const struct rule_set *rs)
{
    return rule_set_rule_count(rs) + rule_set_sequence_count(rs);
}

/* What rule i needs on target (NULL: runsc 2022-12), without what target
 * lacks (said by check_runsc). 0, or -1 out of memory. */
static int needs_on(const struct rule_set *rs, size_t i, const struct runsc_target *target, struct rules_needs *out)
{
    struct rules_needs all = {0};
    int rc = detector_needs(rs, i, target, RULES_NEED_ALL, &all);
    if (rc == 0 && target)
        rc = runsc_target_keep(target, &all, out);
    else if (rc == 0)
        *out = all, all = (struct rules_needs){0};
    rules_needs_free(&all);
    return rc;
}

/* Warns for what each enabled rule needs that config does not enable (of
 * what target has). The number of warnings, or -1 out of memory. */
static long check_pod_init(const struct rule_set *rs, const char *config, const struct rules_needs *have,
                           const struct runsc_target *target)
{
    long warnings = 0;
    for (size_t i = 0; i < detector_count(rs); i++) {
        struct rule_info info;
        detector_info(rs, i, &info);
        struct rules_needs need = {0};
        if (needs_on(rs, i, target, &need) != 0) {
            rules_needs_free(&need);
            return -1;
        }
        for (size_t k = 0; k < need.count; k++) {
            const struct rules_need *n = &need.items[k];
            const struct rules_need *h = rules_needs_find(have, n->point);
            if (!h) {
                fprintf(stderr, "%s:%u: warning: rule '%s' needs the point %s, which %s does not enable (%s)\n",
                        info.file, info.line, info.name, n->point, config, why_text(n->why));
                warnings++;
                continue;
            }
            warnings += (long)warn_fields(&info, config, n->point, n->optional & ~h->optional, "optional",
                                          rules_optional_name);
            warnings += (long)warn_fields(&info, config, n->point,
                                          n->context & ~h->context & ~(unsigned)RULES_CTX_BEST_EFFORT, "context",
                                          rules_context_name);
        }
        rules_needs_free(&need);
    }
    return warnings;
}

/* "10m", "90s", "1500ms": a within as the rules file would say it. */
static void print_duration(int64_t ns)
{
    static const struct {
        int64_t ns;
        const char *unit;
    } units[] = {{86400000000000ll, "d"}, {3600000000000ll, "h"}, {60000000000ll, "m"}, {1000000000ll, "s"},
                 {1000000ll, "ms"}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (ns % units[i].ns == 0 || i + 1 == sizeof(units) / sizeof(units[0])) {
            printf("%lld%s", (long long)(ns / units[i].ns), units[i].unit);
            return;
        }
}

/* The sequences: one line each (priority, window, by), then a line per
 * step with the event types it can match, its count, and unless. */
static void print_sequences(const struct rule_set *rs)
{
    size_t n = rule_set_sequence_count(rs), enabled = 0;
    if (!n)
        return;
    for (size_t i = 0; i < n; i++) {
        struct sequence_info info;
        rule_set_sequence_info(rs, i, &info);
        enabled += info.enabled;
    }
    printf("%zu sequence%s (%zu enabled)\n", n, cli_plural(n), enabled);
    char types[4096];
    for (size_t i = 0; i < n; i++) {
        struct sequence_info info;
        rule_set_sequence_info(rs, i, &info);
        printf("  %s [%s%s]: %zu step%s within ", info.name, rules_priority_name(info.priority),
               info.enabled ? "" : ", disabled", info.nsteps, cli_plural(info.nsteps));
        print_duration(info.within_ns);
        printf("%s%s\n", info.by[0] ? " by " : "", info.by);
        for (size_t k = 0; k <= info.nsteps; k++) {
            if (k == info.nsteps && !info.has_unless)
                break;
            struct sequence_step_info st;
            rule_set_sequence_step(rs, i, k, &st);
            rule_set_sequence_step_types(rs, i, k, types, sizeof(types));
            if (k < info.nsteps)
                printf("    %zu. %s: %s", k + 1, st.name, types);
            else
                printf("    unless: %s", types);
            if (st.at_least > 1)
                printf(" (at least %u%s%s)", st.at_least, st.distinct ? ", distinct " : "",
                       st.distinct ? st.distinct : "");
            printf("\n");
        }
    }
}

/* The summary, then one line per rule ("  NAME [Priority]: types"; more
 * per-rule facts go on the rule's line, after the types). */
static void print_summary(const struct rule_set *rs)
{
    struct rule_set_stats st;
    rule_set_get_stats(rs, &st);
    printf("Falco engine version %s semantics (falcosecurity/falco %s)\n", RULES_FALCO_ENGINE_VERSION,
           RULES_FALCO_COMMIT);
    printf("%zu list%s, %zu macro%s, %zu rule%s (%zu enabled", st.lists, cli_plural(st.lists), st.macros,
           cli_plural(st.macros), st.rules, cli_plural(st.rules), st.rules_enabled);
    if (st.rules_absent)
        printf(", %zu disabled: fields gVisor never reports", st.rules_absent);
    if (st.rules_skipped)
        printf(", %zu skipped", st.rules_skipped);
    printf(") in %zu file%s\n", st.files, cli_plural(st.files));
    char types[4096];
    for (size_t i = 0; i < rule_set_rule_count(rs); i++) {
        struct rule_info info;
        rule_set_rule_info(rs, i, &info);
        rule_set_rule_types(rs, i, types, sizeof(types));
        bool absent_off;
        const char *absent = rule_set_rule_absent(rs, i, &absent_off);
        printf("  %s [%s%s]: %s\n", info.name, rules_priority_name(info.priority), info.enabled ? "" : ", disabled",
               types);
        if (absent)
            printf("    %s fields gVisor never reports: %s\n", absent_off ? "disabled, needs" : "needs", absent);
    }
    print_sequences(rs);
}

/* --rules-absent-fields MODE: 0, or RC_USAGE said. */
static int set_absent_mode(const char *v)
{
    enum rules_absent_mode m;
    if (rules_absent_mode_parse(v, &m) != 0)
        return usage_error("--rules-absent-fields: expected disable or run, got", v);
    rules_set_absent_mode(m);
    return RC_OK;
}

/* --append-output SPEC (rules.h): 0, or RC_USAGE said. */
static int set_append_output(const char *spec)
{
    char err[512];
    struct rules_append_output *ao = rules_append_output_load(spec, err, sizeof(err));
    if (!ao) {
        fprintf(stderr, PROG ": --append-output: %s\n", err);
        return RC_USAGE;
    }
    rules_set_append_output(ao);
    return RC_OK;
}

/* Rules whose condition reads what target does not send (they raise
 * nothing for it; an output field would only be <NA>): a warning for each
 * part; the number of such rules, or -1 out of memory. */
static long check_runsc(const struct rule_set *rs, const struct runsc_target *target, FILE *out)
{
    long rules = 0;
    for (size_t i = 0; i < detector_count(rs); i++) {
        struct rule_info info;
        detector_info(rs, i, &info);
        struct rules_needs need = {0};
        if (detector_needs(rs, i, target, RULES_NEED_CONDITION, &need) != 0) {
            rules_needs_free(&need);
            return -1;
        }
        bool is_sequence = i >= rule_set_rule_count(rs);
        rules += runsc_target_warn(target, info.file, info.line, is_sequence, info.name, &need, out) > 0;
        rules_needs_free(&need);
    }
    return rules;
}

struct check_options {
    const char *pod_init, *runsc, *metadata, *absent, *append;
    bool falco;
};

/* A check option at argv[*i] ("--NAME V" or "--NAME=V"): 1 taken, 0 not
 * this one, -1 without a value. */
static int check_option(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0 || (argv[*i][n] != '=' && argv[*i][n] != '\0'))
        return 0;
    *value = argv[*i][n] == '=' ? argv[*i] + n + 1 : *i + 1 < argc ? argv[++*i] : "";
    return **value ? 1 : -1;
}

/* check's own options, first. The index of the first PATH, or -1 after a
 * usage error. */
static int parse_check(int argc, char **argv, struct check_options *o)
{
    int first = 1;
    for (; first < argc; first++) {
        if (strcmp(argv[first], "--falco") == 0) {
            o->falco = true;
            continue;
        }
        int rc = check_option(argc, argv, &first, "--pod-init", &o->pod_init);
        if (rc == 0)
            rc = check_option(argc, argv, &first, "--runsc", &o->runsc);
        if (rc == 0)
            rc = check_option(argc, argv, &first, "--runsc-metadata", &o->metadata);
        if (rc == 0)
            rc = check_option(argc, argv, &first, "--rules-absent-fields", &o->absent);
        if (rc == 0)
            rc = check_option(argc, argv, &first, "--append-output", &o->append);
        if (rc < 0) {
            usage_error(strncmp(argv[first], "--pod-init", 10) == 0 ? "--pod-init needs a FILE"
                        : strncmp(argv[first], "--append-output", 15) == 0 ? "--append-output needs suggested, none "
                                                                             "or a FILE"
                        : strncmp(argv[first], "--runsc-metadata", 16) == 0 ? "--runsc-metadata needs a FILE"
                        : strncmp(argv[first], "--rules-absent-fields", 21) == 0
                            ? "--rules-absent-fields needs disable or run"
                            : "--runsc needs a PATH",
                        NULL);
            return -1;
        }
        if (rc == 0)
            break;
    }
    if (o->absent && set_absent_mode(o->absent) != RC_OK)
        return -1;
    if (o->append && set_append_output(o->append) != RC_OK)
        return -1;
    if (o->runsc && o->metadata) {
        usage_error("--runsc and --runsc-metadata both name the target: give one", NULL);
        return -1;
    }
    const char *bad = NULL;
    for (int i = first; i < argc && !bad; i++)
        if (argv[i][0] == '-' && argv[i][1])
            bad = argv[i];
    if (argc <= first || bad) {
        usage_error(bad ? "check: unknown option"
                    : o->falco ? "check --falco needs the rules files, in Falco's rules_files order "
                                 "(falco_rules.yaml first, falco_rules.local.yaml last)"
                               : "check needs at least one PATH",
                    bad);
        return -1;
    }
    return first;
}

/* The runsc the rules are checked for: the one named, else (only when a
 * rule needs more than runsc 2022-12 sends) runsc in PATH. *have false:
 * none needed. 0, or RC_USAGE / RC_FAILED said. */
static int check_target(const struct rule_set *rs, const struct check_options *o, struct runsc_target *t, bool *have)
{
    *have = false;
    if (!o->runsc && !o->metadata) {
        struct runsc_target base;
        if (runsc_target_2022(&base) != 0) {
            fprintf(stderr, PROG ": out of memory\n");
            return RC_FAILED;
        }
        long more = check_runsc(rs, &base, NULL);
        runsc_target_free(&base);
        if (more <= 0)
            return more < 0 ? (fprintf(stderr, PROG ": out of memory\n"), RC_FAILED) : RC_OK;
    }
    char err[512];
    if (runsc_target_resolve(t, o->runsc, o->metadata, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s (--runsc 2022-12 checks against runsc 0.0~20221219)\n", err);
        return o->runsc || o->metadata ? RC_USAGE : RC_FAILED;
    }
    *have = true;
    return RC_OK;
}

/* check --falco: the migration report (falco_report.h) for the runsc
 * named, else the one in PATH, else runsc 2022-12. */
static int falco_main(const struct check_options *o, const char *const *paths, size_t n)
{
    struct rule_set *rs = load(paths, n, true);
    if (!rs)
        return RC_USAGE;
    struct runsc_target target = {0};
    char err[512];
    int rc = RC_OK;
    if (runsc_target_resolve(&target, o->runsc, o->metadata, err, sizeof(err)) != 0) {
        fprintf(stderr, PROG ": %s (--runsc 2022-12 checks against runsc 0.0~20221219)\n", err);
        rc = o->runsc || o->metadata ? RC_USAGE : RC_FAILED;
    } else if (falco_report_print(rs, &target, stdout, NULL) != 0) {
        rc = RC_FAILED;
    }
    runsc_target_free(&target);
    rule_set_free(rs);
    return rc;
}

static int check_main(int argc, char **argv)
{
    struct check_options o = {0};
    int first = parse_check(argc, argv, &o);
    if (first < 0)
        return RC_USAGE;
    if (o.falco && o.pod_init)
        return usage_error("check --falco reports on the rules alone: give --pod-init without --falco", NULL);
    if (o.falco)
        return falco_main(&o, (const char *const *)argv + first, (size_t)(argc - first));
    const char *pod_init = o.pod_init;
    struct rules_needs have = {0};
    struct rule_set *rs = NULL;
    if (!pod_init || read_pod_init(pod_init, &have) == 0)
        rs = load((const char *const *)argv + first, (size_t)(argc - first), true);
    int rc = rs ? RC_OK : RC_USAGE;
    if (rs)
        print_summary(rs);
    struct runsc_target target = {0};
    bool have_target = false;
    if (rs)
        rc = check_target(rs, &o, &target, &have_target);
    long newer = rc == RC_OK && have_target ? check_runsc(rs, &target, stderr) : 0;
    if (newer > 0)
        printf("%ld rule%s need%s more than %s sends: %s, and raise%s no alert for what is not sent\n", newer,
               cli_plural((uint64_t)newer), newer == 1 ? "s" : "", target.label, newer == 1 ? "it loads" : "they load",
               newer == 1 ? "s" : "");
    long w = rc == RC_OK && pod_init ? check_pod_init(rs, pod_init, &have, have_target ? &target : NULL) : 0;
    if (newer < 0)
        w = -1;
    if (w < 0) {
        fprintf(stderr, PROG ": out of memory\n");
        rc = RC_FAILED;
    } else if (w > 0) {
        printf("%s: %ld warning%s: some rules would miss events (seccheckd gvisor-config --rules writes a config "
               "with everything they need)\n", pod_init, w, cli_plural((uint64_t)w));
    } else if (rs && rc == RC_OK && pod_init) {
        printf("%s: enables everything the enabled rules need\n", pod_init);
    }
    rules_needs_free(&have);
    runsc_target_free(&target);
    rule_set_free(rs);
    return rc;
}

/* ---- test ---- */

struct test_run {
    struct rules_engine *engine;
    struct decoder decoder;
    struct arena arena;
    struct alert_list alerts;
    uint64_t events, bad, *per_rule, *suppressed_per_rule, *over_ceiling_per_rule;
    size_t nrules;
    bool write_failed;
    int64_t recv_ns;            /* --db: the stored event's receive time, the daemon's clock then */
};

/* The limits' clock: over a database, the daemon's own receive times, so
 * the run holds back what the daemon would have; over traces, this run's. */
static int64_t replay_clock(void *data)
{
    const struct test_run *t = data;
    return t->recv_ns ? t->recv_ns : monotonic_ns();
}

/* The index of the rule named name, or of the sequence (after the rules). */
static size_t rule_index(const struct rule_set *rs, const char *name)
{
    for (size_t i = 0; i < detector_count(rs); i++) {
        struct rule_info info;
        detector_info(rs, i, &info);
        if (strcmp(info.name, name) == 0)
            return i;
    }
    return 0;
}

static void flush_alerts(struct test_run *t)
{
    const struct rule_set *rs = rules_engine_rules(t->engine);
    for (size_t i = 0; i < t->alerts.count; i++) {
        const struct alert *a = &t->alerts.items[i];
        if (fwrite(a->json, 1, a->json_len, stdout) != a->json_len || putchar('\n') == EOF)
            t->write_failed = true;
        t->per_rule[rule_index(rs, a->rule)]++;
    }
    for (size_t i = 0; i < t->alerts.nsuppressed; i++) {
        size_t r = rule_index(rs, t->alerts.suppressed[i].rule);
        t->suppressed_per_rule[r] += t->alerts.suppressed[i].count;
        t->over_ceiling_per_rule[r] += t->alerts.suppressed[i].over_ceiling;
    }
    if (t->alerts.dropped)
        fprintf(stderr, PROG ": %" PRIu64 " alert%s lost: out of memory\n", t->alerts.dropped,
                cli_plural(t->alerts.dropped));
    alert_list_reset(&t->alerts);
}

/* One packet as the daemon receives it; id: the stored event's (0: none),
 * which sequences' alerts name their steps by. */
static void feed(struct test_run *t, uint64_t conn_id, int64_t recv_ns, const uint8_t *pkt, size_t len, int64_t id)
{
    struct wire_header h;
    if (wire_header_parse(pkt, len, &h) != WIRE_OK) {
        t->bad++;
        return;
    }
    arena_reset(&t->arena);
    uint8_t *copy = arena_memdup(&t->arena, pkt, len);
    if (!copy) {
        t->bad++;
        return;
    }
    struct event ev = {.conn_id = conn_id, .recv_ns = recv_ns};
    decode_event(&t->decoder, &t->arena, &h, copy, len, &ev);
    ev.conn_id = conn_id;
    ev.recv_ns = recv_ns;
    t->recv_ns = recv_ns;
    rules_engine_eval(t->engine, &ev, 0, &t->alerts);
    rules_engine_batch_stored(t->engine, &t->alerts, id);
    t->events++;
    if (t->alerts.count || t->alerts.nsuppressed)
        flush_alerts(t);
}

static int run_traces(struct test_run *t, char **traces, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct tracefile tf;
        enum tracefile_status st = tracefile_open(&tf, traces[i]);
        if (st != TRACEFILE_OK) {
            fprintf(stderr, PROG ": %s: %s\n", traces[i], tracefile_strerror(st));
            return RC_FAILED;
        }
        const uint8_t *pkt;
        size_t len;
        while ((st = tracefile_next(&tf, &pkt, &len)) == TRACEFILE_OK)
            feed(t, i + 1, 0, pkt, len, 0);
        tracefile_close(&tf);
        rules_engine_conn_closed(t->engine, i + 1);
        if (st != TRACEFILE_END) {
            fprintf(stderr, PROG ": %s: %s\n", traces[i], tracefile_strerror(st));
            return RC_FAILED;
        }
    }
    return RC_OK;
}

static int run_db(struct test_run *t, const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, PROG ": cannot open %s: %s\n", path, db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return RC_FAILED;
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *st = NULL;
    int rc = RC_OK;
    if (sqlite3_prepare_v2(db, "SELECT conn_id, recv_ns, raw, id FROM events ORDER BY id", -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, PROG ": %s is not a seccheckd database: %s\n", path, sqlite3_errmsg(db));
        rc = RC_FAILED;
    } else {
        int step;
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            const uint8_t *raw = sqlite3_column_blob(st, 2);
            size_t len = (size_t)sqlite3_column_bytes(st, 2);
            feed(t, (uint64_t)sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), raw ? raw : (const uint8_t *)"",
                 len, sqlite3_column_int64(st, 3));
        }
        if (step != SQLITE_DONE) {
            fprintf(stderr, PROG ": reading %s: %s\n", path, sqlite3_errmsg(db));
            rc = RC_FAILED;
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

struct test_options {
    char **paths, **traces;
    size_t npaths, ntraces;
    const char *db;
    struct rules_engine_config cfg;
    char hostname[256];
};

/* Options with a value: "--x V" or "--x=V". */
static const char *value_of(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] != '\0')
        return NULL;
    if (*i + 1 >= argc)
        return "";
    return argv[++*i];
}

static int parse_test(int argc, char **argv, struct test_options *o)
{
    rules_engine_config_defaults(&o->cfg);
    if (gethostname(o->hostname, sizeof(o->hostname)) != 0)
        snprintf(o->hostname, sizeof(o->hostname), "localhost");
    o->hostname[sizeof(o->hostname) - 1] = '\0';
    o->cfg.hostname = o->hostname;
    o->paths = calloc((size_t)argc, sizeof(*o->paths));
    o->traces = calloc((size_t)argc, sizeof(*o->traces));
    if (!o->paths || !o->traces)
        return RC_FAILED;
    bool in_traces = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        uint64_t u;
        if (a[0] != '-' || !a[1]) {
            if (in_traces)
                o->traces[o->ntraces++] = argv[i];
            else
                o->paths[o->npaths++] = argv[i];
            continue;
        }
        in_traces = false;
        if (strcmp(a, "--trace") == 0) {
            in_traces = true;
        } else if (strncmp(a, "--trace=", 8) == 0) {
            o->traces[o->ntraces++] = argv[i] + 8;
        } else if ((v = value_of(argc, argv, &i, "--db"))) {
            if (!v[0])
                return usage_error("--db needs a DB", NULL);
            o->db = v;
        } else if ((v = value_of(argc, argv, &i, "--alerts-rate"))) {
            if (cli_parse_double(PROG, "alerts-rate", v, 0, 1e9, &o->cfg.rate) != 0)
                return RC_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--alerts-burst"))) {
            if (cli_parse_double(PROG, "alerts-burst", v, 1, 1e9, &o->cfg.burst) != 0)
                return RC_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--alerts-ceiling-burst"))) {
            if (cli_parse_double(PROG, "alerts-ceiling-burst", v, 1, 1e9, &o->cfg.ceiling_burst) != 0)
                return RC_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--alerts-ceiling"))) {
            if (cli_parse_double(PROG, "alerts-ceiling", v, 0, 1e9, &o->cfg.ceiling) != 0)
                return RC_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--rule-matching"))) {
            if (rules_matching_parse(v, &o->cfg.matching) != 0)
                return usage_error("--rule-matching: expected first or all, got", v);
        } else if ((v = value_of(argc, argv, &i, "--sequence-memory"))) {
            if (cli_parse_bytes(v, (uint64_t)1 << 48, &u) != 0 || u < (64u << 10))
                return usage_error("--sequence-memory: expected a size like 32M, at least 64K, got", v);
            o->cfg.sequence_max_bytes = (size_t)u;
        } else if ((v = value_of(argc, argv, &i, "--sequence-partials"))) {
            if (cli_parse_uint(PROG, "sequence-partials", v, 1, 10000000, &u) != 0)
                return RC_USAGE;
            o->cfg.sequence_max_per_group = (size_t)u;
        } else if ((v = value_of(argc, argv, &i, "--max-processes"))) {
            if (cli_parse_uint(PROG, "max-processes", v, 1, 1u << 30, &u) != 0)
                return RC_USAGE;
            o->cfg.max_processes = (size_t)u;
        } else if ((v = value_of(argc, argv, &i, "--hostname"))) {
            snprintf(o->hostname, sizeof(o->hostname), "%s", v);
        } else if ((v = value_of(argc, argv, &i, "--rules-absent-fields"))) {
            if (set_absent_mode(v) != RC_OK)
                return RC_USAGE;
        } else if ((v = value_of(argc, argv, &i, "--append-output"))) {
            if (set_append_output(v) != RC_OK)
                return RC_USAGE;
        } else {
            return usage_error("test: unknown option", a);
        }
    }
    if (!o->npaths)
        return usage_error("test needs at least one rules PATH", NULL);
    if (!o->ntraces == !o->db)
        return usage_error("test needs either --trace FILE... or --db DB", NULL);
    return RC_OK;
}

static int test_main(int argc, char **argv)
{
    struct test_options o = {0};
    int rc = parse_test(argc, argv, &o);
    struct rule_set *rs = rc == RC_OK ? load((const char *const *)o.paths, o.npaths, false) : NULL;
    if (rc == RC_OK && !rs)
        rc = RC_USAGE;
    struct test_run t = {0};
    if (rc == RC_OK) {
        t.nrules = detector_count(rs);
        t.per_rule = calloc(t.nrules + 1, sizeof(*t.per_rule));
        t.suppressed_per_rule = calloc(t.nrules + 1, sizeof(*t.suppressed_per_rule));
        t.over_ceiling_per_rule = calloc(t.nrules + 1, sizeof(*t.over_ceiling_per_rule));
        o.cfg.clock_ns = replay_clock;
        o.cfg.clock_data = &t;
        t.engine = rules_engine_new(&o.cfg);
        if (!t.per_rule || !t.suppressed_per_rule || !t.over_ceiling_per_rule || !t.engine) {
            fprintf(stderr, PROG ": out of memory\n");
            rule_set_free(rs);
            rc = RC_FAILED;
        } else {
            rules_engine_set_rules(t.engine, rs);
            decoder_init(&t.decoder);
            arena_init(&t.arena, 64 * 1024, SIZE_MAX);
            setvbuf(stdout, NULL, _IOFBF, 1 << 16);
            rc = o.db ? run_db(&t, o.db) : run_traces(&t, o.traces, o.ntraces);
            if (fflush(stdout) != 0 || t.write_failed) {
                fprintf(stderr, PROG ": writing standard output: %s\n", strerror(errno));
                rc = RC_FAILED;
            }
            uint64_t total = 0;
            for (size_t i = 0; i < t.nrules; i++) {
                struct rule_info info;
                detector_info(rules_engine_rules(t.engine), i, &info);
                total += t.per_rule[i];
                fprintf(stderr, "%s: %" PRIu64 " alert%s", info.name, t.per_rule[i], cli_plural(t.per_rule[i]));
                if (i >= rule_set_rule_count(rules_engine_rules(t.engine)))
                    fprintf(stderr, " [sequence]");
                if (t.suppressed_per_rule[i])
                    fprintf(stderr, " (%" PRIu64 " suppressed)", t.suppressed_per_rule[i]);
                if (t.over_ceiling_per_rule[i])
                    fprintf(stderr, " (%" PRIu64 " over the ceiling)", t.over_ceiling_per_rule[i]);
                fprintf(stderr, "%s\n", info.enabled ? "" : " [disabled]");
            }
            if (rule_set_sequence_count(rules_engine_rules(t.engine))) {
                struct rules_engine_stats st;
                rules_engine_get_stats(t.engine, &st);
                fprintf(stderr, PROG ": sequences: %" PRIu64 " chains begun, %" PRIu64 " evicted by the bounds, %" PRIu64
                        " expired, %" PRIu64 " cancelled, %" PRIu64 " dropped (a trace's end), %" PRIu64 " waiting\n",
                        st.sequence_started, st.sequence_evicted, st.sequence_expired, st.sequence_cancelled,
                        st.sequence_dropped, st.sequence_partials);
            }
            fprintf(stderr, PROG ": %" PRIu64 " event%s, %" PRIu64 " alert%s", t.events, cli_plural(t.events), total,
                    cli_plural(total));
            if (t.bad)
                fprintf(stderr, ", %" PRIu64 " packet%s without a valid header skipped", t.bad, cli_plural(t.bad));
            fprintf(stderr, "\n");
            arena_free(&t.arena);
        }
    }
    alert_list_free(&t.alerts);
    rules_engine_free(t.engine);
    free(t.per_rule);
    free(t.suppressed_per_rule);
    free(t.over_ceiling_per_rule);
    free(o.paths);
    free(o.traces);
    return rc;
}

int rules_main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("expected a command: check or test", NULL);
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return RC_OK;
    }
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return RC_OK;
        }
    if (set_append_output(RULES_APPEND_OUTPUT_DEFAULT) != RC_OK)   /* falco.yaml's, as the daemon's */
        return RC_FAILED;
    if (strcmp(argv[1], "check") == 0)
        return check_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "test") == 0)
        return test_main(argc - 1, argv + 1);
    return usage_error("unknown command (expected check or test):", argv[1]);
}
