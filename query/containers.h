/* containers.h - `seccheckd containers --db PATH [--pod NAME] [--namespace
 * NAME] [--json]`: the containers a host's database saw, with the names
 * runsc's state files gave them (container, pod, namespace, image), when
 * they were first and last seen, and their event and alert counts. */
#ifndef SECCHECKD_QUERY_CONTAINERS_H
#define SECCHECKD_QUERY_CONTAINERS_H

/* argv[0] is "containers". Exit status: 0 done, 1 a runtime error, 2 usage. */
int containers_main(int argc, char **argv);

#endif
