#include "trace_names.h"

#include <stddef.h>
#include <sys/mman.h>
#include <sys/ptrace.h>

/* libs' ptrace_requests (driver/flags_table.c), with <sys/ptrace.h>'s
 * numbers for x86-64. */
static const struct {
    int64_t request;
    const char *name;
} ptrace_requests[] = {
    {PTRACE_TRACEME, "PTRACE_TRACEME"}, {PTRACE_PEEKTEXT, "PTRACE_PEEKTEXT"},
    {PTRACE_PEEKDATA, "PTRACE_PEEKDATA"}, {PTRACE_PEEKUSER, "PTRACE_PEEKUSR"},
    {PTRACE_POKETEXT, "PTRACE_POKETEXT"}, {PTRACE_POKEDATA, "PTRACE_POKEDATA"},
    {PTRACE_POKEUSER, "PTRACE_POKEUSR"}, {PTRACE_CONT, "PTRACE_CONT"}, {PTRACE_KILL, "PTRACE_KILL"},
    {PTRACE_SINGLESTEP, "PTRACE_SINGLESTEP"}, {PTRACE_GETREGS, "PTRACE_GETREGS"},
    {PTRACE_SETREGS, "PTRACE_SETREGS"}, {PTRACE_GETFPREGS, "PTRACE_GETFPREGS"},
    {PTRACE_SETFPREGS, "PTRACE_SETFPREGS"}, {PTRACE_ATTACH, "PTRACE_ATTACH"}, {PTRACE_DETACH, "PTRACE_DETACH"},
    {PTRACE_GETFPXREGS, "PTRACE_GETFPXREGS"}, {PTRACE_SETFPXREGS, "PTRACE_SETFPXREGS"},
    {PTRACE_SYSCALL, "PTRACE_SYSCALL"}, {PTRACE_GET_THREAD_AREA, "PTRACE_GET_THREAD_AREA"},
    {PTRACE_SET_THREAD_AREA, "PTRACE_SET_THREAD_AREA"}, {PTRACE_ARCH_PRCTL, "PTRACE_ARCH_PRCTL"},
    {PTRACE_SYSEMU, "PTRACE_SYSEMU"}, {PTRACE_SYSEMU_SINGLESTEP, "PTRACE_SYSEMU_SINGLESTEP"},
    {PTRACE_SINGLEBLOCK, "PTRACE_SINGLEBLOCK"}, {PTRACE_SETOPTIONS, "PTRACE_SETOPTIONS"},
    {PTRACE_GETEVENTMSG, "PTRACE_GETEVENTMSG"}, {PTRACE_GETSIGINFO, "PTRACE_GETSIGINFO"},
    {PTRACE_SETSIGINFO, "PTRACE_SETSIGINFO"}, {PTRACE_GETREGSET, "PTRACE_GETREGSET"},
    {PTRACE_SETREGSET, "PTRACE_SETREGSET"}, {PTRACE_SEIZE, "PTRACE_SEIZE"},
    {PTRACE_INTERRUPT, "PTRACE_INTERRUPT"}, {PTRACE_LISTEN, "PTRACE_LISTEN"},
    {PTRACE_PEEKSIGINFO, "PTRACE_PEEKSIGINFO"}, {PTRACE_GETSIGMASK, "PTRACE_GETSIGMASK"},
    {PTRACE_SETSIGMASK, "PTRACE_SETSIGMASK"},
    /* PTRACE_OLDSETOPTIONS: <asm/ptrace-abi.h>, not in glibc's header */
    {21, "PTRACE_OLDSETOPTIONS"},
};

const char *trace_ptrace_request_name(int64_t request)
{
    for (size_t i = 0; i < sizeof(ptrace_requests) / sizeof(ptrace_requests[0]); i++)
        if (ptrace_requests[i].request == request)
            return ptrace_requests[i].name;
    return NULL;
}

struct flag_name {
    uint32_t value, mask;
    const char *name;
};

/* Names where v & mask == value, in order, then the bits left as hex. */
static void put_flags(struct strbuf *out, uint32_t v, const struct flag_name *names, size_t n, const char *zero)
{
    uint32_t shown = 0;
    bool first = true;
    for (size_t i = 0; i < n; i++)
        if ((v & names[i].mask) == names[i].value && (names[i].value || names[i].mask)) {
            strbuf_printf(out, "%s%s", first ? "" : "|", names[i].name);
            shown |= names[i].mask;
            first = false;
        }
    if (v & ~shown) {
        strbuf_printf(out, "%s0x%x", first ? "" : "|", v & ~shown);
        first = false;
    }
    if (first)
        strbuf_puts(out, zero);
}

void trace_mmap_prot(struct strbuf *out, uint32_t prot)
{
    static const struct flag_name names[] = {
        {PROT_READ, PROT_READ, "PROT_READ"}, {PROT_WRITE, PROT_WRITE, "PROT_WRITE"},
        {PROT_EXEC, PROT_EXEC, "PROT_EXEC"}, {PROT_GROWSDOWN, PROT_GROWSDOWN, "PROT_GROWSDOWN"},
        {PROT_GROWSUP, PROT_GROWSUP, "PROT_GROWSUP"},
    };
    put_flags(out, prot, names, sizeof(names) / sizeof(names[0]), "PROT_NONE");
}

void trace_mmap_flags(struct strbuf *out, uint32_t flags)
{
    static const struct flag_name names[] = {
        /* the mapping type: two bits, one value */
        {MAP_SHARED, MAP_TYPE, "MAP_SHARED"}, {MAP_PRIVATE, MAP_TYPE, "MAP_PRIVATE"},
        {MAP_SHARED_VALIDATE, MAP_TYPE, "MAP_SHARED_VALIDATE"},
        {MAP_FIXED, MAP_FIXED, "MAP_FIXED"}, {MAP_ANONYMOUS, MAP_ANONYMOUS, "MAP_ANONYMOUS"},
        {MAP_32BIT, MAP_32BIT, "MAP_32BIT"}, {MAP_GROWSDOWN, MAP_GROWSDOWN, "MAP_GROWSDOWN"},
        {MAP_DENYWRITE, MAP_DENYWRITE, "MAP_DENYWRITE"}, {MAP_EXECUTABLE, MAP_EXECUTABLE, "MAP_EXECUTABLE"},
        {MAP_LOCKED, MAP_LOCKED, "MAP_LOCKED"}, {MAP_NORESERVE, MAP_NORESERVE, "MAP_NORESERVE"},
        {MAP_POPULATE, MAP_POPULATE, "MAP_POPULATE"}, {MAP_NONBLOCK, MAP_NONBLOCK, "MAP_NONBLOCK"},
        {MAP_STACK, MAP_STACK, "MAP_STACK"}, {MAP_HUGETLB, MAP_HUGETLB, "MAP_HUGETLB"},
        {MAP_SYNC, MAP_SYNC, "MAP_SYNC"}, {MAP_FIXED_NOREPLACE, MAP_FIXED_NOREPLACE, "MAP_FIXED_NOREPLACE"},
    };
    put_flags(out, flags, names, sizeof(names) / sizeof(names[0]), "0");
}
