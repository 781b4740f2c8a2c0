/* options.h - every seccheckd setting, from the command line or a config
 * file, described once in a table (options.c) that also writes --help.
 *
 * A config file holds `name = value` lines with the long option names
 * (`socket = /run/seccheck.sock`). A '#' at the start of a line or after
 * whitespace starts a comment; elsewhere it belongs to the value. A value
 * in double quotes is taken whole, with \" and \\ for a quote and a
 * backslash (`keep-containers = "a #1"`). Command-line options override
 * the file. SIGHUP re-reads it: the settings marked reloadable apply at
 * once, the others at the next restart (SIGUSR2). --config-if-exists names
 * a file that may be missing (a service's optional configuration).
 */
#ifndef SECCHECKD_OPTIONS_H
#define SECCHECKD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ingest_filter.h"
#include "server.h"

enum options_color { OPTIONS_COLOR_AUTO, OPTIONS_COLOR_ALWAYS, OPTIONS_COLOR_NEVER };

struct options {
    struct server_config server;
    char *sink;                 /* comma list of sqlite, discard, record, ndjson, text */
    char *db_path;
    char *record_dir;
    char *key_file;
    uint64_t busy_timeout_ms;
    char *config_path;
    char *config_if_exists;     /* --config-if-exists: no file, no settings */
    char *ndjson_path;          /* "-": standard output */
    uint64_t ndjson_max_bytes;  /* rotate past this size; 0: never */
    uint64_t ndjson_keep;       /* rotated files kept */
    char *text_path;            /* "-": standard output */
    char *metrics_listen;       /* NULL: no metrics endpoint */
    uint64_t retain_s;          /* reloadable; 0: keep forever */
    uint64_t max_db_bytes;      /* reloadable; 0: no limit */
    unsigned indexes;           /* enum event_index bits (event_indexes.h) */
    char *keep_types, *drop_types;              /* reloadable */
    char *keep_containers, *drop_containers;    /* reloadable */
    int log_level;                              /* reloadable */
    char *rules;                /* reloadable: rules files and directories, one per line; NULL: no rules */
    bool rules_none;            /* --rules none: no rules, whatever --default-rules says */
    char *default_rules;        /* --default-rules: the rules when none are given (the systemd unit's) */
    bool rules_absent_run;      /* reloadable: run rules needing fields gVisor never reports (rules.h) */
    char *append_output;        /* reloadable: Falco's append_output (rules.h): suggested, none or a YAML file;
                                 * NULL: suggested */
    char *alerts_out;           /* Falco JSON lines ("-": stdout), "none"; NULL: text lines on stdout */
    enum options_color color;   /* the text lines' colour */
    uint64_t alerts_max_bytes;  /* rotate past this size; 0: never */
    uint64_t sequence_memory;   /* sequences' partial matches, all connections, in bytes */
    uint64_t sequence_partials; /* ... per sequence and connection */
    uint64_t alerts_keep;       /* rotated files kept */
    int rule_matching;          /* enum rules_matching: first or all */
    double alerts_rate;         /* alerts per second per rule and connection; 0: no per-rule limit */
    uint64_t alerts_burst;
    double alerts_ceiling;      /* alerts per second per connection, every rule; 0: no ceiling */
    uint64_t alerts_ceiling_burst;
    uint64_t max_processes;     /* process table entries, all connections */
    bool drop_alerts_off;       /* --syscall-event-drops ignore: no RULES_DROP_RULE alerts */
    double drop_threshold, drop_rate;   /* --syscall-event-drops-threshold, -rate (rules.h) */
    uint64_t drop_burst;        /* --syscall-event-drops-max-burst */
    char *alerts_url;           /* reloadable: where alerts are POSTed (deliver.h); NULL: nowhere */
    char *alerts_url_file;      /* reloadable: a file holding that URL instead (out of ps and config files) */
    char *alerts_ca;            /* reloadable: PEM CAs for an https receiver; NULL: the system's */
    char *alerts_header_file;   /* reloadable: extra "Name: value" headers */
    uint64_t alerts_timeout_ms; /* reloadable: one request, in all */
    uint64_t alerts_queue;      /* alerts held in memory without the sqlite sink */
    char *runsc_roots;          /* --runsc-root directories, one per line; NULL: the usual ones that exist */
    char *docker_socket;        /* Docker's API socket; NULL: /var/run/docker.sock when it exists; "none": off */
};

/* Defaults, with every string owned by o. */
void options_init(struct options *o);
void options_free(struct options *o);

/* Applies argv; 0, or 2 for a usage error (message printed). --help and
 * --version print and exit. */
int options_parse_argv(struct options *o, int argc, char **argv);

/* Applies a config file; 0, or -1 with "FILE:LINE: problem" in err. */
int options_load_file(struct options *o, const char *path, char *err, size_t errlen);

/* The whole start-up sequence: defaults, --config file, then argv. */
int options_load(struct options *o, int argc, char **argv);

void options_usage(FILE *out);

/* --help prints usage(out) instead of options_usage (NULL: that again). */
void options_set_help(void (*usage)(FILE *out));

/* "0.1.0" */
const char *options_version(void);

/* The event filter the options describe; -1 with err if they conflict. */
int options_build_filter(const struct options *o, struct filter *f, char *err, size_t errlen);

/* The --rules paths, in order, into paths (at most max): they point into
 * *copy, a copy of the list the caller frees. */
size_t options_rules_paths(const struct options *o, char **copy, const char **paths, size_t max);
#define OPTIONS_RULES_MAX 64

/* The --runsc-root directories, as options_rules_paths gives the rules'
 * ("none": looking up container names is off). */
size_t options_runsc_roots(const struct options *o, char **copy, const char **paths, size_t max);

/* Names (comma-separated, into out) of the settings that differ between two
 * option sets, among the reloadable ones or among the others. */
void options_diff(const struct options *running, const struct options *fresh, bool reloadable, char *out,
                  size_t outlen);

#endif
