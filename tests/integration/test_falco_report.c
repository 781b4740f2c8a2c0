/* Integration: `seccheckd rules check --falco`, the migration report for
 * falcosecurity/rules' own files (issue 25 item 6, and its test "the set of
 * rules that run is asserted"). The files are tests/fixtures/falco_rules/,
 * falcosecurity/rules c72713ee2e, loaded unchanged in Falco's rules_files
 * order. Every rule's class is listed below; a rule that changes class, or
 * a rule more or less, fails the test.
 *
 * How the classes were found, from the fixtures: each disabled rule's
 * condition, its macros expanded, reads the field named (Contact K8S API
 * Server: fd.sip.name, a DNS name gVisor never resolves; the symlink and
 * hardlink rules: evt.arg.target / evt.arg.oldpath, pointers of raw points
 * on runsc 2022-12; the module, release_agent, unshare and capable-container
 * rules: thread.cap_*, no capabilities in gVisor's context; shell history:
 * evt.arg.path/oldpath of unlink/rename, raw). Each "newer runsc" rule
 * reads what came after runsc 2022-12: Terminal shell in container and
 * Exfiltrating Artifacts proc.tty (sentry/execve fd_info,
 * release-20260721.0), Drop and execute proc.is_exe_upper_layer
 * (release-20260714.0), Fileless execution proc.is_exe_from_memfd
 * (release-20260727.0); the two PTRACE rules evt.arg.request, which only
 * the syscall/ptrace point sends (release-20260727.0: runsc 2022-12's raw
 * ptrace point has numbers only). Network Connection outside Local Subnet tests
 * k8s.ns.name in (namespace_scope_network_only_subnet), a list upstream
 * leaves empty for the user: never true until tuned, in Falco too. The
 * others read what runsc 2022-12 sends.
 *
 * falco-sandbox_rules.yaml, loaded after the other two as Falco's
 * rules_files list them: the rules its file switches off (enabled: false)
 * are off; Update Package Repository, Modify binary dirs and Mkdir binary
 * dirs read rename's and mkdir's paths, which the 2022-12 raw points carry
 * as pointers only; Launch Sensitive Mount Container reads
 * container.mount.dest[PATH] (container/mounts.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "daemon.h"
#include "reaper.h"

enum file { STABLE, INCUBATING, SANDBOX, NFILES };
static const char *const file_names[NFILES] = {"falco_rules.yaml", "falco-incubating_rules.yaml",
                                               "falco-sandbox_rules.yaml"};

enum cls { C_RUNS, C_NEWER, C_ABSENT, C_NEVER_TRUE, C_OFF };
static const char *const class_words[] = {"runs", "newer runsc", "disabled", "never true", "off"};

struct row {
    enum file file;
    const char *rule;
    enum cls cls;
    const char *detail;   /* in the line under it: the fields, or the release */
};

