#include "ingest_filter.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "decode.h"

/* A name from the MessageType enum without MESSAGE_ (SYSCALL_OPEN), or a
 * number. */
static int type_number(const char *tok, uint16_t *out)
{
    for (unsigned t = 1; t <= DECODE_TYPE_MAX; t++) {
        const char *name = decode_type_name((uint16_t)t);
        if (name && strcasecmp(name, tok) == 0) {
            *out = (uint16_t)t;
            return 0;
        }
    }
    char *end;
    unsigned long v = strtoul(tok, &end, 10);
    if (end == tok || *end || v > 65535)
        return -1;
    *out = (uint16_t)v;
    return 0;
}

int filter_set_types(struct filter *f, enum filter_mode mode, const char *list, char *err, size_t errlen)
{
    uint64_t bits[65536 / 64] = {0};
    char *copy = strdup(list), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        uint16_t t;
        if (type_number(tok, &t) != 0) {
            snprintf(err, errlen, "unknown message type '%s' (use names like SYSCALL_OPEN or numbers)", tok);
            rc = -1;
            break;
        }
        bits[t / 64] |= (uint64_t)1 << (t % 64);
    }
    free(copy);
    if (rc == 0) {
        memcpy(f->types, bits, sizeof(bits));
        f->types_mode = mode;
    }
    return rc;
}

static void clear_containers(struct filter *f)
{
    for (size_t i = 0; i < f->ncontainers; i++)
        free(f->containers[i]);
    f->ncontainers = 0;
    f->containers_mode = FILTER_OFF;
}

int filter_set_containers(struct filter *f, enum filter_mode mode, const char *list, char *err, size_t errlen)
{
    clear_containers(f);
    char *copy = strdup(list), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        if (f->ncontainers == FILTER_MAX_CONTAINERS) {
            snprintf(err, errlen, "at most %d container ids", FILTER_MAX_CONTAINERS);
            rc = -1;
            break;
        }
        f->containers[f->ncontainers++] = strdup(tok);
    }
    free(copy);
    if (rc != 0)
        clear_containers(f);
    else
        f->containers_mode = mode;
    return rc;
}

int filter_types_main(int argc, char **argv)
{
    static const struct option options[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    const char *prog = "seccheckd types";
    int ch;
    optind = 0;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, CLI_GETOPT_QUIET "h", options, NULL)) != -1) {
        if (ch != 'h') {
            cli_report_getopt_error(prog, ch, argv);
            return 2;
        }
        printf("Usage: seccheckd types\n"
               "Lists the message types a sandbox sends: number and name. --keep-types and --drop-types\n"
               "take either (names in any case); the events table's type_name is the name.\n");
        return 0;
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s' (try --help)\n", prog, argv[optind]);
        return 2;
    }
    printf("number  name (for --keep-types, --drop-types, seccheckd events --type)\n");
    for (unsigned t = 1; t <= DECODE_TYPE_MAX; t++) {
        const char *name = decode_type_name((uint16_t)t);
        if (name)
            printf("%6u  %s\n", t, name);
    }
    return 0;
}

void filter_free(struct filter *f)
{
    clear_containers(f);
}

bool filter_container_passes(const struct filter *f, const char *container_id)
{
    if (f->containers_mode == FILTER_OFF)
        return true;
    bool listed = false;
    for (size_t i = 0; container_id && *container_id && i < f->ncontainers && !listed; i++)
        listed = strcmp(f->containers[i], container_id) == 0;
    return f->containers_mode == FILTER_KEEP ? listed : !listed;
}
