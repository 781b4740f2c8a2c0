/* falco_report.c - the migration report of `seccheckd rules check --falco`
 * (falco_report.h). */
#include "falco_report.h"

#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "filter.h"
#include "rules.h"
#include "ruleset.h"
#include "runsc_target.h"

/* Wide enough for the longest class word, so a rule's name starts in one
 * column (tests read it there). */
#define CLASS_WIDTH 12
#define DETAIL_MAX 1024
#define NAMES_MAX 64

static const char *const class_names[FALCO_CLASS_COUNT] = {
    [FALCO_RUNS] = "runs",
    [FALCO_NEWER_RUNSC] = "newer runsc",
    [FALCO_ABSENT] = "disabled",
    [FALCO_ABSENT_RUN] = "runs anyway",
    [FALCO_NEVER_TRUE] = "never true",
    [FALCO_OFF] = "off",
};

const char *falco_class_name(enum falco_class c) { return c < FALCO_CLASS_COUNT ? class_names[c] : "?"; }

/* Text that grows up to DETAIL_MAX - 1 bytes, then ends in "...". */
struct detail {
    char text[DETAIL_MAX];
    size_t len;
};

static void detail_add(struct detail *d, const char *sep, const char *s)
{
    if (d->len + 1 >= sizeof(d->text))
        return;
    int n = snprintf(d->text + d->len, sizeof(d->text) - d->len, "%s%s", d->len ? sep : "", s);
    if (n < 0 || (size_t)n >= sizeof(d->text) - d->len) {
        memcpy(d->text + sizeof(d->text) - 4, "...", 4);
        d->len = sizeof(d->text) - 1;
        return;
    }
    d->len += (size_t)n;
}

struct lack_ctx {
    const struct runsc_target *target;
    struct detail *detail;
};

static void note_lack(void *ctx, const char *what, unsigned release)
{
    struct lack_ctx *l = ctx;
    char line[256];
    if (runsc_target_is_newer(l->target, release))
        snprintf(line, sizeof(line), "needs runsc %s or later: %s", rules_runsc_release_name(release), what);
    else
        snprintf(line, sizeof(line), "needs what the target runsc does not have: %s", what);
    detail_add(l->detail, "; ", line);
}

/* Whether some point in need is one the rule matches events at (not only
 * one that keeps the process table). */
static bool matches_a_point(const struct rules_needs *need)
{
    for (size_t k = 0; k < need->count; k++)
        if (need->items[k].why & RULES_WHY_MATCHES)
            return true;
    return false;
}

/* Rule i's class, and what explains it in d. 0, or -1 out of memory. */
static int classify(const struct rule_set *rs, size_t i, const struct runsc_target *target, struct detail *d,
                    enum falco_class *out)
{
    const struct rule *r = &rs->rules[i];
    if (r->absent_fields) {
        char line[DETAIL_MAX];
        snprintf(line, sizeof(line), "its condition needs what gVisor never reports: %s", r->absent_fields);
        detail_add(d, "; ", line);
    }
    if (r->absent_disabled) {
        *out = FALCO_ABSENT;
        return 0;
    }
    if (!r->enabled) {
        d->len = 0, d->text[0] = '\0';
        detail_add(d, "; ", "enabled: false in the rules files");
        *out = FALCO_OFF;
        return 0;
    }
    if (r->absent_fields) {
        *out = FALCO_ABSENT_RUN;
        return 0;
    }
    if (r->all_types) {   /* every event reaches it */
        *out = FALCO_RUNS;
        return 0;
    }
    struct rules_needs need = {0};
    if (rule_set_rule_needs_on(rs, i, target, RULES_NEED_CONDITION, &need) != 0) {
        rules_needs_free(&need);
        return -1;
    }
    struct lack_ctx l = {.target = target, .detail = d};
    /* Every event type the loader knows is a gVisor point (a syscall's raw
     * one at least): a rule no point can reach is one whose condition no
     * event satisfies. */
    if (!matches_a_point(&need)) {
        detail_add(d, "; ", "no event of its types can satisfy its condition as loaded (as in Falco: a list left "
                            "empty for you to fill does that)");
        *out = FALCO_NEVER_TRUE;
    } else if (runsc_target_lacks(target, &need, note_lack, &l) > 0) {
        *out = FALCO_NEWER_RUNSC;
    } else {
        *out = FALCO_RUNS;
    }
    rules_needs_free(&need);
    return 0;
}