static const struct row rows[] = {
    {STABLE, "Directory traversal monitored file read", C_RUNS, NULL},
    {STABLE, "Read sensitive file trusted after startup", C_RUNS, NULL},
    {STABLE, "Read sensitive file untrusted", C_RUNS, NULL},
    {STABLE, "Run shell untrusted", C_RUNS, NULL},
    {STABLE, "System user interactive", C_RUNS, NULL},
    {STABLE, "Terminal shell in container", C_NEWER, "release-20260721.0"},
    {STABLE, "Contact K8S API Server From Container", C_ABSENT, "fd.sip.name"},
    {STABLE, "Netcat Remote Code Execution in Container", C_RUNS, NULL},
    {STABLE, "Search Private Keys or Passwords", C_RUNS, NULL},
    {STABLE, "Clear Log Activities", C_RUNS, NULL},
    {STABLE, "Remove Bulk Data from Disk", C_RUNS, NULL},
    {STABLE, "Create Symlink Over Sensitive Files", C_ABSENT, "evt.arg.target"},
    {STABLE, "Create Hardlink Over Sensitive Files", C_ABSENT, "evt.arg.oldpath"},
    {STABLE, "Packet socket created in container", C_RUNS, NULL},
    {STABLE, "Redirect STDOUT/STDIN to Network Connection in Container", C_RUNS, NULL},
    {STABLE, "Linux Kernel Module Injection Detected", C_ABSENT, "thread.cap_effective"},
    {STABLE, "Debugfs Launched in Privileged Container", C_RUNS, NULL},
    {STABLE, "Detect release_agent File Container Escapes", C_ABSENT, "thread.cap_effective"},
    {STABLE, "PTRACE attached to process", C_NEWER, "release-20260727.0"},
    {STABLE, "PTRACE anti-debug attempt", C_NEWER, "release-20260727.0"},
    {STABLE, "Find AWS Credentials", C_RUNS, NULL},
    {STABLE, "Execution from /dev/shm", C_RUNS, NULL},
    {STABLE, "Drop and execute new binary in container", C_NEWER, "release-20260714.0"},
    {STABLE, "Disallowed SSH Connection Non Standard Port", C_RUNS, NULL},
    {STABLE, "Fileless execution via memfd_create", C_NEWER, "release-20260727.0"},
    {INCUBATING, "Modify Shell Configuration File", C_RUNS, NULL},
    {INCUBATING, "Schedule Cron Jobs", C_RUNS, NULL},
    {INCUBATING, "Read ssh information", C_RUNS, NULL},
    {INCUBATING, "DB program spawned process", C_RUNS, NULL},
    {INCUBATING, "Change thread namespace", C_RUNS, NULL},
    {INCUBATING, "Change namespace privileges via unshare", C_ABSENT, "thread.cap_permitted"},
    {INCUBATING, "Launch Privileged Container", C_RUNS, NULL},
    {INCUBATING, "Launch Excessively Capable Container", C_ABSENT, "thread.cap_permitted"},
    {INCUBATING, "System procs network activity", C_RUNS, NULL},
    {INCUBATING, "Program run with disallowed http proxy env", C_RUNS, NULL},
    {INCUBATING, "Unexpected UDP Traffic", C_RUNS, NULL},
    {INCUBATING, "Non sudo setuid", C_RUNS, NULL},
    {INCUBATING, "User mgmt binaries", C_RUNS, NULL},
    {INCUBATING, "Create files below dev", C_RUNS, NULL},
    {INCUBATING, "Contact EC2 Instance Metadata Service From Container", C_RUNS, NULL},
    {INCUBATING, "Contact cloud metadata service from container", C_RUNS, NULL},
    {INCUBATING, "Launch Package Management Process in Container", C_RUNS, NULL},
    {INCUBATING, "Launch Suspicious Network Tool in Container", C_RUNS, NULL},
    {INCUBATING, "Launch Suspicious Network Tool on Host", C_RUNS, NULL},
    {INCUBATING, "Delete or rename shell history", C_ABSENT, "evt.arg.oldpath, evt.arg.path"},
    {INCUBATING, "Set Setuid or Setgid bit", C_RUNS, NULL},
    {INCUBATING, "Launch Remote File Copy Tools in Container", C_RUNS, NULL},
    {INCUBATING, "Network Connection outside Local Subnet", C_NEVER_TRUE, NULL},
    {INCUBATING, "Mount Launched in Privileged Container", C_RUNS, NULL},
    {INCUBATING, "Launch Ingress Remote File Copy Tools in Container", C_RUNS, NULL},
    {INCUBATING, "Read environment variable from /proc files", C_RUNS, NULL},
    {INCUBATING, "Exfiltrating Artifacts via Kubernetes Control Plane", C_NEWER, "release-20260721.0"},
    {INCUBATING, "Adding ssh keys to authorized_keys", C_RUNS, NULL},
    {INCUBATING, "Potential Local Privilege Escalation via Environment Variables Misuse", C_RUNS, NULL},
    {INCUBATING, "Backdoored library loaded into SSHD (CVE-2024-3094)", C_RUNS, NULL},
    {INCUBATING, "BPF Program Not Profiled", C_RUNS, NULL},
    {SANDBOX, "Unexpected inbound connection source", C_OFF, NULL},
    {SANDBOX, "Read Shell Configuration File", C_OFF, NULL},
    {SANDBOX, "Update Package Repository", C_ABSENT, "evt.arg.newpath"},
    {SANDBOX, "Write below binary dir", C_RUNS, NULL},
    {SANDBOX, "Write below monitored dir", C_RUNS, NULL},
    {SANDBOX, "Write below etc", C_RUNS, NULL},
    {SANDBOX, "Write below root", C_RUNS, NULL},
    {SANDBOX, "Write below rpm database", C_RUNS, NULL},
    {SANDBOX, "Modify binary dirs", C_ABSENT, "evt.arg.path, evt.arg.name, evt.arg.oldpath, evt.arg.newpath"},
    {SANDBOX, "Mkdir binary dirs", C_ABSENT, "evt.arg.path"},
    {SANDBOX, "Launch Sensitive Mount Container", C_RUNS, NULL},
    {SANDBOX, "Launch Disallowed Container", C_RUNS, NULL},
    {SANDBOX, "Interpreted procs inbound network activity", C_OFF, NULL},
    {SANDBOX, "Interpreted procs outbound network activity", C_OFF, NULL},
    {SANDBOX, "Unexpected K8s NodePort Connection", C_OFF, NULL},
    {SANDBOX, "Create Hidden Files or Directories", C_OFF, NULL},
    {SANDBOX, "Detect outbound connections to common miner pool ports", C_OFF, NULL},
    {SANDBOX, "Detect crypto miners using the Stratum protocol", C_RUNS, NULL},
    {SANDBOX, "Kubernetes Client Tool Launched in Container", C_RUNS, NULL},
    {SANDBOX, "Container Drift Detected (chmod)", C_OFF, NULL},
    {SANDBOX, "Container Drift Detected (open+create)", C_OFF, NULL},
    {SANDBOX, "Container Run as Root User", C_OFF, NULL},
    {SANDBOX, "Sudo Potential Privilege Escalation", C_RUNS, NULL},
    {SANDBOX, "Unprivileged Delegation of Page Faults Handling to a Userspace Process", C_RUNS, NULL},
    {SANDBOX, "Polkit Local Privilege Escalation Vulnerability (CVE-2021-4034)", C_RUNS, NULL},
    {SANDBOX, "Java Process Class File Download", C_OFF, NULL},
    {SANDBOX, "Modify Container Entrypoint", C_OFF, NULL},
    {SANDBOX, "Decoding Payload in Container", C_RUNS, NULL},
    {SANDBOX, "Basic Interactive Reconnaissance", C_NEWER, NULL},
    {SANDBOX, "Netcat/Socat Remote Code Execution on Host", C_RUNS, NULL},
    {SANDBOX, "Network Tool Executed During NPM Package Install", C_RUNS, NULL},
    {SANDBOX, "Known Cryptominer Process Executed", C_RUNS, NULL},
    {SANDBOX, "Web Server Spawned Shell", C_RUNS, NULL},
    {SANDBOX, "Web Server Spawned Suspicious Child Process", C_RUNS, NULL},
    {SANDBOX, "Reverse Shell from Web Server", C_RUNS, NULL},
    {SANDBOX, "Privileged Container Device Access", C_RUNS, NULL},
    {SANDBOX, "Container Access to Host Sensitive Paths", C_RUNS, NULL},
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

static char dir[64];

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/seccheckd-falcoreport-XXXXXX");
    return reaper_mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    reaper_remove(dir);
    return 0;
}

