/* Integration: container names from runsc's state files (--runsc-root).
 * A runsc root made here as runsc writes it (the layout checked against a
 * real runsc in tests/e2e/containers_e2e.sh) for the container of
 * mixed_syscalls.trace (runsc-236711, events as uid 0 and 1000), none for
 * exec_loop.trace's (runsc-924761): the rules see the pod, namespace,
 * container name, image and user names of the one, <NA> for the other
 * (counted, nothing waits), the names reach container_info, the containers
 * view, the alerts' output_fields and seccheckd containers/events/alerts;
 * hostile state and passwd files are refused or escaped and the daemon
 * stores every event as before. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "daemon.h"
#include "replay.h"

/* Packets in a recorded trace: the events it stores (the handshake aside). */
static long long trace_packets(const char *name)
{
    struct replay_trace t;
    assert_int_equal(trace_load_named(&t, name), 0);
    long long n = (long long)t.count;
    replay_trace_free(&t);
    return n;
}

#define MIXED_EVENTS trace_packets("mixed_syscalls")
#define EXEC_LOOP_EVENTS trace_packets("exec_loop")
#define MIXED_ID "runsc-236711"
#define LOOP_ID "runsc-924761"
#define CONTAINER_ATTEMPTS_EXPECTED 5   /* container.h CONTAINER_ATTEMPTS */

static const char rules_yaml[] =
    "- rule: Open in shop\n"
    "  desc: an open in the shop namespace\n"
    "  condition: evt.type in (open, openat) and k8s.ns.name = shop\n"
    "  output: >-\n"
    "    open in %k8s.ns.name (pod=%k8s.pod.name uid=%k8s.pod.uid sandbox=%k8s.pod.sandbox_id\n"
    "    container=%container.name image=%container.image repo=%container.image.repository\n"
    "    tag=%container.image.tag type=%container.type privileged=%container.privileged user=%user.name\n"
    "    home=%user.homedir shell=%user.shell group=%group.name loginuid=%user.loginuid)\n"
    "  priority: WARNING\n"
    "- rule: Mallory acts\n"
    "  desc: the container's own user 1000\n"
    "  condition: evt.type in (open, openat, read, write, close, setuid, socket, connect) and user.name = mallory\n"
    "  output: mallory (user=%user.name uid=%user.uid container=%container.name)\n"
    "  priority: NOTICE\n"
    "- rule: Exec anywhere\n"
    "  desc: names absent without a state file\n"
    "  condition: evt.type = execve\n"
    "  output: exec (container=%container.id name=%container.name ns=%k8s.ns.name user=%user.name)\n"
    "  priority: INFO\n";

struct fixture {
    struct daemon d;
    char root[300], rootfs[350], bundle[300], rules[300], alerts[300], metrics[300];
};

