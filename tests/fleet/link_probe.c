/* link_probe URLS AUTHFILE ROUNDS - connects to the NATS servers ROUNDS times, each
 * time on a link in a stack frame that returns after js_link_close, then
 * writes over that stack. js_link_close must return only after nats.c ran
 * the connection's last callback: a callback that came later wrote into a
 * frame that was gone (e2e.readme under ASan: seccheckd central's stream
 * check, whose disconnected callback came after it returned). fleet.nats_link
 * runs it under the sanitizer builds with detect_stack_use_after_return. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* One connection on this frame; 0 when it connected and closed. */
static __attribute__((noinline)) int round_trip(const char *urls, const char *auth, char *err, size_t errlen)
{
    struct js_link link = {0};
    bool lasting;
    struct js_link_options o = {.urls = urls, .auth_file = auth, .name = "link_probe", .timeout_ms = 2000};
    if (js_link_connect(&link, &o, &lasting, err, errlen) != 0)
        return -1;
    js_link_close(&link);
    return 0;
}

/* Reuses the stack round_trip used, as the caller's next calls would. */
static __attribute__((noinline)) unsigned scribble(void)
{
    volatile unsigned char junk[16384];
    memset((void *)junk, 0xa5, sizeof(junk));
    return junk[0] + junk[sizeof(junk) - 1];
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: link_probe URLS AUTHFILE ROUNDS\n");
        return 2;
    }
    int rounds = atoi(argv[3]);
    char err[512];
    unsigned sum = 0;
    for (int i = 0; i < rounds; i++) {
        if (round_trip(argv[1], argv[2], err, sizeof(err)) != 0) {
            fprintf(stderr, "link_probe: round %d: %s\n", i, err);
            return 1;
        }
        for (int j = 0; j < 20; j++) {   /* the callback thread's moment, with the frame reused */
            sum += scribble();
            usleep(1000);
        }
    }
    printf("link_probe: %d rounds (%u)\n", rounds, sum & 1);
    return 0;
}