static const char *fixture(enum file f)
{
    static char path[NFILES][512];
    snprintf(path[f], sizeof(path[f]), "%s/../falco_rules/%s", TRACES_DIR, file_names[f]);
    return path[f];
}

#define OUT_MAX (256 * 1024)

/* seccheckd rules check ARGS: exit code; stdout in out, stderr in err. */
static int run(const char *const *args, char *out, char *err)
{
    char cmd[8192], errpath[128];
    snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
    size_t len = (size_t)snprintf(cmd, sizeof(cmd), "timeout -s KILL 60 %s rules", SECCHECKD_BIN);
    for (int i = 0; args[i]; i++)
        len += (size_t)snprintf(cmd + len, sizeof(cmd) - len, " '%s'", args[i]);
    snprintf(cmd + len, sizeof(cmd) - len, " 2>'%s'", errpath);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, OUT_MAX - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    FILE *fp = fopen(errpath, "r");
    assert_non_null(fp);
    n = fread(err, 1, OUT_MAX - 1, fp);
    err[n] = '\0';
    fclose(fp);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The report of files (in that order) on runsc 2022-12. */
static char *report(const enum file *files, size_t n, const char *extra, char *err)
{
    const char *args[16] = {"check", "--falco", "--runsc", "2022-12"};
    size_t k = 4;
    for (size_t i = 0; i < n; i++)
        args[k++] = fixture(files[i]);
    if (extra)
        args[k++] = extra;
    args[k] = NULL;
    char *out = malloc(OUT_MAX);
    assert_non_null(out);
    assert_int_equal(run(args, out, err), 0);
    return out;
}

static bool loaded(enum file f, const enum file *files, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (files[i] == f)
            return true;
    return false;
}

/* Every rule of files in the report, under its file, in its class, with its
 * detail; and no rule more. */
static void check_classes(const enum file *files, size_t n)
{
    char *err = malloc(OUT_MAX);
    assert_non_null(err);
    char *out = report(files, n, NULL, err);
    size_t expected = 0, seen = 0;
    for (size_t r = 0; r < NROWS; r++)
        expected += loaded(rows[r].file, files, n);
    const char *file = NULL;   /* the header the lines are under */
    const struct row *last = NULL;
    char *save = NULL;
    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "What changes", 12) == 0)
            break;
        if (line[0] != ' ') {
            const char *slash = strrchr(line, '/');
            file = slash ? slash + 1 : line;
            continue;
        }
        if (line[2] == ' ') {   /* the detail of the rule above */
            assert_non_null(last);
            if (last->detail && !strstr(line, last->detail))
                fail_msg("%s: expected '%s' in '%s'", last->rule, last->detail, line);
            last = NULL;
            continue;
        }
        const char *name = line + 15;   /* two blanks, the class in 12, one blank */
        const struct row *row = NULL;
        for (size_t r = 0; r < NROWS && !row; r++)
            if (strcmp(rows[r].rule, name) == 0 && loaded(rows[r].file, files, n))
                row = &rows[r];
        if (!row)
            fail_msg("a rule the test does not list: '%s'", line);
        char word[16];
        snprintf(word, sizeof(word), "%.12s", line + 2);
        for (char *e = word + strlen(word); e > word && e[-1] == ' ';)
            *--e = '\0';
        if (strcmp(word, class_words[row->cls]) != 0)
            fail_msg("'%s': class '%s', expected '%s'", row->rule, word, class_words[row->cls]);
        if (!file || strcmp(file, file_names[row->file]) != 0)
            fail_msg("'%s' under %s, expected %s", row->rule, file ? file : "no file", file_names[row->file]);
        if (last && last->detail)
            fail_msg("'%s': no detail line", last->rule);
        last = row;
        seen++;
    }
    assert_int_equal(seen, expected);
    free(out);
    free(err);
}

