/* gvisor_config.h - `seccheckd gvisor-config`: print a runsc pod-init
 * config (trace session) for groups of points, with our socket filled in. */
#ifndef SECCHECKD_GVISOR_CONFIG_H
#define SECCHECKD_GVISOR_CONFIG_H

/* argv[0] is "gvisor-config". Prints the JSON on stdout; 0, or 2 on a
 * usage error. */
int gvisor_config_main(int argc, char **argv);

#endif
