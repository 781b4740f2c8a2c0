/* alerts.h - `seccheckd alerts (--db PATH | --to URL) [filters] [--follow] [--json]`:
 * the alerts the rules raised, from a host's database or the central copy
 * (`seccheckd forward`), as an aligned table for people or as Falco's JSON
 * lines for tools. */
#ifndef SECCHECKD_QUERY_ALERTS_H
#define SECCHECKD_QUERY_ALERTS_H

/* argv[0] is "alerts". Exit status: 0 done, 1 a runtime error, 2 usage. */
int alerts_main(int argc, char **argv);

#endif
