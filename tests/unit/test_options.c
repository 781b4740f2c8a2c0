/* test_options.c - the config file's syntax (server/options.h): where a
 * comment starts, quoted values, value errors named by file and line, and
 * --config-if-exists; the alerts' settings. */
#include "unit_util.h"

#include <sys/stat.h>

#include "options.h"
#include "rules.h"

/* Loads text as a config file into fresh options; returns options_load_file's
 * result, the error (with the file's path replaced by "FILE") in err. */
static int load_text(struct options *o, const char *text, char *err, size_t errlen)
{
    char path[64], raw[512] = "";
    scratch_file(path, text, strlen(text));
    options_init(o);
    int rc = options_load_file(o, path, raw, sizeof(raw));
    reaper_remove(path);
    const char *at = strstr(raw, path);
    if (at)
        snprintf(err, errlen, "%.*sFILE%s", (int)(at - raw), raw, at + strlen(path));
    else
        snprintf(err, errlen, "%s", raw);
    return rc;
}

static void assert_value(const char *text, const char *expected_db)
{
    struct options o;
    char err[512];
    if (load_text(&o, text, err, sizeof(err)) != 0)
        fail_msg("%s: %s", text, err);
    if (strcmp(o.db_path, expected_db) != 0)
        fail_msg("%s: db is '%s', expected '%s'", text, o.db_path, expected_db);
    options_free(&o);
}

/* text is refused with an error that starts with expected. */
static void assert_error(const char *text, const char *expected)
{
    struct options o;
    char err[512];
    assert_int_equal(load_text(&o, text, err, sizeof(err)), -1);
    if (strncmp(err, expected, strlen(expected)) != 0)
        fail_msg("%s: got '%s', expected it to start with '%s'", text, err, expected);
    options_free(&o);
}

/* A '#' starts a comment only at the start of a line or after whitespace. */
static void test_comments(void **state)
{
    (void)state;
    assert_value("db = /x/a#b.db\n", "/x/a#b.db");
    assert_value("db = /x/y.db   # where events go\n", "/x/y.db");
    assert_value("db = /x/y.db\t# a tab before it\n", "/x/y.db");
    assert_value("# db = /x/commented.db\n   # indented comment = too\ndb=/x/z.db#1\n", "/x/z.db#1");
    assert_value("db =#x\n", "#x");   /* after '=', not after whitespace */

    struct options o;
    char err[512];
    assert_int_equal(load_text(&o, "keep-containers = runsc-1#blue, runsc-2 # two\n", err, sizeof(err)), 0);
    assert_string_equal(o.keep_containers, "runsc-1#blue, runsc-2");
    options_free(&o);
    assert_error("db # = /x/y.db\n", "FILE:1: expected 'name = value'");   /* that '=' is in the comment */
}

/* "..." keeps everything between the quotes; \" and \\ are a quote and a
 * backslash; a comment may follow. */
static void test_quoted_values(void **state)
{
    (void)state;
    assert_value("db = \"/x/a b #c.db\"\n", "/x/a b #c.db");
    assert_value("db = \"/x/\\\"q\\\" \\\\.db\"   # quoted\n", "/x/\"q\" \\.db");
    assert_value("db=\"  spaced  \"\n", "  spaced  ");
    assert_value("db = \"\"\n", "");
    assert_value("db = x\"y\"\n", "x\"y\"");   /* quotes inside a value are plain characters */

    assert_error("db = \"/x/y.db\n", "FILE:1: db: a quoted value needs its closing '\"'");
    assert_error("db = \"/x/\\n.db\"\n", "FILE:1: db: in a quoted value a backslash comes before '\"' or '\\' only");
    assert_error("\ndb = \"/x/y.db\" z\n",
                 "FILE:2: db: unexpected text after the closing '\"' (a comment starts with '#')");
    assert_error("db = \"/x/y.db\\\"\n", "FILE:1: db: a quoted value needs its closing '\"'");
}

/* Values that only another module can judge are still reported at their
 * line, as the table's own checks are. */
static void test_value_errors_name_the_line(void **state)
{
    (void)state;
    assert_error("log-level = info\ndrop-types = SYSCALL_NOPE\n",
                 "FILE:2: --drop-types: unknown message type 'SYSCALL_NOPE' (use names like SYSCALL_OPEN or numbers)");
    assert_error("keep-types = SYSCALL_OPEN\n# both\ndrop-types = SYSCALL_READ\n",
                 "FILE:3: --drop-types: --keep-types is set too; give a keep list or a drop list, not both");
    assert_error("drop-containers = a\nkeep-containers = b\n",
                 "FILE:2: --keep-containers: --drop-containers is set too; give a keep list or a drop list, not both");
    assert_error("metrics-listen = 10.0.0.1:9464\n",
                 "FILE:1: --metrics-listen 10.0.0.1:9464: 10.0.0.1 is not a loopback");
    assert_error("metrics-listen = nonsense\n", "FILE:1: --metrics-listen nonsense: expected HOST:PORT");
    assert_error("batch-size = 0\n", "FILE:1: --batch-size: expected a whole number from 1 to 1000000, got '0'");
    struct options o;
    char err[512];
    assert_int_equal(load_text(&o, "metrics-listen = off\nkeep-types = SYSCALL_OPEN\nkeep-types = 9\n", err,
                               sizeof(err)), 0);   /* a later line of the same kind replaces the list */
    assert_string_equal(o.keep_types, "9");
    options_free(&o);
}

