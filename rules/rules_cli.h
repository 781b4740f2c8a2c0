/* rules_cli.h - `seccheckd rules check PATH...` and `seccheckd rules test
 * PATH... (--trace FILE... | --db DB)`. */
#ifndef SECCHECKD_RULES_CLI_H
#define SECCHECKD_RULES_CLI_H

/* argv[0] is "rules". Exit status: 0 done, 1 a runtime error (a trace or
 * database that cannot be read), 2 a usage error or rules with errors. */
int rules_main(int argc, char **argv);

#endif
