#include "gvisor_config.h"

#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "docker_runtime.h"
#include "runsc_toml.h"
#include "json.h"
#include "rules.h"
#include "runsc_target.h"
#include "strbuf.h"

/* The points of the exec group with the optional fields worth collecting
 * there. Names as in `runsc trace metadata` (runsc 2022-12 and current
 * gVisor; a target without some keeps the rest). The binary's hashes are
 * left out: runsc reads the whole file for them. */
static const struct {
    const char *name;
    unsigned optional;
} exec_points[] = {
    {"container/start", RULES_OPT_ENV},
    {"sentry/clone", 0},
    {"sentry/execve", RULES_OPT_BINARY_INFO | RULES_OPT_FD_INFO | RULES_OPT_PIPE_PROC_INFO},
    {"sentry/exit_notify_parent", 0},
    {"sentry/task_exit", 0},
    {"syscall/execve/enter", RULES_OPT_ENVV},
    {"syscall/execve/exit", RULES_OPT_ENVV},
    {"syscall/execveat/enter", RULES_OPT_FD_PATH | RULES_OPT_ENVV},
    {"syscall/execveat/exit", RULES_OPT_FD_PATH | RULES_OPT_ENVV},
};

/* Files: opening, closing and where processes are (reads and writes are
 * left out: they are the bulk of any workload). Enter and exit of each. */
static const char *const file_syscalls[] = {"open", "openat", "creat", "close", "chdir", "fchdir", "chroot",
                                            "dup", "dup2", "dup3", "fcntl", "inotify_add_watch"};
static const char *const net_syscalls[] = {"socket", "socketpair", "connect", "bind", "accept", "accept4"};

static int out_of_memory(void)
{
    fprintf(stderr, "seccheckd gvisor-config: out of memory\n");
    return 1;
}

/* Enter and exit of each, with every optional field they offer. */
static int add_syscalls(struct rules_needs *out, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (int exit = 0; exit < 2; exit++) {
            char point[RULES_POINT_MAX];
            snprintf(point, sizeof(point), "syscall/%s/%s", names[i], exit ? "exit" : "enter");
            if (rules_needs_add(out, point, rules_point_optional(point), RULES_CTX_ALL, RULES_WHY_MATCHES) != 0)
                return -1;
        }
    return 0;
}

/* The groups' points, every context field (the target's). 0, or 1 out of
 * memory (said). */
static int add_groups(struct rules_needs *out, bool exec, bool files, bool net)
{
    int rc = 0;
    for (size_t i = 0; exec && i < sizeof(exec_points) / sizeof(exec_points[0]); i++)
        rc |= rules_needs_add(out, exec_points[i].name, exec_points[i].optional, RULES_CTX_ALL, RULES_WHY_MATCHES);
    if (files)
        rc |= add_syscalls(out, file_syscalls, sizeof(file_syscalls) / sizeof(file_syscalls[0]));
    if (net)
        rc |= add_syscalls(out, net_syscalls, sizeof(net_syscalls) / sizeof(net_syscalls[0]));
    return rc ? out_of_memory() : 0;
}

/* The context every point the rules enable carries, whatever the rules
 * read of it: what the readers ask of each stored event (its container,
 * time and process; issue 31 item 6). Without it the points kept for the
 * process table alone (close, task exit, clone...) were stored without
 * container or time: 77% of a Falco-rules database that containers,
 * events --container and alerts show could not place. 35 bytes more per
 * event on the wire, 75 in the database, no sandbox CPU that shows against
 * the ~9 us of sending the event at all (docs/design.md "What a stored
 * event costs"). runsc 2022-12 has all three. */
#define READERS_CONTEXT (RULES_CTX_TIME | RULES_CTX_CONTAINER_ID | RULES_CTX_PROCESS_NAME)

/* What every enabled rule of the files needs, on target; a warning for
 * each part of what a condition reads that target lacks (the rule loads
 * all the same, and misses what it is not sent). 0, 2 when they do not load (errors printed), 1 out of
 * memory (said). */
