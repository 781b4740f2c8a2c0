/* ingest_filter.h - which events to keep, decided at ingest.
 *
 * By message type (names like SYSCALL_OPEN, or numbers) and by container id;
 * a keep list admits only what it names, a drop list removes what it names.
 * What a filter removes is counted as discarded. Reloadable on SIGHUP.
 */
#ifndef SECCHECKD_INGEST_FILTER_H
#define SECCHECKD_INGEST_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FILTER_MAX_CONTAINERS 256

enum filter_mode { FILTER_OFF = 0, FILTER_KEEP, FILTER_DROP };

struct filter {
    enum filter_mode types_mode;
    uint64_t types[65536 / 64];       /* bit per message_type */
    enum filter_mode containers_mode;
    char *containers[FILTER_MAX_CONTAINERS];
    size_t ncontainers;
};

/* list: comma-separated; mode: keep or drop. 0, or -1 with err. A second
 * call of either kind replaces the first of that kind. */
int filter_set_types(struct filter *f, enum filter_mode mode, const char *list, char *err, size_t errlen);
int filter_set_containers(struct filter *f, enum filter_mode mode, const char *list, char *err, size_t errlen);
void filter_free(struct filter *f);

static inline bool filter_type_passes(const struct filter *f, uint16_t type)
{
    if (f->types_mode == FILTER_OFF)
        return true;
    bool listed = (f->types[type / 64] >> (type % 64)) & 1;
    return f->types_mode == FILTER_KEEP ? listed : !listed;
}

/* container_id may be NULL or "" (not collected): such events pass a drop
 * list and fail a keep list. */
bool filter_container_passes(const struct filter *f, const char *container_id);

static inline bool filter_on_containers(const struct filter *f) { return f->containers_mode != FILTER_OFF; }

/* `seccheckd types [--help]` (argv[0] "types"): every message type this
 * build knows, its number and the name the type lists take. 0, or 2 on a
 * usage error. */
int filter_types_main(int argc, char **argv);

#endif
