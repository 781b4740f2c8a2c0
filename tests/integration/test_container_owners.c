/* Integration: names follow the sandbox, not the id it claims (issue 32
 * items 1-3). Two sandboxes, each its own connection, with state files in a
 * runsc root made here as runsc writes them: the victim's container
 * (payments/payments-db-0/db) and a tenant's. The tenant's sandbox reads
 * /etc/shadow in the name of the victim's container id (packets of
 * tests/support/gvisor_packets.py: shadow_victim, shadow_forger). Neither
 * the rules nor any reader (alerts, its --pod, events --namespace,
 * containers) may give the forged event the victim's names, whether the
 * tenant's own state file was read, refused (over 4 MiB), or the victim's
 * file is gone after a restart; a lookup that finds nothing never erases
 * names found before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"

#define PACKETS SOURCE_DIR "/tests/support/gvisor_packets.py"
#define PYTHON "/usr/bin/python3"   /* Debian's, with python3-protobuf */
#define VICTIM "victim-ctr"
#define TENANT "tenant-ctr"

static const char rules_yaml[] =
    "- rule: Trusted read\n"
    "  desc: the payments namespace may read it (an exception by namespace)\n"
    "  condition: evt.type in (open, openat) and fd.name = /etc/shadow and k8s.ns.name = payments\n"
    "  output: trusted read (ns=%k8s.ns.name pod=%k8s.pod.name container=%container.id)\n"
    "  priority: INFORMATIONAL\n"
    "- rule: Untrusted read\n"
    "  desc: anyone else\n"
    "  condition: evt.type in (open, openat) and fd.name = /etc/shadow and not k8s.ns.name = payments\n"
    "  output: untrusted read (ns=%k8s.ns.name pod=%k8s.pod.name container=%container.id)\n"
    "  priority: WARNING\n";

struct fixture {
    struct daemon d;
    char root[300], rules[300], metrics[300];
};

static char out[1 << 16], err[1 << 14];

static void setup(struct fixture *f)
{
    daemon_prepare(&f->d);
    snprintf(f->root, sizeof(f->root), "%s/runsc-root", f->d.dir);
    snprintf(f->rules, sizeof(f->rules), "%s/rules.yaml", f->d.dir);
    snprintf(f->metrics, sizeof(f->metrics), "unix:%s/m.sock", f->d.dir);
    assert_int_equal(mkdir(f->root, 0755), 0);
    write_file(f->rules, rules_yaml);
}

/* id's state file as runsc writes it (runsc/container/state_file.go), its
 * own sandbox's root container, with CRI's annotations; padding bytes of
 * environment (a tenant's ConfigMaps) make it as large as that. */
static void write_state(const struct fixture *f, const char *id, const char *ns, const char *pod,
                        const char *name, size_t padding)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s_sandbox:%s.state", f->root, id, id);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fprintf(fp, "{\"id\":\"%s\",\"spec\":{\"ociVersion\":\"1.0.2-dev\",\"process\":{\"user\":{\"uid\":0,\"gid\":0},"
                "\"args\":[\"/bin/sh\"],\"env\":[\"PATH=/bin\",\"PAD=", id);
    for (size_t i = 0; i < padding; i++)
        fputc('x', fp);
    fprintf(fp, "\"],\"cwd\":\"/\"},\"root\":{\"path\":\"/nonexistent-rootfs\"},\"annotations\":{"
                "\"io.kubernetes.cri.container-type\":\"container\",\"io.kubernetes.cri.container-name\":\"%s\","
                "\"io.kubernetes.cri.sandbox-name\":\"%s\",\"io.kubernetes.cri.sandbox-namespace\":\"%s\","
                "\"io.kubernetes.cri.sandbox-id\":\"%s\"}},\"bundleDir\":\"/nonexistent\","
                "\"createdAt\":\"2026-12-01T19:56:01Z\",\"status\":\"running\",\"sandbox\":{\"id\":\"%s\",\"pid\":2}}",
            name, pod, ns, id, id);
    assert_int_equal(fclose(fp), 0);
}