static int add_rules(struct rules_needs *out, const char *const *paths, size_t n, const struct runsc_target *target)
{
    struct rules_diag diag = {0};
    char err[512];
    /* the daemon's default append_output: its fields need their context fields too */
    struct rules_append_output *ao = rules_append_output_load(RULES_APPEND_OUTPUT_DEFAULT, err, sizeof(err));
    if (!ao) {
        fprintf(stderr, "seccheckd gvisor-config: %s\n", err);
        return 1;
    }
    rules_set_append_output(ao);
    struct rule_set *rs = rule_set_load(paths, n, &diag);
    rules_diag_print(&diag, stderr);
    rules_diag_free(&diag);
    if (!rs) {
        fprintf(stderr, "seccheckd gvisor-config: the rules have errors: no config written\n");
        return 2;
    }
    int rc = 0;
    size_t short_rules = 0;
    size_t nrules = rule_set_rule_count(rs), nseq = rule_set_sequence_count(rs);
    for (size_t i = 0; i < nrules + nseq && rc == 0; i++) {   /* the rules, then the sequences' steps */
        struct rules_needs need = {0}, cond = {0};
        const char *file, *name;
        unsigned line;
        if (i < nrules) {
            rc = rule_set_rule_needs_on(rs, i, target, RULES_NEED_ALL, &need);
            if (rc == 0)
                rc = rule_set_rule_needs_on(rs, i, target, RULES_NEED_CONDITION, &cond);
            struct rule_info info;
            rule_set_rule_info(rs, i, &info);
            file = info.file, line = info.line, name = info.name;
        } else {
            rc = rule_set_sequence_needs_on(rs, i - nrules, target, RULES_NEED_ALL, &need);
            struct sequence_info info;
            rule_set_sequence_info(rs, i - nrules, &info);
            file = info.file, line = info.line, name = info.name;
        }
        if (rc == 0) {
            bool is_sequence = i >= nrules;
            short_rules += runsc_target_warn(target, file, line, is_sequence, name, is_sequence ? &need : &cond,
                                             stderr) > 0;
            for (size_t k = 0; k < need.count && rc == 0; k++)
                rc = rules_needs_add(out, need.items[k].point, need.items[k].optional,
                                     need.items[k].context | READERS_CONTEXT, need.items[k].why);
        }
        rules_needs_free(&need);
        rules_needs_free(&cond);
    }
    if (rc == 0 && short_rules)
        fprintf(stderr, "seccheckd gvisor-config: %zu rule%s need%s more than %s sends: the config enables what it "
                "has (a newer runsc: --runsc PATH)\n", short_rules, cli_plural(short_rules),
                short_rules == 1 ? "s" : "", target->label);
    rule_set_free(rs);
    return rc ? out_of_memory() : 0;
}

/* ["a", "b"] of the bits set, named by name(i). */
static void put_names(struct strbuf *out, unsigned bits, const char *(*name)(unsigned))
{
    strbuf_putc(out, '[');
    bool first = true;
    for (unsigned i = 0; name(i); i++)
        if (bits >> i & 1) {
            strbuf_printf(out, "%s\"%s\"", first ? "" : ", ", name(i));
            first = false;
        }
    strbuf_putc(out, ']');
}

/* The pod-init config's JSON text into out. */
static void render_config(struct strbuf *out, const struct rules_needs *points, const char *socket, long retries)
{
    strbuf_puts(out, "{\"trace_session\": {\n  \"name\": \"Default\",\n  \"points\": [");
    for (size_t i = 0; i < points->count; i++) {
        const struct rules_need *p = &points->items[i];
        strbuf_printf(out, "%s\n    {\"name\": \"%s\"", i ? "," : "", p->point);
        if (p->optional) {
            strbuf_puts(out, ", \"optional_fields\": ");
            put_names(out, p->optional, rules_optional_name);
        }
        strbuf_puts(out, ", \"context_fields\": ");
        put_names(out, p->context, rules_context_name);
        strbuf_putc(out, '}');
    }
    strbuf_puts(out, "\n  ],\n  \"sinks\": [{\"name\": \"remote\", \"config\": {\"endpoint\": ");
    json_render_string(out, socket, strlen(socket));
    if (retries)
        strbuf_printf(out, ", \"retries\": %ld", retries);
    strbuf_puts(out, "}}]\n}}\n");
}

