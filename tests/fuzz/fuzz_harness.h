/* fuzz_harness.h - the one fuzz entry point, shared by the libFuzzer binary
 * (seccheck_fuzz, clang only) and the plain replay program that ctest runs
 * over the committed corpus (fuzz_regression, any compiler).
 */
#ifndef SECCHECKD_FUZZ_HARNESS_H
#define SECCHECKD_FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* An invariant: when it does not hold, says which and where, and abort()s
 * (libFuzzer reports a crash, the replay program fails). */
#define FUZZ_CHECK(cond)                                                                            \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);       \
            abort();                                                                                \
        }                                                                                           \
    } while (0)

/* libFuzzer's entry point: one input, checked against every invariant; a
 * violated invariant abort()s. Always returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Ends the process-wide state (ingest pipeline, SQLite, memfd) after the
 * last input and checks the final accounting identity. Returns 0, or
 * abort()s. Only the replay program calls it; libFuzzer just exits. */
int fuzz_harness_finish(void);

#endif