static void test_stable_classes(void **state)
{
    (void)state;
    static const enum file files[] = {STABLE};
    check_classes(files, 1);
}

static void test_stable_incubating_classes(void **state)
{
    (void)state;
    static const enum file files[] = {STABLE, INCUBATING};
    check_classes(files, 2);
}

static void test_stable_incubating_sandbox_classes(void **state)
{
    (void)state;
    static const enum file files[] = {STABLE, INCUBATING, SANDBOX};
    check_classes(files, 3);
}

static void assert_has(const char *text, const char *part)
{
    if (!strstr(text, part))
        fail_msg("expected '%s' in:\n%s", part, text);
}

/* The three upstream files over the four recorded sandboxes (honest
 * workloads: tests/fixtures/traces/README.md) raise nothing, as Falco
 * would. mixed_syscalls' python3 calls setuid(1000) and setuid(0) as uid
 * 1000, whom its container's passwd does not name: libs' user.name is then
 * "<NA>", so upstream's known_user_in_container (falco-incubating_rules.yaml
 * :764-765) is false and "Non sudo setuid" stays quiet (it raised 2 alerts
 * while seccheckd took that user.name for absent). A rule of the test's own,
 * loaded last, shows the traces are evaluated: it catches both calls. */
static void test_upstream_rules_quiet_on_the_recordings(void **state)
{
    (void)state;
    char probe[128];
    snprintf(probe, sizeof(probe), "%s/probe.yaml", dir);
    FILE *fp = fopen(probe, "w");
    assert_non_null(fp);
    fputs("- rule: Probe setuid\n  desc: the traces' setuid calls\n"
          "  condition: evt.type = setuid and proc.name = python3\n"
          "  output: setuid to %evt.arg.uid by %user.name\n  priority: Notice\n", fp);
    fclose(fp);
    const char *args[] = {"test", fixture(STABLE), fixture(INCUBATING), fixture(SANDBOX), probe, "--trace",
                          TRACES_DIR "/drops.trace", TRACES_DIR "/exec_loop.trace",
                          TRACES_DIR "/mixed_syscalls.trace", TRACES_DIR "/redis_rw.trace", NULL};
    char *out = malloc(OUT_MAX), *err = malloc(OUT_MAX);
    assert_non_null(out);
    assert_non_null(err);
    assert_int_equal(run(args, out, err), 0);
    assert_has(err, "Non sudo setuid: 0 alerts");
    assert_has(err, "Probe setuid: 2 alerts");
    assert_has(err, "43534 events, 2 alerts");
    assert_has(out, "setuid to 1000 by <NA>");
    assert_has(out, "setuid to 0 by <NA>");
    free(out);
    free(err);
}

