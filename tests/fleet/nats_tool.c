/* nats_tool.c - what the fleet tests do to a NATS server by hand, with
 * nats.c (Debian has no nats CLI): publish raw bytes to JetStream, read a
 * subject's last message, wait for core messages, make a raw API request.
 *
 *   nats_tool URLS AUTHFILE pub SUBJECT FILE [MSGID]   prints "seq N" ("duplicate" if so);
 *                                                        exit 1 and the reason otherwise
 *   nats_tool URLS AUTHFILE last STREAM SUBJECT OUT     its data into OUT; prints "seq N"
 *   nats_tool URLS AUTHFILE sub SUBJECT COUNT SECONDS   prints each message's data on a line,
 *                                                        until COUNT came or SECONDS passed
 *   nats_tool URLS AUTHFILE req SUBJECT JSON            prints the reply
 *
 * AUTHFILE: USER:PASSWORD on its first line ("-": none). NATS_TOOL_CA=FILE:
 * TLS, trusting that CA. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <nats/nats.h>

static char async_error[512];

static void on_error(natsConnection *nc, natsSubscription *sub, natsStatus s, void *closure)
{
    (void)sub;
    (void)closure;
    const char *text = NULL;
    natsConnection_GetLastError(nc, &text);
    snprintf(async_error, sizeof(async_error), "%s", text ? text : natsStatus_GetText(s));
}

static natsConnection *connect_to(const char *urls, const char *auth)
{
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    char buf[2048];
    snprintf(buf, sizeof(buf), "%s", urls);
    const char *list[16];
    int n = 0;
    for (char *save = NULL, *u = strtok_r(buf, ",", &save); u && n < 16; u = strtok_r(NULL, ",", &save))
        list[n++] = u;
    natsOptions_Create(&o);
    natsOptions_SetServers(o, list, n);
    natsOptions_SetErrorHandler(o, on_error, NULL);
    natsOptions_SetTimeout(o, 5000);
    const char *ca = getenv("NATS_TOOL_CA");   /* tls:// servers: trust this CA */
    if (ca && *ca) {
        natsOptions_SetSecure(o, true);
        natsOptions_LoadCATrustedCertificates(o, ca);
    }
    if (strcmp(auth, "-") != 0) {
        char line[512] = "";
        FILE *f = fopen(auth, "r");
        if (!f || !fgets(line, sizeof(line), f)) {
            fprintf(stderr, "nats_tool: cannot read %s\n", auth);
            exit(2);
        }
        fclose(f);
        line[strcspn(line, "\r\n")] = '\0';
        char *colon = strchr(line, ':');
        if (colon)
            *colon++ = '\0';
        natsOptions_SetUserInfo(o, line, colon ? colon : "");
    }
    natsStatus s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    if (s != NATS_OK) {
        fprintf(stderr, "nats_tool: connect: %s\n", natsStatus_GetText(s));
        exit(1);
    }
    return nc;
}

static char *read_file(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)*len + 1);
    if (data && fread(data, 1, (size_t)*len, f) != (size_t)*len) {
        free(data);
        data = NULL;
    }
    fclose(f);
    return data;
}

static int cmd_pub(natsConnection *nc, int argc, char **argv)
{
    if (argc < 2)
        return 2;
    long len;
    char *data = read_file(argv[1], &len);
    if (!data) {
        fprintf(stderr, "nats_tool: cannot read %s\n", argv[1]);
        return 2;
    }
    jsCtx *js = NULL;
    natsConnection_JetStream(&js, nc, NULL);
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = argc > 2 ? argv[2] : NULL;
    po.MaxWait = 3000;
    jsPubAck *ack = NULL;
    jsErrCode code = 0;
    natsStatus s = js_Publish(&ack, js, argv[0], data, (int)len, &po, &code);
    free(data);
    int rc = 0;
    if (s == NATS_OK)
        printf("seq %llu%s\n", (unsigned long long)ack->Sequence, ack->Duplicate ? " duplicate" : "");
    else {
        printf("error: %s (code %d)%s%s\n", natsStatus_GetText(s), (int)code, async_error[0] ? ": " : "", async_error);
        rc = 1;
    }
    jsPubAck_Destroy(ack);
    jsCtx_Destroy(js);
    return rc;
}

static int cmd_last(natsConnection *nc, int argc, char **argv)
{
    if (argc < 3)
        return 2;
    jsCtx *js = NULL;
    natsConnection_JetStream(&js, nc, NULL);
    jsDirectGetMsgOptions dg;
    jsDirectGetMsgOptions_Init(&dg);
    dg.LastBySubject = argv[1];
    natsMsg *m = NULL;
    natsStatus s = js_DirectGetMsg(&m, js, argv[0], NULL, &dg);
    int rc = 1;
    if (s == NATS_OK) {
        FILE *f = fopen(argv[2], "wb");
        if (f && fwrite(natsMsg_GetData(m), 1, (size_t)natsMsg_GetDataLength(m), f) == (size_t)natsMsg_GetDataLength(m))
            rc = 0;
        if (f)
            fclose(f);
        printf("seq %llu\n", (unsigned long long)natsMsg_GetSequence(m));
        natsMsg_Destroy(m);
    } else
        printf("error: %s\n", natsStatus_GetText(s));
    jsCtx_Destroy(js);
    return rc;
}

static int cmd_sub(natsConnection *nc, int argc, char **argv)
{
    if (argc < 3)
        return 2;
    natsSubscription *sub = NULL;
    if (natsConnection_SubscribeSync(&sub, nc, argv[0]) != NATS_OK)
        return 1;
    natsConnection_Flush(nc);
    printf("subscribed\n");
    fflush(stdout);
    int want = atoi(argv[1]), got = 0;
    int64_t deadline = nats_Now() + (int64_t)atoi(argv[2]) * 1000;
    while (got < want && nats_Now() < deadline) {
        natsMsg *m = NULL;
        if (natsSubscription_NextMsg(&m, sub, 200) != NATS_OK)
            continue;
        printf("%.*s\n", natsMsg_GetDataLength(m), natsMsg_GetData(m));
        fflush(stdout);
        natsMsg_Destroy(m);
        got++;
    }
    natsSubscription_Destroy(sub);
    return got >= want ? 0 : 1;
}

static int cmd_req(natsConnection *nc, int argc, char **argv)
{
    if (argc < 2)
        return 2;
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_RequestString(&reply, nc, argv[0], argv[1], 5000);
    if (s != NATS_OK) {
        printf("error: %s\n", natsStatus_GetText(s));
        return 1;
    }
    printf("%.*s\n", natsMsg_GetDataLength(reply), natsMsg_GetData(reply));
    natsMsg_Destroy(reply);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: nats_tool URLS AUTHFILE pub|last|sub|req ARGS...\n");
        return 2;
    }
    natsConnection *nc = connect_to(argv[1], argv[2]);
    int rc = 2;
    if (strcmp(argv[3], "pub") == 0)
        rc = cmd_pub(nc, argc - 4, argv + 4);
    else if (strcmp(argv[3], "last") == 0)
        rc = cmd_last(nc, argc - 4, argv + 4);
    else if (strcmp(argv[3], "sub") == 0)
        rc = cmd_sub(nc, argc - 4, argv + 4);
    else if (strcmp(argv[3], "req") == 0)
        rc = cmd_req(nc, argc - 4, argv + 4);
    natsConnection_Destroy(nc);
    nats_Close();
    return rc;
}
