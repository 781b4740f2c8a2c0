/* report.h - what a run measured, printed for people (summary, progress
 * line), for benchstat (Go benchmark format) and for scripts (JSON). */
#ifndef SECCHECKD_LOADGEN_REPORT_H
#define SECCHECKD_LOADGEN_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "options.h"

struct loadgen_result {
    unsigned connections;
    uint64_t sent, dropped, bytes;
    uint64_t dropped_reported;    /* of those dropped, the ones a later header sent told the collector */
    double seconds;               /* from the gate opening to the last sender stopping */
    unsigned errors;              /* connections that ended on a send error */
    bool interrupted;             /* stopped by SIGINT/SIGTERM */
};

void report_summary(FILE *out, const struct loadgen_options *o, const struct loadgen_result *r);
void report_bench_line(FILE *out, const struct loadgen_options *o, const struct loadgen_result *r);
void report_json(FILE *out, const struct loadgen_options *o, const struct loadgen_result *r);

/* One \r-rewritten status line; report_progress_clear erases it. */
void report_progress(FILE *out, double seconds, uint64_t sent, uint64_t dropped, double msgs_per_s);
void report_progress_clear(FILE *out);

#endif