/* The report's head, its section on behaviour and its count. */
static void test_report_text(void **state)
{
    (void)state;
    static const enum file files[] = {STABLE, INCUBATING};
    char *err = malloc(OUT_MAX);
    assert_non_null(err);
    char *out = report(files, 2, NULL, err);
    assert_true(strncmp(out, "Falco rules on gVisor (Falco engine 0.63.0 semantics; runsc: runsc 2022-12 "
                             "(0.0~20221219, built in))\n", 90) == 0);
    assert_has(out, "\nWhat changes in behaviour against Falco:\n"
                    "  - Which rules alert: as Falco's default rule_matching: first, each event raises the first "
                    "enabled rule in load order whose condition holds (--rule-matching all: every one that holds).\n");
    assert_has(out, "one sandbox connection raises at most 10000 alerts at once, then 1000 a second "
                    "(--alerts-ceiling-burst, --alerts-ceiling; 0: none)");
    assert_has(out, "  - 8 rules load disabled where Falco runs them: their condition needs fields gVisor never "
                    "reports (--rules-absent-fields run runs them; those fields are absent on every event).\n");
    assert_has(out, "  - 6 rules need more than runsc 2022-12 (0.0~20221219, built in) sends: they load, and raise "
                    "no alert for what it does not send.\n");
    assert_has(out, "  - 1 rule never fires until tuned, as in Falco: no event can satisfy its condition as loaded.\n");
    /* Network Connection outside Local Subnet's output names the four */
    assert_has(out, "  - In outputs, fields gVisor never reports render <NA> (null in output_fields), as Falco "
                    "renders missing data: proc.exe_ino.mtime, fd.rip.name, fd.lip.name, fd.cip.name, fd.sip.name.\n");
    assert_has(out, "render <NA> with it: proc.tty, proc.exe_ino.ctime, proc.exe_ino.ctime_duration_proc_start.\n");
    assert_has(out, "\n56 rules: 41 run, 6 need a newer runsc, 8 disabled for fields gVisor never reports, 1 never "
                    "true as loaded, 0 off in the rules files\n");
    /* the loader's one warning per disabled rule, as plain check gives it */
    assert_has(err, "falco_rules.yaml:827:9: warning: rule 'Contact K8S API Server From Container' is disabled");
    free(out);
    free(err);
}