static void start(struct fixture *f)
{
    const char *args[] = {"--runsc-root", f->root, "--rules", f->rules, "--alerts-out", "none", "--alerts-rate", "0",
                          "--metrics-listen", f->metrics, NULL};
    assert_true(daemon_start(&f->d, SECCHECKD_BIN, args));
}

/* One sandbox connection telling story (gvisor_packets.py), then its close
 * stored (the n-th close of this daemon). */
static void sandbox(struct fixture *f, const char *story, int n)
{
    const char *argv[] = {PYTHON, PACKETS, "send", f->d.socket, story, NULL};
    int rc = run_command(argv, out, sizeof(out), err, sizeof(err));
    if (rc != 0)
        fail_msg("gvisor_packets.py send %s: exit %d (%s)\n%s", story, rc, rc == 127 ? "no python3" : "failed", err);
    if (!daemon_wait_log(&f->d, "closed (eof)", n, 10000))
        fail_msg("connection %d did not close", n);
}

static long long q(const struct fixture *f, const char *sql) { return db_query_int(f->d.db, sql); }

/* Waits until sql counts want (the writer commits after the close is logged). */
static void wait_count(const struct fixture *f, const char *sql, long long want)
{
    for (int i = 0; i < 500 && q(f, sql) != want; i++)
        sleep_ms(10);
    if (q(f, sql) != want)
        fail_msg("%s: %lld, want %lld", sql, q(f, sql), want);
}

/* Runs `seccheckd ARGS... --db DB` into out. */
static void cmd(const struct fixture *f, const char *const *args)
{
    const char *argv[16] = {SECCHECKD_BIN};
    size_t n = 1;
    for (; args[n - 1]; n++)
        argv[n] = args[n - 1];
    argv[n++] = "--db";
    argv[n++] = f->d.db;
    argv[n] = NULL;
    int rc = run_command(argv, out, sizeof(out), err, sizeof(err));
    if (rc != 0)
        fail_msg("seccheckd %s exited %d: %s", args[0], rc, err);
}

static int lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static int lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

/* The victim's sandbox, then the tenant's forging the victim's container
 * id (its own state file padded by tenant_padding bytes), both stored. */
static void victim_then_forger(struct fixture *f, size_t tenant_padding)
{
    setup(f);
    write_state(f, VICTIM, "payments", "payments-db-0", "db", 0);
    write_state(f, TENANT, "team-b", "job-7", "worker", tenant_padding);
    start(f);
    sandbox(f, "shadow_victim", 1);
    sandbox(f, "shadow_forger", 2);
    wait_count(f, "SELECT count(*) FROM alerts", 2);
}

