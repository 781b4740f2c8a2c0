/* export.h - `seccheckd export`: a database back out, as NDJSON (the same
 * objects the ndjson sink streams, event_json.h) or as gVisor tracereplay
 * files (one per connection, byte-identical to what `--sink record` wrote:
 * the raw column keeps every packet as received, so a database is a
 * lossless archive).
 */
#ifndef SECCHECKD_EXPORT_H
#define SECCHECKD_EXPORT_H

/* argv[0] is the subcommand name ("export"); the options follow:
 *   --db PATH --format ndjson|trace [--out PATH|DIR] [--conn ID] [--help]
 * Returns 0 when everything was written, 1 on a runtime error (database
 * unreadable, output not writable; printed), 2 on a usage error. */
int export_main(int argc, char **argv);

#endif
