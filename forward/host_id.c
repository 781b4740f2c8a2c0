/* host_id.c - the host's name in the central copy (host_id.h). */
#include "host_id.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* /etc/machine-id, else the hostname. */
static int default_host_id(char *out, size_t len)
{
    FILE *f = fopen("/etc/machine-id", "r");
    out[0] = '\0';
    if (f) {
        if (fgets(out, (int)len, f))
            out[strcspn(out, " \t\r\n")] = '\0';
        fclose(f);
    }
    if (!out[0] && gethostname(out, len) != 0)
        return -1;
    out[len - 1] = '\0';
    return out[0] ? 0 : -1;
}

static bool valid_host_id(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > HOST_ID_MAX)
        return false;
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || (unsigned char)*s == 0x7f)
            return false;
    return true;
}

int host_id_resolve(const char *given, char out[HOST_ID_MAX + 1], char *err, size_t errlen)
{
    if (given && !valid_host_id(given)) {
        snprintf(err, errlen, "--host-id: expected 1 to %d printable characters without spaces", HOST_ID_MAX);
        return -1;
    }
    if (given) {
        snprintf(out, HOST_ID_MAX + 1, "%s", given);
        return 0;
    }
    if (default_host_id(out, HOST_ID_MAX + 1) != 0) {
        snprintf(err, errlen, "no /etc/machine-id and no hostname: pass --host-id ID");
        return -1;
    }
    if (!valid_host_id(out)) {
        snprintf(err, errlen, "the default host id '%s' (/etc/machine-id or the hostname) is not 1 to %d printable "
                 "characters without spaces: pass --host-id ID", out, HOST_ID_MAX);
        return -1;
    }
    return 0;
}