static void usage(FILE *out)
{
    fprintf(out, "Usage: seccheckd gvisor-config [--points exec|files|net|all[,...]] [--rules PATH...]\n"
                 "                                [--runsc PATH | --runsc-metadata FILE]\n"
                 "                                [--socket PATH] [--retries N]\n"
                 "                                [--docker-runtime NAME [--docker-config FILE] | --runsc-toml FILE]\n"
                 "Prints a runsc pod-init config (runsc --pod-init-config=FILE) that traces the chosen\n"
                 "points to seccheckd's socket, with only the points and fields the target runsc has\n"
                 "(runsc refuses one it does not know, and the sandbox does not start).\n"
                 "  --points GROUPS  exec: container start, clone, exec, exit; files: open, close, chdir,\n"
                 "                   dup, fcntl...; net: socket, connect, bind, accept; all\n"
                 "                   [exec, unless --rules is given]\n"
                 "  --rules PATH...  exactly the points, optional and context fields the enabled rules of\n"
                 "                   these rules files (or directories) read (with --points: both); a\n"
                 "                   warning names each rule that needs more than the target sends\n"
                 "  --runsc PATH     the runsc the config is for: asks it (`runsc trace metadata`);\n"
                 "                   2022-12: runsc 0.0~20221219 (Debian 12), built in\n"
                 "                   [runsc in PATH, else 2022-12]\n"
                 "  --runsc-metadata FILE\n"
                 "                   what `runsc trace metadata` printed, saved (a runsc elsewhere)\n"
                 "  --socket PATH    seccheckd's socket [/tmp/seccheck.sock]\n"
                 "  --retries N      times the sandbox retries a full socket before dropping [0]\n"
                 "  --docker-runtime NAME\n"
                 "                   instead of printing it, write the config as NAME-pod-init.json beside\n"
                 "                   Docker's daemon.json and register runsc there as the runtime NAME\n"
                 "                   (runtimes.NAME: path, runtimeArgs with --pod-init-config; the file's\n"
                 "                   other keys and the entry's other arguments are kept); then reload\n"
                 "                   dockerd and run containers with docker run --runtime=NAME\n"
                 "  --docker-config FILE\n"
                 "                   the daemon.json to change [/etc/docker/daemon.json]\n"
                 "  --runsc-toml FILE\n"
                 "                   instead of printing it, write the config as " RUNSC_TOML_POD_INIT_NAME " beside\n"
                 "                   containerd's runsc.toml FILE (ConfigPath; GKE Sandbox:\n"
                 "                   /run/containerd/runsc/config.toml) and set pod-init-config in its\n"
                 "                   [runsc_config]; every other line is kept, another pod-init-config\n"
                 "                   is refused (not clobbered); new pods' sandboxes use it\n");
}

/* --runsc-toml: the config written beside runsc.toml, pod-init-config set in it, the next step said. */
static int install_runsc_toml(const struct strbuf *config, const char *toml, const char *socket)
{
    char err[2048];
    struct runsc_toml_result res;
    if (runsc_toml_install(toml, config->data, config->len, &res, err, sizeof(err)) != 0) {
        fprintf(stderr, "seccheckd gvisor-config: --runsc-toml %s\n", err);
        return 1;
    }
    printf("wrote %s (the pod-init config: runsc streams to %s)\n", res.pod_init_path, socket);
    printf("%s: [runsc_config] pod-init-config = \"%s\"%s\n", res.toml_path, res.pod_init_path,
           res.changed ? " (added; its other lines kept)" : " already: not changed");
    printf("containerd's runsc shim reads it for each new pod: pods started from now on stream to seccheckd,\n"
           "running ones keep the config they started with; seccheckd must listen on %s first\n", socket);
    return 0;
}

