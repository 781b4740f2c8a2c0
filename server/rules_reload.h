/* rules_reload.h - SIGHUP's rules load, on a thread of its own.
 *
 * Loading reads files (a FIFO would wait for a writer, a large file takes
 * seconds) and compiles them: on the event loop, no socket would be read
 * meanwhile, metrics would not answer and SIGTERM would wait. So the loop
 * hands the paths to a thread that loads them and wakes the loop when it is
 * done; the running rules serve until then, and the new set is swapped in
 * (between batches, by the caller) from the loop. A reload asked for while
 * one runs follows it, with the latest paths. A load still running when the
 * daemon stops or restarts is not waited for: its thread finishes (or the
 * process ends) on its own and its result is dropped.
 *
 * The loop thread owns the struct; only the loading thread's own state is
 * shared, under a mutex.
 */
#ifndef SECCHECKD_RULES_RELOAD_H
#define SECCHECKD_RULES_RELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "rules.h"

/* Stack of the loading thread: loading at RULES_MAX_NESTING takes under
 * 0.5 MiB in an ASan build (unit.rules_load measures it): ample room. */
#define RULES_RELOAD_STACK (16u << 20)

struct rules_reload;

/* On the loop thread, when a load ended: rs (yours; NULL when the files had
 * errors), every diagnostic, how long the load took, and whether another
 * load follows (asked for while this one ran). */
typedef void (*rules_reload_done_fn)(struct rule_set *rs, const struct rules_diag *diag, double ms, bool more,
                                     void *data);

/* NULL with the reason in err. Keeps no loop alive. */
struct rules_reload *rules_reload_new(uv_loop_t *loop, rules_reload_done_fn done, void *data, char *err,
                                      size_t errlen);

/* Loads paths (copied) on a new thread: 0 started, 1 queued behind the load
 * running now, -1 the thread could not start (err says why). */
int rules_reload_start(struct rules_reload *r, const char *const *paths, size_t n, char *err, size_t errlen);

/* From the loop thread; r is freed once its handle has closed (the loop
 * must run again, UV_RUN_NOWAIT is enough). A load running goes on alone. */
void rules_reload_close(struct rules_reload *r);

#endif
