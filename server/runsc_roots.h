/* runsc_roots.h - the daemon's container lookups: which runsc roots are
 * read (--runsc-root, else the usual ones that exist), said in the log,
 * and the cache and view that read them (container/container.h). */
#ifndef SECCHECKD_RUNSC_ROOTS_H
#define SECCHECKD_RUNSC_ROOTS_H

#include "container.h"
#include "options.h"

/* The cache (its lookup thread started) and the view the writer's stages
 * share; both NULL when lookups are off (--runsc-root none). With no root
 * given and none of the usual ones there (logged), the cache reads only
 * the roots connecting runsc commands keep their state in. 0, or -1. */
int runsc_roots_open(const struct options *o, struct container_cache **cache, struct container_view **view,
                     char *err, size_t errlen);

#endif