static void mkdir_p(const char *path)
{
    char p[512];
    snprintf(p, sizeof(p), "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

static void setup_dirs(struct fixture *f)
{
    daemon_prepare(&f->d);
    snprintf(f->root, sizeof(f->root), "%s/runsc-root", f->d.dir);
    snprintf(f->bundle, sizeof(f->bundle), "%s/bundle", f->d.dir);
    snprintf(f->rootfs, sizeof(f->rootfs), "%s/rootfs", f->bundle);
    snprintf(f->rules, sizeof(f->rules), "%s/rules.yaml", f->d.dir);
    snprintf(f->alerts, sizeof(f->alerts), "%s/alerts.json", f->d.dir);
    snprintf(f->metrics, sizeof(f->metrics), "unix:%s/m.sock", f->d.dir);
    mkdir_p(f->root);
    char etc[512];
    snprintf(etc, sizeof(etc), "%s/etc", f->rootfs);
    mkdir_p(etc);
    write_file(f->rules, rules_yaml);
}

static void write_etc(const struct fixture *f, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/etc/%s", f->rootfs, name);
    write_file(path, text);
}

static void state_path(const struct fixture *f, const char *id, char *out, size_t len)
{
    snprintf(out, len, "%s/%s_sandbox:%s.state", f->root, id, id);
}

/* As runsc writes it (runsc/container/state_file.go SaveLocked: the Container as JSON). */
static void write_state(const struct fixture *f, const char *id, const char *container_name)
{
    char path[512], json[4096];
    state_path(f, id, path, sizeof(path));
    snprintf(json, sizeof(json),
             "{\"id\":\"%s\",\"spec\":{\"ociVersion\":\"1.0.2-dev\",\"process\":{\"user\":{\"uid\":1000,\"gid\":1000},"
             "\"args\":[\"/bin/sh\"],\"cwd\":\"/\"},\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
             "\"annotations\":{\"io.kubernetes.cri.container-type\":\"container\","
             "\"io.kubernetes.cri.container-name\":\"%s\",\"io.kubernetes.cri.sandbox-name\":\"web-1\","
             "\"io.kubernetes.cri.sandbox-namespace\":\"shop\",\"io.kubernetes.cri.sandbox-uid\":\"7d3a-uid\","
             "\"io.kubernetes.cri.image-name\":\"registry.example.com:5000/team/app:v2\","
             "\"io.kubernetes.cri.sandbox-id\":\"3ad7b26ded6d8e7b23da7d48fe889434573036c27ae5a74837233de441c3601e\"}},"
             "\"bundleDir\":\"%s\",\"createdAt\":\"2026-12-01T19:56:01Z\",\"owner\":\"\",\"status\":\"running\","
             "\"goferPid\":1,\"sandbox\":{\"id\":\"%s\",\"pid\":2}}",
             id, container_name, f->bundle, id);
    write_file(path, json);
}

static void start(struct fixture *f)
{
    const char *args[] = {"--runsc-root", f->root, "--rules", f->rules, "--alerts-out", f->alerts,
                          "--alerts-rate", "0", "--metrics-listen", f->metrics, NULL};
    assert_true(daemon_start(&f->d, SECCHECKD_BIN, args));
}

static void replay(const struct fixture *f, const char *trace)
{
    assert_int_equal(replay_file(f->d.socket, trace), 0);
}

static void wait_closed(const struct fixture *f, int n)
{
    if (!daemon_wait_log(&f->d, "closed (eof)", n, 10000))
        fail_msg("connections did not close");
}

static double scrape(const struct fixture *f, const char *series)
{
    return metric_scrape(f->metrics + strlen("unix:"), series);
}

static long long q(const struct fixture *f, const char *sql) { return db_query_int(f->d.db, sql); }

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return strdup("");
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = calloc(1, (size_t)n + 1);
    assert_true(fread(s, 1, (size_t)n, fp) == (size_t)n);
    fclose(fp);
    return s;
}

/* The alert lines, once there are as many as alerts stored: the daemon
 * writes a batch's lines after its commit, so a reader of the database can
 * be ahead of the file (a clean-clone run at load 4 slurped it between the
 * two and found no line of the last batch). 10 s at most. */
static char *alert_lines(const struct fixture *f)
{
    long long want = q(f, "SELECT count(*) FROM alerts");
    for (int i = 0;; i++) {
        char *lines = slurp(f->alerts);
        long long have = 0;
        for (const char *c = lines; *c; c++)
            have += *c == '\n';
        if (have >= want || i == 1000)
            return lines;
        free(lines);
        sleep_ms(10);
    }
}

static void run(const char *const *argv, char *out, size_t outlen)
{
    char err[2048];
    int rc = run_command(argv, out, outlen, err, sizeof(err));
    if (rc != 0)
        fail_msg("%s exited %d: %s", argv[1], rc, err);
}

static void test_names_from_runsc_state(void **state)
{
    (void)state;
    struct fixture f;
    setup_dirs(&f);
    write_state(&f, MIXED_ID, "app");
    write_etc(&f, "passwd", "root:x:0:0:root:/root:/bin/sh\nmallory:x:1000:1000:M:/home/mallory:/bin/bash\n");
    write_etc(&f, "group", "root:x:0:\nstaff:x:1000:mallory\n");
    start(&f);
    replay(&f, TRACES_DIR "/mixed_syscalls.trace");
    int64_t t0 = (int64_t)time(NULL);
    replay(&f, TRACES_DIR "/exec_loop.trace");   /* no state file: nothing waits for it past the first batch */
    assert_true((int64_t)time(NULL) - t0 < 3);
    wait_closed(&f, 2);
    for (int i = 0; i < 300 && q(&f, "SELECT count(*) FROM events") < MIXED_EVENTS + EXEC_LOOP_EVENTS; i++)
        sleep_ms(10);
    assert_int_equal(q(&f, "SELECT count(*) FROM events"), MIXED_EVENTS + EXEC_LOOP_EVENTS);

    /* the rule on k8s.ns.name fired on every open of the named container, none of the other */
    long long opens = q(&f, "SELECT count(*) FROM events WHERE container_id = '" MIXED_ID "' AND msg_type = 7 "
                            "AND is_exit = 1 AND sysno IN (2, 257)");
    assert_true(opens > 100);
    assert_int_equal(q(&f, "SELECT count(*) FROM alerts WHERE rule = 'Open in shop'"), opens);
    assert_int_equal(q(&f, "SELECT count(*) FROM alerts WHERE rule = 'Open in shop' AND output LIKE "
                           "'%open in shop (pod=web-1 uid=7d3a-uid sandbox=3ad7b26ded6d container=app "
                           "image=registry.example.com:5000/team/app:v2 repo=registry.example.com:5000/team/app "
                           "tag=v2 type=gvisor privileged=false user=root home=/root shell=/bin/sh group=root "
                           "loginuid=-1) container_id=" MIXED_ID " container_name=app container_image_repository="
                           "registry.example.com:5000/team/app container_image_tag=v2 k8s_pod_name=web-1 "
                           "k8s_ns_name=shop'"), /* and what Falco's suggested_output adds (--append-output) */
                     opens - q(&f, "SELECT count(*) FROM alerts WHERE rule = 'Open in shop' "
                                                         "AND output LIKE '%user=mallory%'"));
    /* the rule on user.name: the container's own passwd names uid 1000 */
    long long mallory = q(&f, "SELECT count(*) FROM alerts WHERE rule = 'Mallory acts'");
    assert_true(mallory > 0);
    assert_int_equal(mallory, q(&f, "SELECT count(*) FROM alerts WHERE rule = 'Mallory acts' AND output LIKE "
                                    "'%mallory (user=mallory uid=1000 container=app) container_id=%'"));
    /* in Falco's JSON: output_fields carry them by name, absent ones as null */
    char *lines = alert_lines(&f);
    assert_non_null(strstr(lines, "\"k8s.ns.name\":\"shop\""));
    assert_non_null(strstr(lines, "\"container.image.repository\":\"registry.example.com:5000/team/app\""));
    assert_non_null(strstr(lines, "\"user.loginuid\":-1"));
    assert_non_null(strstr(lines, "\"container.privileged\":false"));
    assert_non_null(strstr(lines, "\"container.id\":\"" LOOP_ID "\",\"container.image.repository\":null,"
                                  "\"container.image.tag\":null,\"container.name\":null,\"evt.time\""));
    assert_non_null(strstr(lines, "\"k8s.ns.name\":null,\"k8s.pod.name\":null,\"user.name\":\"root\""));
    /* a rule whose output names neither pod nor image: Falco's suggested
     * output (the default --append-output) gives the line, which is what
     * --alerts-url posts to falcosidekick, the container, pod and image */
    int traced = 0;
    for (char *line = strtok(lines, "\n"); line; line = strtok(NULL, "\n"))
        traced += strstr(line, "\"rule\":\"Mallory acts\"") && strstr(line, "\"container.id\":\"" MIXED_ID "\"") &&
                  strstr(line, "\"k8s.pod.name\":\"web-1\"") && strstr(line, "\"k8s.ns.name\":\"shop\"") &&
                  strstr(line, "\"container.image.repository\":\"registry.example.com:5000/team/app\"") &&
                  strstr(line, "\"container.image.tag\":\"v2\"");
    assert_int_equal(traced, mallory);   /* uid 0 without a passwd */
    free(lines);
    assert_int_equal(q(&f, "SELECT count(*) FROM alerts WHERE rule = 'Exec anywhere' AND container_id = '" LOOP_ID
                           "' AND output NOT LIKE '%name=<NA> ns=<NA> user=root) container_id=%'"), 0);

    /* container_info and the view; the unknown one counted once its attempts are over (1.5 s) */
    assert_int_equal(q(&f, "SELECT count(*) FROM container_info WHERE container_id = '" MIXED_ID "' AND state = "
                           "'found' AND name = 'app' AND pod_name = 'web-1' AND pod_namespace = 'shop' AND "
                           "image_tag = 'v2' AND user_uid = 1000 AND user_name = 'mallory' AND users = 2"), 1);
    for (int i = 0; i < 300 && scrape(&f, "seccheckd_containers_unknown_total") < 1; i++)
        sleep_ms(10);
    assert_int_equal(scrape(&f, "seccheckd_containers_unknown_total"), 1);
    assert_int_equal(scrape(&f, "seccheckd_containers_found_total"), 1);
    assert_int_equal(scrape(&f, "seccheckd_container_state_files_refused_total"), 0);
    assert_int_equal(scrape(&f, "seccheckd_container_mounts_malformed_total"), 0);
    assert_int_equal(scrape(&f, "seccheckd_container_lookups_total"), 1 + CONTAINER_ATTEMPTS_EXPECTED);
    replay(&f, TRACES_DIR "/exec_loop.trace");   /* the next batch carries the unknown record */
    wait_closed(&f, 3);
    for (int i = 0; i < 300 && q(&f, "SELECT count(*) FROM container_info") < 2; i++)
        sleep_ms(10);
    assert_int_equal(q(&f, "SELECT count(*) FROM container_info WHERE container_id = '" LOOP_ID "' AND state = "
                           "'unknown' AND name IS NULL"), 1);
    assert_int_equal(q(&f, "SELECT count(*) FROM containers WHERE container_id = '" MIXED_ID "' AND name = 'app' "
                           "AND pod_namespace = 'shop' AND lookup = 'found' AND events > 100 AND alerts > 100"), 1);
    assert_int_equal(q(&f, "SELECT count(*) FROM containers WHERE container_id = '" LOOP_ID "' AND name IS NULL "
                           "AND lookup = 'unknown'"), 1);

    /* seccheckd containers, and the filters by name */
    char out[16384];
    const char *containers[] = {SECCHECKD_BIN, "containers", "--db", f.d.db, NULL};
    run(containers, out, sizeof(out));
    assert_non_null(strstr(out, "CONTAINER"));
    assert_non_null(strstr(out, MIXED_ID "          app                   web-1"));
    assert_non_null(strstr(out, "registry.example.com:5000/team/app:v2"));
    assert_non_null(strstr(out, LOOP_ID "          -                     -"));
    /* first and last seen whole, in the one format of every command: UTC, ms, Z */
    const char *seen = strstr(out, "registry.example.com:5000/team/app:v2");
    assert_non_null(seen);
    seen += strcspn(seen, " ");
    seen += strspn(seen, " ");
    int y, mo, da, h, mi, se, ms;
    char z1, z2;
    assert_int_equal(sscanf(seen, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &y, &mo, &da, &h, &mi, &se, &ms, &z1), 8);
    assert_int_equal(z1, 'Z');
    seen = strchr(seen, 'Z') + 1;
    assert_int_equal(sscanf(seen, " %4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &y, &mo, &da, &h, &mi, &se, &ms, &z2), 8);
    assert_int_equal(z2, 'Z');
    const char *by_ns[] = {SECCHECKD_BIN, "containers", "--db", f.d.db, "--namespace", "shop", "--json", NULL};
    run(by_ns, out, sizeof(out));
    assert_non_null(strstr(out, "\"container_id\":\"" MIXED_ID "\",\"name\":\"app\""));
    assert_null(strstr(out, LOOP_ID));
    const char *events_by_name[] = {SECCHECKD_BIN, "events", "--db", f.d.db, "--container", "app", NULL};
    run(events_by_name, out, sizeof(out));
    assert_non_null(strstr(out, MIXED_ID));
    assert_null(strstr(out, LOOP_ID));
    const char *alerts_by_pod[] = {SECCHECKD_BIN, "alerts", "--db", f.d.db, "--pod", "nope", NULL};
    run(alerts_by_pod, out, sizeof(out));
    assert_null(strstr(out, "Open in shop"));
    const char *alerts_by_ns[] = {SECCHECKD_BIN, "alerts", "--db", f.d.db, "--namespace", "shop", NULL};
    run(alerts_by_ns, out, sizeof(out));
    assert_non_null(strstr(out, "Open in shop"));
    assert_null(strstr(out, LOOP_ID));
    assert_int_equal(daemon_stop(&f.d), 0);
    assert_int_equal(daemon_log_count(&f.d, "containers: reading runsc's state files in"), 1);
}

/* The state file and the container's passwd are the attacker's: refused or
 * escaped, counted, and the daemon stores and evaluates as before. */
static void test_hostile_state_and_passwd(void **state)
{
    (void)state;
    struct fixture f;
    setup_dirs(&f);
    /* mixed's container: 5 MiB of JSON; exec_loop's: a symlink to a good state file elsewhere */
    char path[512], target[512];
    state_path(&f, MIXED_ID, path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0640);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 5 << 20), 0);
    close(fd);
    snprintf(target, sizeof(target), "%s/elsewhere.state", f.d.dir);
    write_file(target, "{\"id\":\"" LOOP_ID "\",\"spec\":{\"annotations\":{\"io.kubernetes.cri.sandbox-namespace\":"
                       "\"shop\"}}}");
    state_path(&f, LOOP_ID, path, sizeof(path));
    assert_int_equal(symlink(target, path), 0);
    start(&f);
    replay(&f, TRACES_DIR "/mixed_syscalls.trace");
    replay(&f, TRACES_DIR "/exec_loop.trace");
    wait_closed(&f, 2);
    for (int i = 0; i < 300 && q(&f, "SELECT count(*) FROM events") < MIXED_EVENTS + EXEC_LOOP_EVENTS; i++)
        sleep_ms(10);
    assert_int_equal(q(&f, "SELECT count(*) FROM events"), MIXED_EVENTS + EXEC_LOOP_EVENTS);
    assert_int_equal(q(&f, "SELECT count(*) FROM alerts WHERE rule = 'Open in shop'"), 0);
    assert_true(q(&f, "SELECT count(*) FROM alerts WHERE rule = 'Exec anywhere'") >=
                q(&f, "SELECT count(*) FROM events WHERE msg_type = 3"));
    assert_int_equal(scrape(&f, "seccheckd_container_state_files_refused_total"), 2);
    assert_int_equal(q(&f, "SELECT count(*) FROM container_info WHERE state = 'refused' AND name IS NULL"), 2);
    assert_int_equal(q(&f, "SELECT count(*) FROM container_info WHERE why LIKE '%larger than 4 MiB%'"), 1);
    assert_int_equal(q(&f, "SELECT count(*) FROM container_info WHERE why LIKE '%symlink%'"), 1);
    assert_int_equal(daemon_stop(&f.d), 0);
    assert_int_equal(daemon_log_count(&f.d, "seccheckd_container_state_files_refused_total, logged once"), 1);

    /* again with a good state file, hostile names in it and a passwd that is a
     * symlink to a file outside the root: the names are escaped everywhere
     * they are shown, the host's passwd is never read */
    struct fixture g;
    setup_dirs(&g);
    write_state(&g, MIXED_ID, "evil\\u001b[2J\\nname\\\"quote");
    char hostpw[512], pw[512];
    snprintf(hostpw, sizeof(hostpw), "%s/host-passwd", g.d.dir);
    write_file(hostpw, "hostuser:x:1000:1000::/home/host:/bin/sh\n");
    snprintf(pw, sizeof(pw), "%s/etc/passwd", g.rootfs);
    assert_int_equal(symlink(hostpw, pw), 0);
    start(&g);
    replay(&g, TRACES_DIR "/mixed_syscalls.trace");
    wait_closed(&g, 1);
    for (int i = 0; i < 300 && q(&g, "SELECT count(*) FROM events") < MIXED_EVENTS; i++)
        sleep_ms(10);
    assert_int_equal(q(&g, "SELECT count(*) FROM alerts WHERE rule = 'Mallory acts'"), 0);
    assert_true(q(&g, "SELECT count(*) FROM alerts WHERE rule = 'Open in shop'") > 100);
    assert_int_equal(q(&g, "SELECT count(*) FROM container_info WHERE name = 'evil' || char(27) || '[2J' || "
                           "char(10) || 'name\"quote' AND users = 0"), 1);
    char *lines = alert_lines(&g);
    assert_non_null(strstr(lines, "\"container.name\":\"evil\\u001b[2J\\nname\\\"quote\""));
    free(lines);
    char out[16384];
    const char *containers[] = {SECCHECKD_BIN, "containers", "--db", g.d.db, NULL};
    run(containers, out, sizeof(out));
    assert_null(strchr(out, '\x1b'));   /* the terminal is not told to clear itself */
    assert_non_null(strstr(out, "evil"));
    assert_int_equal(daemon_stop(&g.d), 0);
}

/* --runsc-root none turns lookups off; a root that cannot be read is named
 * with the reason at start. */
static void test_roots_said_at_start(void **state)
{
    (void)state;
    struct fixture f;
    setup_dirs(&f);
    const char *off[] = {"--runsc-root", "none", NULL};
    assert_true(daemon_start(&f.d, SECCHECKD_BIN, off));
    assert_int_equal(daemon_stop(&f.d), 0);
    assert_int_equal(daemon_log_count(&f.d, "--runsc-root none: container, pod and user names are not looked up"), 1);
    struct fixture g;
    setup_dirs(&g);
    char missing[512];
    snprintf(missing, sizeof(missing), "%s/not-there", g.d.dir);
    const char *args[] = {"--runsc-root", missing, NULL};
    assert_true(daemon_start(&g.d, SECCHECKD_BIN, args));
    replay(&g, TRACES_DIR "/exec_loop.trace");
    wait_closed(&g, 1);
    assert_int_equal(daemon_stop(&g.d), 0);
    assert_int_equal(daemon_log_count(&g.d, "not-there (--runsc-root): No such file or directory"), 1);
    assert_int_equal(q(&g, "SELECT count(*) FROM events"), EXEC_LOOP_EVENTS);
    struct fixture h;
    setup_dirs(&h);
    const char *relative[] = {"--runsc-root", "relative/dir", NULL};
    assert_false(daemon_start(&h.d, SECCHECKD_BIN, relative));
    assert_int_equal(daemon_log_count(&h.d, "--runsc-root: expected the absolute path"), 1);
}

/* Falco's own rules files (tests/fixtures/falco_rules, falcosecurity/rules
 * c72713ee2e) name these fields in 61 places (falco_rules.yaml: user.name
 * 27, user.loginuid 25, container.image.repository 9...): none is an
 * unknown field any more. Before this change `rules check` named each. */
static void test_falco_rules_know_the_fields(void **state)
{
    (void)state;
    static const char *const files[] = {"falco_rules.yaml", "falco-incubating_rules.yaml", "falco-sandbox_rules.yaml"};
    static const char *const fields[] = {
        "container.full_id", "container.name", "container.image", "container.image.repository",
        "container.image.tag", "container.type", "container.privileged", "container.start_ts", "container.duration",
        "k8s.pod.name", "k8s.ns.name", "k8s.pod.id", "k8s.pod.uid", "k8s.pod.sandbox_id", "k8s.pod.full_sandbox_id",
        "user.name", "user.homedir", "user.shell", "user.loginuid", "user.loginname", "group.name",
        "container.mounts", "container.mount", "container.mount.source", "container.mount.dest",
        "container.mount.mode", "container.mount.rdwr", "container.mount.propagation"};
    static char out[1 << 20], err[1 << 20];
    size_t named = 0;
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s/../falco_rules/%s", TRACES_DIR, files[i]);
        const char *argv[] = {SECCHECKD_BIN, "rules", "check", path, NULL};
        run_command(argv, out, sizeof(out), err, sizeof(err));   /* exit 2: other fields are still unknown */
        for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
            char needle[128];
            snprintf(needle, sizeof(needle), "unknown field '%s'", fields[k]);
            if (strstr(err, needle) || strstr(out, needle))
                fail_msg("%s: %s", files[i], needle);
        }
        FILE *fp = fopen(path, "r");
        assert_non_null(fp);
        char line[8192];
        while (fgets(line, sizeof(line), fp))
            named += strstr(line, "user.name") || strstr(line, "k8s.ns.name") || strstr(line, "container.image.repository");
        fclose(fp);
    }
    assert_true(named > 30);   /* the files do use them */
}

