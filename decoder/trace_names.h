/* trace_names.h - the numbers of the points gVisor added in 2026, as people
 * write them: ptrace(2) requests (PTRACE_ATTACH) and mmap(2) protections
 * and flags (PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_ANONYMOUS).
 *
 * Taken from the C library's constants (<sys/ptrace.h>, <sys/mman.h>), so
 * they are the x86-64 ABI gVisor implements, as linux_names.h's are. The
 * request names are libs' (driver/flags_table.c ptrace_requests): what
 * Falco's evt.arg.request shows, PTRACE_UNKNOWN for a request it has no
 * name for. */
#ifndef SECCHECKD_TRACE_NAMES_H
#define SECCHECKD_TRACE_NAMES_H

#include <stdint.h>

#include "strbuf.h"

/* "PTRACE_ATTACH" for 16; NULL for a number without a name. */
const char *trace_ptrace_request_name(int64_t request);

/* Appends prot as names joined by '|' ("PROT_NONE" for 0); bits without a
 * name as hex. */
void trace_mmap_prot(struct strbuf *out, uint32_t prot);

/* Appends flags the same way (the mapping type first: MAP_SHARED,
 * MAP_PRIVATE, MAP_SHARED_VALIDATE). */
void trace_mmap_flags(struct strbuf *out, uint32_t flags);

#endif