/* The runtime's path in daemon.json: --runsc PATH as an absolute path, else runsc in PATH, else Debian's. */
static const char *docker_runsc_path(const char *runsc, char *buf, size_t buflen)
{
    if (runsc && strcmp(runsc, "2022-12") != 0) {
        if (strchr(runsc, '/'))
            return realpath(runsc, buf) ? buf : runsc;
        if (runsc_target_find_in_path(buf, buflen))
            return buf;
    }
    return runsc_target_find_in_path(buf, buflen) ? buf : "/usr/bin/runsc";
}

/* --docker-runtime: the config written beside daemon.json, the runtime merged into it, the next steps said. */
static int install_docker_runtime(const struct strbuf *config, const char *name, const char *docker_config,
                                  const char *runsc, const char *socket)
{
    char runsc_buf[4096], err[2048];
    const char *runsc_path = docker_runsc_path(runsc, runsc_buf, sizeof(runsc_buf));
    struct docker_runtime_result res;
    if (docker_runtime_install(docker_config, name, runsc_path, config->data, config->len, &res, err,
                               sizeof(err)) != 0) {
        fprintf(stderr, "seccheckd gvisor-config: --docker-config %s\n", err);
        return 1;
    }
    printf("wrote %s (the pod-init config: runsc streams to %s)\n", res.pod_init_path, socket);
    if (res.changed)
        printf("%s: runtimes.%s runs %s with --pod-init-config=%s (its other keys kept)\n", res.config_path, name,
               res.runtime_path, res.pod_init_path);
    else
        printf("%s: runtimes.%s already says so: not changed\n", res.config_path, name);
    printf("next:\n"
           "  1. seccheckd listening on %s before any container starts (runsc refuses to start a\n"
           "     sandbox whose remote sink does not answer)\n"
           "  2. dockerd reads its runtimes again on SIGHUP: systemctl reload docker (or\n"
           "     kill -HUP $(cat /var/run/docker.pid)); a new runtime needs no restart\n"
           "  3. docker run --runtime=%s IMAGE ...\n"
           "  seccheckd reads the containers' names from runsc's state in %s/runtime-runc/moby\n"
           "  (--runsc-root) and from Docker's API (--docker-socket %s)\n",
           socket, name, res.exec_root[0] ? res.exec_root : "/var/run/docker",
           res.host_socket[0] ? res.host_socket : "/var/run/docker.sock");
    return 0;
}

/* Parses "exec,net" into flags; false on an unknown group. */
static bool parse_groups(const char *list, bool *exec, bool *files, bool *net)
{
    char *copy = strdup(list), *save = NULL;
    bool ok = true;
    for (char *tok = strtok_r(copy, ",", &save); tok && ok; tok = strtok_r(NULL, ",", &save)) {
        bool all = strcmp(tok, "all") == 0;
        if (all || strcmp(tok, "exec") == 0)
            *exec = true;
        if (all || strcmp(tok, "files") == 0)
            *files = true;
        if (all || strcmp(tok, "net") == 0)
            *net = true;
        ok = all || strcmp(tok, "exec") == 0 || strcmp(tok, "files") == 0 || strcmp(tok, "net") == 0;
    }
    free(copy);
    return ok && (*exec || *files || *net);
}

enum { HELP_SHOWN = -3 };

