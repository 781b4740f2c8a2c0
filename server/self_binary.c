#include "self_binary.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int self_binary_path(const char *argv0, char *out, size_t outlen)
{
    if (argv0 && argv0[0] == '/') {
        int n = snprintf(out, outlen, "%s", argv0);
        return n > 0 && (size_t)n < outlen ? 0 : -1;
    }
    if (argv0 && strchr(argv0, '/')) {
        char cwd[4096];
        if (!getcwd(cwd, sizeof(cwd)))
            return -1;
        int n = snprintf(out, outlen, "%s/%s", cwd, argv0);
        return n > 0 && (size_t)n < outlen ? 0 : -1;
    }
    if (outlen == 0)
        return -1;
    ssize_t n = readlink("/proc/self/exe", out, outlen - 1);
    if (n <= 0 || (size_t)n >= outlen - 1)
        return -1;
    out[n] = '\0';
    return 0;
}

struct build_id {
    char *out;
    size_t outlen;
};

/* The note section's entries are 4-byte aligned name and descriptor. */
static size_t note_align(size_t n)
{
    return (n + 3) & ~(size_t)3;
}

static int find_in_notes(const unsigned char *p, size_t size, struct build_id *b)
{
    size_t at = 0;
    while (at + sizeof(ElfW(Nhdr)) <= size) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)(p + at);
        size_t name_at = at + sizeof(*nh), desc_at = name_at + note_align(nh->n_namesz);
        if (desc_at + nh->n_descsz > size)
            return 0;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(p + name_at, "GNU", 4) == 0) {
            size_t len = 0;
            for (size_t i = 0; i < nh->n_descsz && len + 3 <= b->outlen; i++)
                len += (size_t)snprintf(b->out + len, b->outlen - len, "%02x", p[desc_at + i]);
            return 1;
        }
        at = desc_at + note_align(nh->n_descsz);
    }
    return 0;
}

/* Called for each loaded object; the first is the executable itself. */
static int scan_executable(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE &&
            find_in_notes((const unsigned char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, data))
            break;
    }
    return 1;   /* stop: only the executable */
}

void self_binary_build_id(char *out, size_t outlen)
{
    snprintf(out, outlen, "none");
    struct build_id b = {out, outlen};
    dl_iterate_phdr(scan_executable, &b);
}
