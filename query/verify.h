/* verify.h - `seccheckd verify`: recompute the batch chain of a database
 * (chain.h) and name the first batch that was altered, deleted or reordered.
 */
#ifndef SECCHECKD_VERIFY_H
#define SECCHECKD_VERIFY_H

/* argv[0] is the subcommand name ("verify"); the options follow:
 *   --db PATH [--key-file PATH] [--help]
 * Prints "ok: N batches, M events verified" and returns 0; prints the first
 * bad batch and why, and returns 1; returns 2 on a usage error or when the
 * database cannot be checked (cannot be opened, keyed chain without a key). */
int verify_main(int argc, char **argv);

#endif