/* falco-sandbox_rules.yaml loads unchanged beside falco_rules.yaml, as
 * Falco loads them: its "Launch Sensitive Mount Container" names
 * container.mount.dest[PATH] twelve times (macro sensitive_mount) and
 * prints %container.mounts. Before the mount fields `rules check` stopped
 * at 13 errors (unknown field 'container.mount.dest', 'container.mounts'). */
static void test_falco_sandbox_rules_load(void **state)
{
    (void)state;
    static char out[1 << 20], err[1 << 20];
    char main_file[512], sandbox[512];
    snprintf(main_file, sizeof(main_file), "%s/../falco_rules/falco_rules.yaml", TRACES_DIR);
    snprintf(sandbox, sizeof(sandbox), "%s/../falco_rules/falco-sandbox_rules.yaml", TRACES_DIR);
    const char *argv[] = {SECCHECKD_BIN, "rules", "check", main_file, sandbox, NULL};
    int rc = run_command(argv, out, sizeof(out), err, sizeof(err));
    if (rc != 0)
        fail_msg("rules check exited %d: %s", rc, err);
    assert_null(strstr(err, "error:"));
    assert_null(strstr(out, "unknown field"));
    /* the rule is there and enabled: indexed for the exec that starts a container */
    assert_non_null(strstr(out, "  Launch Sensitive Mount Container [Informational]: execve,execveat\n"));
    FILE *fp = fopen(sandbox, "r");
    assert_non_null(fp);
    char line[8192];
    size_t named = 0;
    while (fgets(line, sizeof(line), fp))
        named += strstr(line, "container.mount.dest[") != NULL || strstr(line, "%container.mounts") != NULL;
    fclose(fp);
    assert_int_equal(named, 13);   /* the file does use them */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_from_runsc_state),
        cmocka_unit_test(test_hostile_state_and_passwd),
        cmocka_unit_test(test_roots_said_at_start),
        cmocka_unit_test(test_falco_rules_know_the_fields),
        cmocka_unit_test(test_falco_sandbox_rules_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