/* The alerts' settings: rule_matching as Falco spells its values, the
 * ceiling on by default and per-rule throttling off (issue 25 item 5). */
static void test_alert_settings(void **state)
{
    (void)state;
    struct options o;
    char err[512];
    options_init(&o);
    assert_int_equal(o.rule_matching, RULES_MATCH_FIRST);
    assert_true(o.alerts_rate == 0);
    assert_true(o.alerts_ceiling == RULES_DEFAULT_CEILING && o.alerts_ceiling > 0);
    assert_int_equal(o.alerts_ceiling_burst, (uint64_t)RULES_DEFAULT_CEILING_BURST);
    options_free(&o);
    assert_int_equal(load_text(&o, "rule-matching = all\nalerts-ceiling = 2.5\nalerts-ceiling-burst = 40\n", err,
                               sizeof(err)), 0);
    assert_int_equal(o.rule_matching, RULES_MATCH_ALL);
    assert_true(o.alerts_ceiling == 2.5);
    assert_int_equal(o.alerts_ceiling_burst, 40);
    options_free(&o);
    assert_error("rule-matching = most\n", "FILE:1: --rule-matching: expected first (only the first rule in load "
                 "order that matches alerts, as Falco) or all, got 'most'");
    assert_error("alerts-ceiling = -1\n", "FILE:1: --alerts-ceiling: expected alerts per second like 10 or 0.5");
    assert_error("alerts-ceiling-burst = 0\n", "FILE:1: --alerts-ceiling-burst: expected a whole number from 1");
}

/* rules-absent-fields: in the config file as on the command line */
static void test_rules_absent_fields(void **state)
{
    (void)state;
    struct options o;
    char err[512];
    assert_int_equal(load_text(&o, "db = /x/y.db\n", err, sizeof(err)), 0);
    assert_false(o.rules_absent_run);   /* the default: disable */
    options_free(&o);
    assert_int_equal(load_text(&o, "rules-absent-fields = run\n", err, sizeof(err)), 0);
    assert_true(o.rules_absent_run);
    options_free(&o);
    assert_int_equal(load_text(&o, "rules-absent-fields = run\nrules-absent-fields = disable\n", err, sizeof(err)),
                     0);
    assert_false(o.rules_absent_run);
    options_free(&o);
    assert_error("rules-absent-fields = yes\n", "FILE:1: --rules-absent-fields: expected disable or run, got 'yes'");
}

static int load_argv(struct options *o, const char *const *args)
{
    char *argv[8] = {"seccheckd"};
    int argc = 1;
    for (; args[argc - 1]; argc++)
        argv[argc] = (char *)args[argc - 1];
    return options_load(o, argc, argv);
}

/* --config-if-exists: a missing file is no error, a present one is read
 * like --config (its errors too), and the two options do not combine. */
static void test_config_if_exists(void **state)
{
    (void)state;
    char dir[64], conf[128], missing[128];
    scratch_dir(dir);
    snprintf(conf, sizeof(conf), "%s/seccheckd.conf", dir);
    snprintf(missing, sizeof(missing), "%s/none.conf", dir);
    struct options o;

    const char *absent[] = {"--config-if-exists", missing, NULL};
    assert_int_equal(load_argv(&o, absent), 0);
    assert_string_equal(o.db_path, "./seccheck.db");
    options_free(&o);
    const char *required[] = {"--config", missing, NULL};
    assert_int_equal(load_argv(&o, required), 2);
    options_free(&o);

    FILE *f = fopen(conf, "w");
    assert_non_null(f);
    fputs("db = /x/from-file.db\nbatch-size = 7\n", f);
    fclose(f);
    const char *present[] = {"--config-if-exists", conf, "--batch-size", "9", NULL};
    assert_int_equal(load_argv(&o, present), 0);
    assert_string_equal(o.db_path, "/x/from-file.db");
    assert_int_equal(o.server.pipeline.limits.max_events, 9);   /* the command line still wins */
    options_free(&o);

    f = fopen(conf, "w");
    assert_non_null(f);
    fputs("batch-size = 0\n", f);
    fclose(f);
    assert_int_equal(load_argv(&o, present), 2);
    options_free(&o);

    const char *directory[] = {"--config-if-exists", dir, NULL};   /* there, but not readable as a file */
    assert_int_equal(load_argv(&o, directory), 2);
    options_free(&o);
    const char *both[] = {"--config", conf, "--config-if-exists", conf, NULL};
    assert_int_equal(load_argv(&o, both), 2);
    options_free(&o);
    f = fopen(conf, "w");
    assert_non_null(f);
    fputs("config-if-exists = /etc/other.conf\n", f);   /* not a setting a file can give */
    fclose(f);
    assert_int_equal(load_argv(&o, present), 2);
    options_free(&o);
    scratch_dir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comments),
        cmocka_unit_test(test_quoted_values),
        cmocka_unit_test(test_value_errors_name_the_line),
        cmocka_unit_test(test_alert_settings),
        cmocka_unit_test(test_rules_absent_fields),
        cmocka_unit_test(test_config_if_exists),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