/* Distinct field names, in the order met. */
struct names {
    const char *items[NAMES_MAX];
    size_t count;
    bool more;
};

static void names_add(struct names *n, const char *name)
{
    for (size_t i = 0; i < n->count; i++)
        if (strcmp(n->items[i], name) == 0)
            return;
    if (n->count < NAMES_MAX)
        n->items[n->count++] = name;
    else
        n->more = true;
}

static void names_print(const struct names *n, FILE *out)
{
    for (size_t i = 0; i < n->count; i++)
        fprintf(out, "%s%s", i ? ", " : "", n->items[i]);
    fprintf(out, "%s", n->more ? " and more" : "");
}

/* The fields of enabled rules' outputs gVisor never reports, and those only
 * runsc releases after 2022-12 send. */
static void output_fields(const struct rule_set *rs, struct names *never, struct names *newer)
{
    for (size_t i = 0; i < rs->nrules; i++) {
        const struct rule *r = &rs->rules[i];
        if (!r->enabled)
            continue;
        for (size_t k = 0; k < r->output.nparts; k++) {
            if (!r->output.parts[k].has_field)
                continue;
            const struct fieldref *f = &r->output.parts[k].field;
            enum field_avail a = fields_avail(f);
            if (a == FIELD_NEVER)
                names_add(never, fields_name(f));
            else if (a == FIELD_NEWER_RUNSC)
                names_add(newer, fields_name(f));
        }
    }
}

static void print_rule(const struct rule_set *rs, size_t i, enum falco_class c, const struct detail *d,
                       const char **file, FILE *out)
{
    const struct rule *r = &rs->rules[i];
    if (!*file || strcmp(*file, r->file) != 0) {
        fprintf(out, "%s\n", r->file);
        *file = r->file;
    }
    fprintf(out, "  %-*s %s\n", CLASS_WIDTH, falco_class_name(c), r->name);
    if (d->len)
        fprintf(out, "  %-*s   %s\n", CLASS_WIDTH, "", d->text);
}