/* A falco_rules.local.yaml last: a rule switched off is "off", a rule of
 * the user's own "runs"; --rules-absent-fields run: "runs anyway". */
static void test_report_local_file(void **state)
{
    (void)state;
    char local[128];
    snprintf(local, sizeof(local), "%s/falco_rules.local.yaml", dir);
    write_file(local, "- rule: Clear Log Activities\n  enabled: false\n  override: {enabled: replace}\n"
                      "- rule: My shadow reader\n  desc: mine\n"
                      "  condition: open_read and fd.name = /etc/shadow\n  output: '%proc.name'\n"
                      "  priority: WARNING\n");
    static const enum file files[] = {STABLE};
    char *err = malloc(OUT_MAX);
    assert_non_null(err);
    char *out = report(files, 1, local, err);
    assert_has(out, "  off          Clear Log Activities\n                 enabled: false in the rules files\n");
    assert_has(out, "falco_rules.local.yaml\n  runs         My shadow reader\n");
    assert_has(out, "\n26 rules: 15 run, 5 need a newer runsc, 5 disabled for fields gVisor never reports, 0 never "
                    "true as loaded, 1 off in the rules files\n");
    free(out);
    const char *args[] = {"check", "--falco", "--runsc", "2022-12", "--rules-absent-fields", "run",
                          fixture(STABLE), NULL};
    out = malloc(OUT_MAX);
    assert_non_null(out);
    assert_int_equal(run(args, out, err), 0);
    assert_has(out, "  runs anyway  Linux Kernel Module Injection Detected\n"
                    "                 its condition needs what gVisor never reports: thread.cap_effective\n");
    assert_has(out, "25 rules: 15 run, 5 need a newer runsc, 0 disabled for fields gVisor never reports, 5 run anyway though they need them, "
                    "0 never true as loaded, 0 off in the rules files\n");
    assert_has(out, "  - 5 rules run (--rules-absent-fields run) though their conditions need fields gVisor never "
                    "reports");
    free(out);
    free(err);
}

/* No files: a clear error; --pod-init is plain check's; plain check as it
 * was; --help names it. */
static void test_usage(void **state)
{
    (void)state;
    char *out = malloc(OUT_MAX), *err = malloc(OUT_MAX);
    assert_non_null(out);
    assert_non_null(err);
    const char *none[] = {"check", "--falco", NULL};
    assert_int_equal(run(none, out, err), 2);
    assert_string_equal(err, "seccheckd rules: check --falco needs the rules files, in Falco's rules_files order "
                             "(falco_rules.yaml first, falco_rules.local.yaml last) (try --help)\n");
    assert_string_equal(out, "");
    const char *pod[] = {"check", "--falco", "--pod-init", "x.json", fixture(STABLE), NULL};
    assert_int_equal(run(pod, out, err), 2);
    assert_has(err, "check --falco reports on the rules alone");
    const char *plain[] = {"check", "--runsc", "2022-12", fixture(STABLE), NULL};
    assert_int_equal(run(plain, out, err), 0);
    assert_has(out, "Falco engine version 0.63.0 semantics");
    assert_has(out, "  Contact K8S API Server From Container [Notice, disabled]: connect\n");
    assert_null(strstr(out, "What changes"));
    const char *help[] = {"check", "--help", NULL};
    assert_int_equal(run(help, out, err), 0);
    assert_has(out, "seccheckd rules check --falco [--runsc PATH | --runsc-metadata FILE]");
    assert_has(out, "  --falco            a migration report for Falco's rules files");
    free(out);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stable_classes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stable_incubating_classes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stable_incubating_sandbox_classes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upstream_rules_quiet_on_the_recordings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_local_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
