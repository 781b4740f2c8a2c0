/* host_id.h - the name a host's rows go by in the central copy.
 *
 * --host-id ID, or by default /etc/machine-id, else the hostname: what
 * `seccheckd forward` ships under and `seccheckd verify --to` checks, so
 * both find the same rows without being told.
 */
#ifndef SECCHECKD_FORWARD_HOST_ID_H
#define SECCHECKD_FORWARD_HOST_ID_H

#include <stddef.h>

#define HOST_ID_MAX 128

/* Fills out with given (NULL: the default). 0, or -1 with why in err:
 * no default could be read, or the id is not 1 to HOST_ID_MAX printable
 * characters without spaces. */
int host_id_resolve(const char *given, char out[HOST_ID_MAX + 1], char *err, size_t errlen);

#endif