int gvisor_config_main(int argc, char **argv)
{
    static const struct option opts[] = {{"points", required_argument, NULL, 'p'},
                                         {"rules", required_argument, NULL, 'R'},
                                         {"runsc", required_argument, NULL, 'n'},
                                         {"runsc-metadata", required_argument, NULL, 'm'},
                                         {"socket", required_argument, NULL, 's'},
                                         {"retries", required_argument, NULL, 'r'},
                                         {"docker-runtime", required_argument, NULL, 'D'},
                                         {"docker-config", required_argument, NULL, 'C'},
                                         {"runsc-toml", required_argument, NULL, 'T'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *points = NULL, *socket = "/tmp/seccheck.sock", *runsc = NULL, *metadata = NULL;
    const char *docker_runtime = NULL, *docker_config = NULL, *runsc_toml = NULL;
    const char **rules = calloc((size_t)argc + 1, sizeof(*rules));
    size_t nrules = 0;
    long retries = 0;
    int ch, rc = 0;
    if (!rules)
        return out_of_memory();
    optind = 0;   /* a fresh getopt scan, whatever ran before */
    opterr = 0;
    while (rc == 0 && (ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", opts, NULL)) != -1) {
        char *end;
        switch (ch) {
        case 'p': points = optarg; break;
        case 'R': rules[nrules++] = optarg; break;
        case 'n': runsc = optarg; break;
        case 'm': metadata = optarg; break;
        case 's': socket = optarg; break;
        case 'D': docker_runtime = optarg; break;
        case 'C': docker_config = optarg; break;
        case 'T': runsc_toml = optarg; break;
        case 'r':
            retries = strtol(optarg, &end, 10);
            if (end == optarg || *end || retries < 0 || retries > 1000) {
                fprintf(stderr, "seccheckd gvisor-config: --retries: expected 0 to 1000, got '%s'\n", optarg);
                rc = 2;
            }
            break;
        case 'h': usage(stdout); rc = HELP_SHOWN; break;
        default: cli_report_getopt_error("seccheckd gvisor-config", ch, argv); rc = 2; break;
        }
    }
    /* --rules A B C: the paths after the first one */
    while (rc == 0 && nrules && optind < argc)
        rules[nrules++] = argv[optind++];
    bool exec = false, files = false, net = false;
    const char *groups = points ? points : nrules ? NULL : "exec";
    if (rc == 0 && (optind < argc || (groups && !parse_groups(groups, &exec, &files, &net)))) {
        fprintf(stderr, "seccheckd gvisor-config: --points: expected exec, files, net or all (comma-separated), "
                        "got '%s'\n", optind < argc ? argv[optind] : groups);
        rc = 2;
    }
    if (rc == 0 && docker_config && !docker_runtime) {
        fprintf(stderr, "seccheckd gvisor-config: --docker-config names the daemon.json --docker-runtime NAME "
                        "changes: give --docker-runtime too\n");
        rc = 2;
    }
    if (rc == 0 && docker_runtime && runsc_toml) {
        fprintf(stderr, "seccheckd gvisor-config: --docker-runtime and --runsc-toml both say where the config goes: "
                        "give one\n");
        rc = 2;
    }
    if (rc == 0 && (docker_runtime || runsc_toml) && socket[0] != '/') {
        fprintf(stderr, "seccheckd gvisor-config: --socket: runsc, started by the container runtime, needs an "
                        "absolute path, got '%s'\n", socket);
        rc = 2;
    }
    if (rc == 0 && runsc && metadata) {
        fprintf(stderr, "seccheckd gvisor-config: --runsc and --runsc-metadata both name the target: give one\n");
        rc = 2;
    }
    struct runsc_target target = {0};
    char err[512];
    if (rc == 0 && runsc_target_resolve(&target, runsc, metadata, err, sizeof(err)) != 0) {
        fprintf(stderr, "seccheckd gvisor-config: %s (--runsc 2022-12 writes a config for runsc 0.0~20221219)\n",
                err);
        rc = 1;
    }
    struct rules_needs needs = {0}, kept = {0};
    if (rc == 0)
        rc = add_groups(&needs, exec, files, net);
    if (rc == 0 && nrules)
        rc = add_rules(&needs, rules, nrules, &target);
    if (rc == 0 && runsc_target_keep(&target, &needs, &kept) != 0)
        rc = out_of_memory();
    struct strbuf config = {0};
    if (rc == 0)
        render_config(&config, &kept, socket, retries);
    if (rc == 0 && docker_runtime)
        rc = install_docker_runtime(&config, docker_runtime, docker_config ? docker_config : "/etc/docker/daemon.json",
                                    runsc, socket);
    else if (rc == 0 && runsc_toml)
        rc = install_runsc_toml(&config, runsc_toml, socket);
    else if (rc == 0)
        fwrite(config.data, 1, config.len, stdout);
    strbuf_free(&config);
    rules_needs_free(&needs);
    rules_needs_free(&kept);
    runsc_target_free(&target);
    free(rules);
    return rc == HELP_SHOWN ? 0 : rc;
}