/* Item 1: every reader gives the victim's names to the victim's own events only. */
static void test_readers_name_only_the_own_sandbox(void **state)
{
    (void)state;
    struct fixture f;
    victim_then_forger(&f, 0);
    wait_count(&f, "SELECT count(*) FROM connections WHERE close_ns IS NOT NULL", 2);

    /* each connection bound to its own sandbox, by the first container it named */
    assert_int_equal(q(&f, "SELECT count(*) FROM connections WHERE sandbox = '" VICTIM "' AND sandbox_bound_by = "
                           "'container'"), 1);
    assert_int_equal(q(&f, "SELECT count(*) FROM connections WHERE sandbox = '" TENANT "' AND sandbox_bound_by = "
                           "'container'"), 1);
    assert_int_equal(q(&f, "SELECT count(*) FROM container_info WHERE container_id = '" VICTIM "' AND state = 'found'"
                           " AND sandbox = '" VICTIM "' AND pod_namespace = 'payments'"), 1);
    /* the rules: the forged read is the tenant's, untrusted */
    assert_int_equal(q(&f, "SELECT count(*) FROM alerts WHERE rule = 'Trusted read'"), 1);
    assert_int_equal(q(&f, "SELECT count(*) FROM alerts WHERE rule = 'Untrusted read' AND output LIKE "
                           "'%untrusted read (ns=<NA> pod=<NA> container=" VICTIM ")%'"), 1);

    /* seccheckd alerts: the victim's names beside its own alert only, the forged one marked */
    cmd(&f, (const char *const[]){"alerts", NULL});
    assert_int_equal(lines_with(out, "payments/payments-db-0/db"), 1);
    assert_int_equal(lines_with(out, "!foreign"), 1);
    const char *forged = strstr(out, "untrusted read");
    assert_non_null(forged);
    const char *line_start = forged;
    while (line_start > out && line_start[-1] != '\n')
        line_start--;
    assert_non_null(strstr(line_start, "!foreign"));
    assert_true(strstr(line_start, "!foreign") < forged);
    /* --pod and --namespace: the victim's own */
    cmd(&f, (const char *const[]){"alerts", "--pod", "payments-db-0", "--json", NULL});
    assert_int_equal(lines(out), 1);
    assert_non_null(strstr(out, "trusted read (ns=payments"));
    cmd(&f, (const char *const[]){"alerts", "--container", "db", "--json", NULL});
    assert_int_equal(lines(out), 1);
    cmd(&f, (const char *const[]){"events", "--namespace", "payments", NULL});
    assert_int_equal(lines(out), 2);   /* its start and its open */
    assert_int_equal(lines_with(out, VICTIM "(payments/payments-db-0/db)"), 2);
    cmd(&f, (const char *const[]){"events", "--container", VICTIM, NULL});
    assert_int_equal(lines(out), 3);   /* by id: every event naming it, the forged one marked */
    assert_int_equal(lines_with(out, VICTIM "(!foreign)"), 1);

    /* seccheckd containers and the view: the forged event is a row of its own, not the victim's */
    assert_int_equal(q(&f, "SELECT count(*) FROM containers WHERE container_id = '" VICTIM "' AND lookup = 'found' "
                           "AND pod_name = 'payments-db-0' AND events = 2 AND alerts = 1"), 1);
    assert_int_equal(q(&f, "SELECT count(*) FROM containers WHERE container_id = '" VICTIM "' AND lookup = 'foreign' "
                           "AND name IS NULL AND events = 1 AND alerts = 1 AND sandbox = '" TENANT "'"), 1);
    cmd(&f, (const char *const[]){"containers", NULL});
    assert_int_equal(lines_with(out, " foreign"), 1);
    cmd(&f, (const char *const[]){"containers", "--pod", "payments-db-0", "--json", NULL});
    assert_int_equal(lines(out), 1);
    assert_non_null(strstr(out, "\"events\":2"));
    assert_int_equal(daemon_stop(&f.d), 0);
    daemon_cleanup(&f.d);
}

/* Item 2: the tenant's own state file refused (over 4 MiB) still binds its
 * connection to its own sandbox: the forged read takes no names. */
static void test_refused_own_state_still_binds(void **state)
{
    (void)state;
    struct fixture f;
    victim_then_forger(&f, (4u << 20) + 1);
    assert_int_equal(q(&f, "SELECT count(*) FROM container_info WHERE container_id = '" TENANT "' AND state = "
                           "'refused' AND why LIKE '%larger than 4 MiB%'"), 1);
    assert_int_equal(q(&f, "SELECT count(*) FROM alerts WHERE rule = 'Untrusted read' AND container_id = '" VICTIM
                           "'"), 1);
    assert_int_equal(q(&f, "SELECT count(*) FROM alerts WHERE rule = 'Trusted read'"), 1);   /* the victim's own */
    wait_count(&f, "SELECT count(*) FROM connections WHERE sandbox = '" TENANT "'", 1);
    assert_true(metric_scrape(f.metrics + strlen("unix:"), "seccheckd_container_records_foreign_total") >= 1);
    assert_int_equal(daemon_stop(&f.d), 0);
    daemon_cleanup(&f.d);
}

/* Item 3: after the victim's container ended (its state file gone) and a
 * restart (the cache forgot it), a sandbox naming its id makes a lookup
 * that finds nothing: the names found before stay, in every reader. */