static void print_behaviour(const struct rule_set *rs, const struct runsc_target *target,
                            const size_t counts[FALCO_CLASS_COUNT], FILE *out)
{
    fprintf(out, "\nWhat changes in behaviour against Falco:\n");
    fprintf(out, "  - Which rules alert: as Falco's default rule_matching: first, each event raises the first "
                 "enabled rule in load order whose condition holds (--rule-matching all: every one that holds).\n");
    fprintf(out, "  - Every match is an alert, as in Falco (per-rule throttling, --alerts-rate, is off by default); "
                 "beyond Falco, one sandbox connection raises at most %.0f alerts at once, then %.0f a second "
                 "(--alerts-ceiling-burst, --alerts-ceiling; 0: none): what that holds back is counted "
                 "(seccheckd_alerts_over_ceiling_total) and said in the connection's next alert "
                 "(seccheckd_suppressed, outside output_fields).\n",
            RULES_DEFAULT_CEILING_BURST, RULES_DEFAULT_CEILING);
    if (counts[FALCO_ABSENT])
        fprintf(out, "  - %zu rule%s load%s disabled where Falco runs %s: %s condition needs fields gVisor never "
                     "reports (--rules-absent-fields run runs %s; those fields are absent on every event).\n",
                counts[FALCO_ABSENT], cli_plural(counts[FALCO_ABSENT]), counts[FALCO_ABSENT] == 1 ? "s" : "",
                counts[FALCO_ABSENT] == 1 ? "it" : "them", counts[FALCO_ABSENT] == 1 ? "its" : "their",
                counts[FALCO_ABSENT] == 1 ? "it" : "them");
    if (counts[FALCO_ABSENT_RUN])
        fprintf(out, "  - %zu rule%s run (--rules-absent-fields run) though their conditions need fields gVisor "
                     "never reports: those fields are absent on every event.\n",
                counts[FALCO_ABSENT_RUN], cli_plural(counts[FALCO_ABSENT_RUN]));
    if (counts[FALCO_NEWER_RUNSC])
        fprintf(out, "  - %zu rule%s need%s more than %s sends: %s, and raise%s no alert for what it does not "
                     "send.\n",
                counts[FALCO_NEWER_RUNSC], cli_plural(counts[FALCO_NEWER_RUNSC]),
                counts[FALCO_NEWER_RUNSC] == 1 ? "s" : "", target->label,
                counts[FALCO_NEWER_RUNSC] == 1 ? "it loads" : "they load", counts[FALCO_NEWER_RUNSC] == 1 ? "s" : "");
    if (counts[FALCO_NEVER_TRUE])
        fprintf(out, "  - %zu rule%s never fire%s until tuned, as in Falco: no event can satisfy %s condition as "
                     "loaded.\n",
                counts[FALCO_NEVER_TRUE], cli_plural(counts[FALCO_NEVER_TRUE]),
                counts[FALCO_NEVER_TRUE] == 1 ? "s" : "", counts[FALCO_NEVER_TRUE] == 1 ? "its" : "their");
    struct names never = {0}, newer = {0};
    output_fields(rs, &never, &newer);
    if (never.count) {
        fprintf(out, "  - In outputs, fields gVisor never reports render <NA> (null in output_fields), as Falco "
                     "renders missing data: ");
        names_print(&never, out);
        fprintf(out, ".\n");
    }
    if (newer.count) {
        fprintf(out, "  - In outputs, fields runsc 2022-12 does not send (newer releases do) render <NA> with it: ");
        names_print(&newer, out);
        fprintf(out, ".\n");
    }
    fprintf(out, "  - Events are gVisor's trace points, seen inside the sandbox: proc.pid and proc.vpid are both "
                 "the sandbox's own pid (Falco's proc.pid is the host's); container.type is gvisor; user.loginuid "
                 "is -1 (gVisor reports no login uid).\n");
    fprintf(out, "  - The text line's time is UTC (Falco's: the local time zone).\n");
}

int falco_report_print(const struct rule_set *rs, const struct runsc_target *target, FILE *out,
                       size_t counts[FALCO_CLASS_COUNT])
{
    size_t n[FALCO_CLASS_COUNT] = {0};
    const char *file = NULL;
    fprintf(out, "Falco rules on gVisor (Falco engine %s semantics; runsc: %s)\n", RULES_FALCO_ENGINE_VERSION,
            target->label);
    for (size_t i = 0; i < rs->nrules; i++) {
        struct detail d = {.len = 0};
        enum falco_class c;
        if (classify(rs, i, target, &d, &c) != 0) {
            fprintf(stderr, "seccheckd rules: out of memory\n");
            return -1;
        }
        n[c]++;
        print_rule(rs, i, c, &d, &file, out);
    }
    print_behaviour(rs, target, n, out);
    struct rule_set_stats st;
    rule_set_get_stats(rs, &st);
    fprintf(out, "\n%zu rule%s: %zu run, %zu need a newer runsc, %zu disabled for fields gVisor never reports",
            rs->nrules, cli_plural(rs->nrules), n[FALCO_RUNS], n[FALCO_NEWER_RUNSC], n[FALCO_ABSENT]);
    if (n[FALCO_ABSENT_RUN])
        fprintf(out, ", %zu run anyway though they need them", n[FALCO_ABSENT_RUN]);
    fprintf(out, ", %zu never true as loaded, %zu off in the rules files", n[FALCO_NEVER_TRUE], n[FALCO_OFF]);
    if (st.rules_skipped)
        fprintf(out, "; %zu skipped (an unknown source, or skip-if-unknown-filter)", st.rules_skipped);
    fprintf(out, "\n");
    if (counts)
        memcpy(counts, n, sizeof(n));
    return 0;
}
