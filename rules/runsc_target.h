/* runsc_target.h - what one runsc has: its trace points, each with the
 * optional and context fields it accepts, as `runsc trace metadata` lists
 * them, and the newest gVisor release those show. `seccheckd gvisor-config`
 * writes a config the target accepts (runsc refuses a point or field it
 * does not have, and the sandbox does not start); `seccheckd rules check`
 * says which rules need a newer runsc than the target.
 *
 * The release is read from the points and fields that came with it
 * (sentry/mmap: release-20260714.0; is_exec_session: release-20260721.0;
 * syscall/listen: release-20260727.0; pipe_proc_info: release-20260817.0),
 * because some facts of an exec came without a name of their own (binary_info
 * sends the binary's layer and inode since release-20260714.0).
 *
 * A target comes from a runsc binary (run once, its output bounded to
 * RUNSC_METADATA_MAX bytes and RUNSC_METADATA_TIMEOUT_MS), from that output
 * saved in a file, or from the set of runsc 2022-12 built in. */
#ifndef SECCHECKD_RULES_RUNSC_TARGET_H
#define SECCHECKD_RULES_RUNSC_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "rules.h"

#define RUNSC_METADATA_MAX (4u << 20)
#define RUNSC_METADATA_MAX_POINTS 20000
#define RUNSC_METADATA_TIMEOUT_MS 10000
#define RUNSC_TARGET_LABEL_MAX 200

struct runsc_target {
    char label[RUNSC_TARGET_LABEL_MAX];  /* "/usr/bin/runsc (runsc version 0.0~20221219.0)" */
    struct rules_needs points;           /* each point with the optional and context fields it accepts */
    unsigned release;                    /* RULES_RUNSC_*: the newest whose points and fields it shows */
};

/* runsc 2022-12 (0.0~20221219, Debian 12), built in. 0, or -1 out of
 * memory. */
int runsc_target_2022(struct runsc_target *t);

/* From the text `runsc trace metadata` prints ("Name: P, optional fields:
 * [a|b], context fields: [c|d]" per point); names this build does not know
 * are kept out. 0, or -1 with the problem in err. */
int runsc_target_parse(struct runsc_target *t, const char *label, const char *text, size_t len, char *err,
                       size_t errlen);

/* Runs `runsc trace metadata` (runsc: a path, or a name looked up in PATH)
 * and parses what it prints. 0, or -1 with the problem in err. */
int runsc_target_run(struct runsc_target *t, const char *runsc, char *err, size_t errlen);
/* The same within timeout_ms for each of its two runs (--version, trace
 * metadata; runsc_target_run: RUNSC_METADATA_TIMEOUT_MS): past it runsc is
 * killed. */
int runsc_target_run_within(struct runsc_target *t, const char *runsc, int timeout_ms, char *err, size_t errlen);

/* `runsc` found in PATH, else NULL (the caller then takes runsc 2022-12). */
const char *runsc_target_find_in_path(char *buf, size_t buflen);

/* The target a command uses: --runsc PATH (or "2022-12": the built-in set),
 * else --runsc-metadata FILE, else runsc in PATH, else runsc 2022-12. 0,
 * or -1 with the problem in err. */
int runsc_target_resolve(struct runsc_target *t, const char *runsc, const char *metadata_file, char *err,
                         size_t errlen);

void runsc_target_free(struct runsc_target *t);

/* The schematized syscall points needs.c maps event types to: the i-th
 * ("openat", its optional fields, the release that brought it); false past
 * the last. */
bool rules_typed_syscall(size_t i, const char **name, unsigned *optional, unsigned *release);

/* The entry of point, or NULL when target does not have it. */
const struct rules_need *runsc_target_point(const struct runsc_target *t, const char *point);

/* The release that brought a point, an optional or a context field (0:
 * runsc 2022-12 has it; RULES_RUNSC_RELEASE_COUNT: none this build knows). */
unsigned runsc_release_of_point(const char *point);   /* needs.c, beside its tables */
unsigned runsc_release_of_optional(unsigned bit);
unsigned runsc_release_of_context(unsigned bit);

/* need without what target lacks (points, fields): the part a config for
 * target can enable, added to out. 0, or -1 out of memory. */
int runsc_target_keep(const struct runsc_target *t, const struct rules_needs *need, struct rules_needs *out);

/* Prints, for each part of need target lacks, "FILE:LINE: warning: rule
 * 'NAME' needs a newer runsc than LABEL: WHAT (runsc RELEASE on)" (or
 * "needs what LABEL does not have: WHAT"; best-effort context fields left
 * out), "sequence 'NAME'" when the item is a sequence; returns how many
 * (out NULL: only counts). */
size_t runsc_target_warn(const struct runsc_target *t, const char *file, unsigned line, bool is_sequence,
                         const char *name, const struct rules_needs *need, FILE *out);

/* The same parts, each given to each(ctx, WHAT, release): the release that
 * brings it (RULES_RUNSC_*; RULES_RUNSC_RELEASE_COUNT: none this build
 * knows). Returns how many. */
size_t runsc_target_lacks(const struct runsc_target *t, const struct rules_needs *need,
                          void (*each)(void *ctx, const char *what, unsigned release), void *ctx);

/* Whether release is a known one newer than target's: what it brings needs
 * a newer runsc (else the target lacks it for another reason). */
bool runsc_target_is_newer(const struct runsc_target *t, unsigned release);

#endif