static void test_nothing_found_never_erases(void **state)
{
    (void)state;
    struct fixture f;
    setup(&f);
    write_state(&f, VICTIM, "payments", "payments-db-0", "db", 0);
    write_state(&f, TENANT, "team-b", "job-7", "worker", 0);
    start(&f);
    sandbox(&f, "shadow_victim", 1);
    wait_count(&f, "SELECT count(*) FROM alerts", 1);
    wait_count(&f, "SELECT count(*) FROM container_info WHERE container_id = '" VICTIM "' AND state = 'found'", 1);
    assert_int_equal(daemon_stop(&f.d), 0);

    char path[512];
    snprintf(path, sizeof(path), "%s/%s_sandbox:%s.state", f.root, VICTIM, VICTIM);
    assert_int_equal(unlink(path), 0);   /* runsc deleted it: the container ended */
    start(&f);
    sandbox(&f, "shadow_forger", 1);
    sandbox(&f, "shadow_victim", 2);   /* an id named again, looked up again (by its own sandbox too) */
    wait_count(&f, "SELECT count(*) FROM alerts", 3);
    /* the lookups ended (found nothing) and their rows were offered: give them their attempts (1.5 s) */
    for (int i = 0; i < 300 && metric_scrape(f.metrics + strlen("unix:"), "seccheckd_containers_unknown_total") < 1;
         i++)
        sleep_ms(10);
    sandbox(&f, "shadow_forger", 3);   /* a batch that carries the unknown records */
    wait_count(&f, "SELECT count(*) FROM alerts", 4);
    assert_int_equal(q(&f, "SELECT count(*) FROM container_info WHERE container_id = '" VICTIM "' AND state = 'found'"
                           " AND pod_name = 'payments-db-0' AND sandbox = '" VICTIM "'"), 1);
    cmd(&f, (const char *const[]){"alerts", "--pod", "payments-db-0", "--json", NULL});
    assert_int_equal(lines(out), 2);   /* the victim's alert of each run */
    cmd(&f, (const char *const[]){"alerts", NULL});
    assert_int_equal(lines_with(out, "payments/payments-db-0/db"), 2);
    assert_int_equal(daemon_stop(&f.d), 0);
    daemon_cleanup(&f.d);
}

/* Characters (UTF-8) of s before p. */
static size_t chars_before(const char *s, const char *p)
{
    size_t n = 0;
    for (; s < p; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* seccheckd containers: a name longer than its column, with an escape and
 * UTF-8 in it, is cut within the column ("...", issue 32, a smaller item:
 * "...[+N bytes]" overran it), so the next column starts under its header. */
static void test_containers_cells_fit(void **state)
{
    (void)state;
    struct fixture f;
    setup(&f);
    write_state(&f, VICTIM, "payments", "payments-db-0",
                "caf\\u00e9-\\u001b[31m-a-container-name-far-longer-than-its-column-of-twenty", 0);
    start(&f);
    sandbox(&f, "shadow_victim", 1);
    wait_count(&f, "SELECT count(*) FROM containers WHERE lookup = 'found'", 1);
    cmd(&f, (const char *const[]){"containers", NULL});
    const char *header = out, *row = strchr(out, '\n');
    assert_non_null(row);
    row++;
    const char *pod_head = strstr(header, "POD"), *pod = strstr(row, "payments-db-0");
    assert_non_null(pod_head);
    assert_non_null(pod);
    assert_int_equal(chars_before(row, pod), chars_before(header, pod_head));
    assert_non_null(strstr(row, "caf\xc3\xa9-\\x1b[31m-a-c...  payments-db-0"));
    assert_null(strstr(row, "[+"));
    assert_null(strchr(row, '\x1b'));
    assert_int_equal(daemon_stop(&f.d), 0);
    daemon_cleanup(&f.d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_readers_name_only_the_own_sandbox),
        cmocka_unit_test(test_refused_own_state_still_binds),
        cmocka_unit_test(test_nothing_found_never_erases),
        cmocka_unit_test(test_containers_cells_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
