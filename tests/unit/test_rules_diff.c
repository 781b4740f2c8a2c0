/* test_rules_diff.c - what a reload changed (rules/rules_diff.h): a rule's
 * fingerprint follows what it does (condition with its macros, lists and
 * exceptions, output, priority, desc, tags), not where it is written; a
 * sequence's too (its steps, by, within, output), said in the same words. */
#include "unit_util.h"

#include "rules.h"
#include "rules_diff.h"

static struct rules_digest *digest(const char *yaml)
{
    struct rules_diag diag = {0};
    struct rule_set *rs = rule_set_load_buffer("t.yaml", yaml, strlen(yaml), &diag);
    if (!rs) {
        rules_diag_print(&diag, stderr);
        fail_msg("the rules did not load");
    }
    rules_diag_free(&diag);
    struct rules_digest *d = rules_digest_of(rs);
    assert_non_null(d);
    rule_set_free(rs);   /* the digest owns what it keeps */
    return d;
}

/* before -> after: the line, and the number of changes. */
static void expect(const char *before, const char *after, size_t changes, const char *line)
{
    struct rules_digest *a = digest(before), *b = digest(after);
    char out[1024];
    assert_int_equal(rules_digest_describe(a, b, out, sizeof(out)), changes);
    assert_string_equal(out, line);
    rules_digest_free(a);
    rules_digest_free(b);
}

#define LIST(items) "- list: shells\n  items: [" items "]\n"
#define MACRO(cond) "- macro: spawned\n  condition: " cond "\n"
#define RULE(name, cond, extra)                                                                              \
    "- rule: " name "\n  desc: d\n  condition: " cond "\n  output: \"%proc.name ran\"\n  priority: WARNING\n" extra

#define BASE LIST("sh, bash") MACRO("evt.type = execve and evt.dir = <") \
    RULE("Shell", "spawned and proc.name in (shells)", "") RULE("Other", "evt.type = openat", "")

static void test_same_rules(void **state)
{
    (void)state;
    expect(BASE, BASE, 0, "no rule changed; 2 of 2 rules enabled");
    /* Written in another order, spaced otherwise: the same rules. */
    expect(BASE, LIST("sh, bash") MACRO("evt.type=execve and evt.dir=<")
               RULE("Other", "evt.type = openat", "") RULE("Shell", "spawned  and proc.name in (shells)", ""),
           0, "no rule changed; 2 of 2 rules enabled");
}

/* A list or macro edit changes the rules that use them, not the others. */
static void test_lists_and_macros_reach_their_rules(void **state)
{
    (void)state;
    expect(BASE, LIST("sh, bash, zsh") MACRO("evt.type = execve and evt.dir = <")
               RULE("Shell", "spawned and proc.name in (shells)", "") RULE("Other", "evt.type = openat", ""),
           1, "1 rule changed (Shell); 2 of 2 rules enabled");
    expect(BASE, LIST("sh, bash") MACRO("evt.type = execve")
               RULE("Shell", "spawned and proc.name in (shells)", "") RULE("Other", "evt.type = openat", ""),
           1, "1 rule changed (Shell); 2 of 2 rules enabled");
    /* An override from a second file's text, as a user's tuning does. */
    expect(BASE, BASE "- list: shells\n  items: [ash]\n  override: {items: append}\n", 1,
           "1 rule changed (Shell); 2 of 2 rules enabled");
}

static void test_what_a_rule_says_counts(void **state)
{
    (void)state;
    const char *output = LIST("sh, bash") MACRO("evt.type = execve and evt.dir = <")
        "- rule: Shell\n  desc: d\n  condition: spawned and proc.name in (shells)\n  output: \"%proc.pname ran\"\n"
        "  priority: WARNING\n" RULE("Other", "evt.type = openat", "");
    expect(BASE, output, 1, "1 rule changed (Shell); 2 of 2 rules enabled");
    expect(BASE, LIST("sh, bash") MACRO("evt.type = execve and evt.dir = <")
               RULE("Shell", "spawned and proc.name in (shells)", "  tags: [a]\n") RULE("Other", "evt.type = openat", ""),
           1, "1 rule changed (Shell); 2 of 2 rules enabled");
    expect(BASE, LIST("sh, bash") MACRO("evt.type = execve and evt.dir = <")
               RULE("Shell", "spawned and proc.name in (shells)", "")
               RULE("Other", "evt.type = openat", "  exceptions:\n  - name: e\n    fields: [proc.name]\n"
                                                   "    values: [[cat]]\n"),
           1, "1 rule changed (Other); 2 of 2 rules enabled");
}

static void test_added_removed_enabled(void **state)
{
    (void)state;
    expect(BASE, LIST("sh, bash") MACRO("evt.type = execve and evt.dir = <")
               RULE("Shell", "spawned and proc.name in (shells)", "  enabled: false\n")
               RULE("New one", "evt.type = connect", ""),
           3, "1 rule added (New one), 1 removed (Other), 1 disabled (Shell); 1 of 2 rules enabled (was 2 of 2)");
    expect(RULE("A", "evt.type = openat", ""),
           RULE("A", "evt.type = openat", "") RULE("B", "evt.type = read", "") RULE("C", "evt.type = write", "")
               RULE("D", "evt.type = close", "") RULE("E", "evt.type = dup", ""),
           4, "4 rules added (B, C, D and 1 more); 5 of 5 rules enabled (was 1 of 1)");
}

