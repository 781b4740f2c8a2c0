#include "gvisor_config.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "strbuf.h"

/* A point and the optional fields worth collecting with it. Names as in
 * `runsc trace metadata` (runsc 2022-12 and current gVisor). */
struct point {
    const char *name;
    const char *optional;   /* JSON array contents, or NULL */
};

static const struct point exec_points[] = {
    {"container/start", "\"env\""},
    {"sentry/clone", NULL},
    {"sentry/execve", "\"binary_info\""},
    {"sentry/exit_notify_parent", NULL},
    {"sentry/task_exit", NULL},
    {"syscall/execve/enter", "\"envv\""},
    {"syscall/execve/exit", "\"envv\""},
    {"syscall/execveat/enter", "\"fd_path\", \"envv\""},
    {"syscall/execveat/exit", "\"fd_path\", \"envv\""},
};

/* Files: opening, closing and where processes are (reads and writes are
 * left out: they are the bulk of any workload). Enter and exit of each. */
static const char *const file_syscalls[] = {"open", "openat", "creat", "close", "chdir", "fchdir", "chroot",
                                            "dup", "dup2", "dup3", "fcntl", "inotify_add_watch"};
static const char *const net_syscalls[] = {"socket", "socketpair", "connect", "bind", "accept", "accept4"};

/* Which of those take fd_path (from `runsc trace metadata`). */
static bool has_fd_path(const char *syscall)
{
    static const char *const without[] = {"open", "chdir", "chroot", "socket", "socketpair"};
    for (size_t i = 0; i < sizeof(without) / sizeof(without[0]); i++)
        if (strcmp(without[i], syscall) == 0)
            return false;
    return true;
}

static const char context_fields[] =
    "\"time\", \"thread_id\", \"task_start_time\", \"group_id\", \"thread_group_start_time\", \"container_id\", "
    "\"credentials\", \"cwd\", \"process_name\"";

static void add_point(struct strbuf *out, bool *first, const char *name, const char *optional)
{
    strbuf_printf(out, "%s\n    {\"name\": \"%s\"", *first ? "" : ",", name);
    if (optional)
        strbuf_printf(out, ", \"optional_fields\": [%s]", optional);
    strbuf_printf(out, ", \"context_fields\": [%s]}", context_fields);
    *first = false;
}

static void add_syscalls(struct strbuf *out, bool *first, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (int exit = 0; exit < 2; exit++) {
            char point[64];
            snprintf(point, sizeof(point), "syscall/%s/%s", names[i], exit ? "exit" : "enter");
            add_point(out, first, point, has_fd_path(names[i]) ? "\"fd_path\"" : NULL);
        }
}

static void usage(FILE *out)
{
    fprintf(out, "Usage: seccheckd gvisor-config [--points exec|files|net|all[,...]] [--socket PATH] [--retries N]\n"
                 "Prints a runsc pod-init config (runsc --pod-init-config=FILE) that traces the chosen\n"
                 "points to seccheckd's socket.\n"
                 "  --points GROUPS  exec: container start, clone, exec, exit; files: open, close, chdir,\n"
                 "                   dup, fcntl...; net: socket, connect, bind, accept; all [exec]\n"
                 "  --socket PATH    seccheckd's socket [/tmp/seccheck.sock]\n"
                 "  --retries N      times the sandbox retries a full socket before dropping [0]\n");
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

int gvisor_config_main(int argc, char **argv)
{
    static const struct option opts[] = {{"points", required_argument, NULL, 'p'},
                                         {"socket", required_argument, NULL, 's'},
                                         {"retries", required_argument, NULL, 'r'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *points = "exec", *socket = "/tmp/seccheck.sock";
    long retries = 0;
    int ch;
    optind = 0;   /* a fresh getopt scan, whatever ran before */
    opterr = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", opts, NULL)) != -1) {
        char *end;
        switch (ch) {
        case 'p': points = optarg; break;
        case 's': socket = optarg; break;
        case 'r':
            retries = strtol(optarg, &end, 10);
            if (end == optarg || *end || retries < 0 || retries > 1000) {
                fprintf(stderr, "seccheckd gvisor-config: --retries: expected 0 to 1000, got '%s'\n", optarg);
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default: cli_report_getopt_error("seccheckd gvisor-config", ch, argv); return 2;
        }
    }
    bool exec = false, files = false, net = false;
    if (optind < argc || !parse_groups(points, &exec, &files, &net)) {
        fprintf(stderr, "seccheckd gvisor-config: --points: expected exec, files, net or all (comma-separated), "
                        "got '%s'\n", optind < argc ? argv[optind] : points);
        return 2;
    }
    struct strbuf out = {0};
    bool first = true;
    strbuf_puts(&out, "{\"trace_session\": {\n  \"name\": \"Default\",\n  \"points\": [");
    for (size_t i = 0; exec && i < sizeof(exec_points) / sizeof(exec_points[0]); i++)
        add_point(&out, &first, exec_points[i].name, exec_points[i].optional);
    if (files)
        add_syscalls(&out, &first, file_syscalls, sizeof(file_syscalls) / sizeof(file_syscalls[0]));
    if (net)
        add_syscalls(&out, &first, net_syscalls, sizeof(net_syscalls) / sizeof(net_syscalls[0]));
    strbuf_puts(&out, "\n  ],\n  \"sinks\": [{\"name\": \"remote\", \"config\": {\"endpoint\": ");
    json_render_string(&out, socket, strlen(socket));
    if (retries)
        strbuf_printf(&out, ", \"retries\": %ld", retries);
    strbuf_puts(&out, "}}]\n}}\n");
    fwrite(out.data, 1, out.len, stdout);
    strbuf_free(&out);
    return 0;
}