#define SEQ(name, write_cond, extra)                                                                         \
    "- sequence: " name "\n  desc: d\n  within: 1h\n  steps:\n    - name: w\n      condition: " write_cond "\n"   \
    "    - name: x\n      condition: spawned and proc.exepath = %w.fd.name\n  output: \"%w.fd.name ran\"\n"        \
    "  priority: CRITICAL\n" extra
#define OPEN_WRITE "evt.type = openat and evt.is_open_write = true"

/* Sequences are reported as rules are, after them, in the same words; a
 * set without any is described as before sequences existed. */
static void test_sequences(void **state)
{
    (void)state;
    const char *with = BASE SEQ("Written then run", OPEN_WRITE, "");
    expect(with, with, 0, "no rule or sequence changed; 2 of 2 rules enabled, 1 of 1 sequences enabled");
    expect(BASE, with, 1, "1 sequence added (Written then run); 2 of 2 rules enabled, 1 of 1 sequences enabled "
                          "(was 0 of 0)");
    expect(with, BASE, 1, "1 sequence removed (Written then run); 2 of 2 rules enabled, 0 of 0 sequences enabled "
                          "(was 1 of 1)");
    /* what a step matches, by, within, output, a disable */
    expect(with, BASE SEQ("Written then run", "evt.type = open and evt.is_open_write = true", ""), 1,
           "1 sequence changed (Written then run); 2 of 2 rules enabled, 1 of 1 sequences enabled");
    expect(with, BASE SEQ("Written then run", OPEN_WRITE, "  by: [container.id]\n"), 1,
           "1 sequence changed (Written then run); 2 of 2 rules enabled, 1 of 1 sequences enabled");
    const char *within = BASE "- sequence: Written then run\n  desc: d\n  within: 2h\n  steps:\n    - name: w\n"
                         "      condition: " OPEN_WRITE "\n    - name: x\n      condition: spawned and proc.exepath = "
                         "%w.fd.name\n  output: \"%w.fd.name ran\"\n  priority: CRITICAL\n";
    expect(with, within, 1, "1 sequence changed (Written then run); 2 of 2 rules enabled, 1 of 1 sequences enabled");
    const char *joined = BASE "- sequence: Written then run\n  desc: d\n  within: 1h\n  steps:\n    - name: w\n"
                         "      condition: " OPEN_WRITE "\n    - name: x\n      condition: spawned and proc.exepath != "
                         "%w.fd.name\n  output: \"%w.fd.name ran\"\n  priority: CRITICAL\n";
    expect(with, joined, 1, "1 sequence changed (Written then run); 2 of 2 rules enabled, 1 of 1 sequences enabled");
    expect(with, BASE SEQ("Written then run", OPEN_WRITE, "  enabled: false\n"), 1,
           "1 sequence disabled (Written then run); 2 of 2 rules enabled, 0 of 1 sequences enabled (was 1 of 1)");
    /* a macro edit reaches the sequence that uses it, and the rule */
    expect(with, LIST("sh, bash") MACRO("evt.type = execve") RULE("Shell", "spawned and proc.name in (shells)", "")
                     RULE("Other", "evt.type = openat", "") SEQ("Written then run", OPEN_WRITE, ""),
           2, "1 rule changed (Shell); 1 sequence changed (Written then run); 2 of 2 rules enabled, 1 of 1 "
              "sequences enabled");
    /* rules and sequences at once, each kind in its words */
    expect(with, RULE("Shell", "evt.type = execve", "") MACRO("evt.type = execve and evt.dir = <")
                     SEQ("Second", OPEN_WRITE, "") SEQ("Third", OPEN_WRITE, ""),
           5, "1 rule removed (Other), 1 changed (Shell); 2 sequences added (Second, Third), 1 removed (Written then "
              "run); 1 of 1 rules enabled (was 2 of 2), 2 of 2 sequences enabled (was 1 of 1)");
}

/* A cut line stays terminated. */
static void test_short_buffer(void **state)
{
    (void)state;
    struct rules_digest *a = digest(BASE), *b = digest(RULE("X", "evt.type = read", ""));
    char out[16];
    assert_int_equal(rules_digest_describe(a, b, out, sizeof(out)), 3);
    assert_int_equal(strlen(out), sizeof(out) - 1);
    rules_digest_free(a);
    rules_digest_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_rules),
        cmocka_unit_test(test_lists_and_macros_reach_their_rules),
        cmocka_unit_test(test_what_a_rule_says_counts),
        cmocka_unit_test(test_added_removed_enabled),
        cmocka_unit_test(test_sequences),
        cmocka_unit_test(test_short_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
