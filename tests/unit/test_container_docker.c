/* unit.container_docker: Docker's Engine API as a source of container names
 * (container/docker.c) against answers no real dockerd gives: a container
 * other than the one asked, 2 MiB, not JSON, duplicate keys, 300 labels, a
 * label value longer than Falco's label_max_len, escape sequences, and an
 * answer that never comes (the 2 s bound). The answers come from a small
 * HTTP server on a Unix socket in this process; tests/docker's docker.names
 * asks a real dockerd. */
#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "internal.h"
#include "reaper.h"

#define ID_GOOD "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_OTHER "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static struct {
    int listen_fd;
    pthread_t thread;
    char path[108];
    char dir[64];
} srv;

static void send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void answer(int fd, int status, const char *body, size_t len)
{
    char head[256];
    int n = snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                     status, len);
    send_all(fd, head, (size_t)n);
    send_all(fd, body, len);
}

/* The answer to GET /containers/ID/json, by ID. */
static void serve_one(int fd)
{
    char req[4096];
    ssize_t n = recv(fd, req, sizeof(req) - 1, 0);
    if (n <= 0)
        return;
    req[n] = '\0';
    char id[200] = "";
    sscanf(req, "GET /containers/%199[^/]/json", id);
    static char body[4 << 20];
    if (strcmp(id, ID_GOOD) == 0) {
        snprintf(body, sizeof(body),
                 "{\"Id\": \"%s\", \"Name\": \"/web-1\", \"Image\": \"sha256:f1aa637cf212\",\n"
                 " \"Config\": {\"Image\": \"registry.example.com:5000/shop/web:v1.2\", \"Labels\": {\n"
                 "  \"team\": \"blue\", \"empty\": \"\", \"io.kubernetes.pod.name\": \"x\", \"esc\": \"\\u001b[31mred\",\n"
                 "  \"long\": \"%0101d\"}}}", ID_GOOD, 0);
        answer(fd, 200, body, strlen(body));
    } else if (strcmp(id, "other") == 0) {
        /* Docker resolves names too: a container named "other" answers with its own id */
        snprintf(body, sizeof(body), "{\"Id\": \"%s\", \"Name\": \"/payments-db\", \"Config\": {}}", ID_OTHER);
        answer(fd, 200, body, strlen(body));
    } else if (strcmp(id, "big") == 0) {
        size_t len = 2u << 20;
        memset(body, ' ', len);
        body[0] = '{';
        body[len - 1] = '}';
        answer(fd, 200, body, len);
    } else if (strcmp(id, "notjson") == 0) {
        answer(fd, 200, "<html>", 6);
    } else if (strcmp(id, "dup") == 0) {
        snprintf(body, sizeof(body), "{\"Id\": \"dup\", \"Name\": \"/a\", \"Name\": \"/b\"}");
        answer(fd, 200, body, strlen(body));
    } else if (strcmp(id, "many") == 0) {
        size_t off = (size_t)snprintf(body, sizeof(body), "{\"Id\": \"many\", \"Name\": \"/many\", \"Config\": {\"Labels\": {");
        for (int i = 0; i < 300; i++)
            off += (size_t)snprintf(body + off, sizeof(body) - off, "%s\"k%03d\": \"v\"", i ? ", " : "", i);
        off += (size_t)snprintf(body + off, sizeof(body) - off, "}}}");
        answer(fd, 200, body, off);
    } else if (strcmp(id, "wide") == 0) {   /* 200 labels of 250 + 100 bytes: past 16 KiB */
        size_t off = (size_t)snprintf(body, sizeof(body), "{\"Id\": \"wide\", \"Name\": \"/wide\", \"Config\": {\"Labels\": {");
        for (int i = 0; i < 200; i++)
            off += (size_t)snprintf(body + off, sizeof(body) - off, "%s\"%03d%0247d\": \"%0100d\"", i ? ", " : "", i, 0, 0);
        off += (size_t)snprintf(body + off, sizeof(body) - off, "}}}");
        answer(fd, 200, body, off);
    } else if (strcmp(id, "nolabels") == 0) {
        snprintf(body, sizeof(body), "{\"Id\": \"nolabels\", \"Name\": \"/plain\", \"Config\": {\"Image\": \"app\", \"Labels\": {}}}");
        answer(fd, 200, body, strlen(body));
    } else if (strcmp(id, "slow") == 0) {
        sleep(3);   /* past the 2 s bound */
    } else if (strcmp(id, "error") == 0) {
        answer(fd, 500, "{\"message\": \"boom\"}", 19);
    } else {
        answer(fd, 404, "{\"message\": \"No such container\"}", 32);
    }
}

static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept(srv.listen_fd, NULL, NULL);
        if (fd < 0)
            return NULL;
        serve_one(fd);
        close(fd);
    }
}

static int start_server(void **state)
{
    (void)state;
    snprintf(srv.dir, sizeof(srv.dir), "/tmp/seccheckd-dockerapi-XXXXXX");
    assert_non_null(reaper_mkdtemp(srv.dir));
    snprintf(srv.path, sizeof(srv.path), "%s/docker.sock", srv.dir);
    srv.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof(a.sun_path), "%s", srv.path);
    assert_int_equal(bind(srv.listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(srv.listen_fd, 16), 0);
    assert_int_equal(pthread_create(&srv.thread, NULL, serve, NULL), 0);
    return 0;
}

static int stop_server(void **state)
{
    (void)state;
    shutdown(srv.listen_fd, SHUT_RDWR);
    close(srv.listen_fd);
    pthread_join(srv.thread, NULL);
    reaper_remove(srv.dir);
    return 0;
}

/* A found record of id (as the state file makes one) filled by Docker. */
static struct record *ask_docker(struct docker_source *d, const char *id)
{
    struct record *r = record_new(id);
    assert_non_null(r);
    record_set_state(r, CONTAINER_FOUND, NULL);
    r->pub.sandbox_id = record_strdup(r, id);
    docker_source_fill(d, r);
    return r;
}

static struct docker_source *source(void)
{
    char err[256];
    struct docker_source *d = docker_source_new(srv.path, err, sizeof(err));
    if (!d)
        fail_msg("%s", err);
    return d;
}

static void test_names_labels_image(void **state)
{
    (void)state;
    struct docker_source *d = source();
    struct record *r = ask_docker(d, ID_GOOD);
    const struct container_record *c = &r->pub;
    assert_true(c->names_from_docker);
    assert_string_equal(c->name, "web-1");   /* without Docker's '/' */
    assert_string_equal(c->image, "registry.example.com:5000/shop/web:v1.2");
    assert_string_equal(c->image_repository, "registry.example.com:5000/shop/web");
    assert_string_equal(c->image_tag, "v1.2");
    assert_string_equal(c->image_id, "f1aa637cf212");
    assert_string_equal(container_label(c, "team"), "blue");
    assert_string_equal(container_label(c, "empty"), "");
    assert_string_equal(container_label(c, "esc"), "\033[31mred");   /* kept as Docker has it, escaped when shown */
    assert_null(container_label(c, "long"));   /* 101 bytes: over label_max_len, as the plugin drops it */
    assert_null(container_label(c, "nope"));
    assert_int_equal(c->labels_dropped, 1);
    /* sorted, io.kubernetes.* left out, an empty value as its key alone (extract.cpp) */
    assert_string_equal(c->labels_text, "empty, esc:\033[31mred, team:blue");
    /* A record made again (its passwd re-read) keeps them. */
    struct record *again = record_new(ID_GOOD);
    docker_fields_copy(again, c);
    assert_string_equal(container_label(&again->pub, "team"), "blue");
    assert_string_equal(again->pub.labels_text, c->labels_text);
    assert_string_equal(again->pub.image_id, "f1aa637cf212");
    container_record_release(&again->pub);
    container_record_release(c);
    struct docker_source_stats st;
    docker_source_get_stats(d, &st);
    assert_int_equal(st.lookups, 1);
    assert_int_equal(st.found, 1);
    assert_int_equal(st.labels_dropped, 1);
    docker_source_free(d);
}

/* What Docker cannot answer, or answers wrongly, leaves the record without names, counted. */
static void test_refusals(void **state)
{
    (void)state;
    struct docker_source *d = source();
    const char *refused[] = {"other", "big", "notjson", "dup"};
    for (size_t i = 0; i < 4; i++) {
        struct record *r = ask_docker(d, refused[i]);
        if (r->pub.name || r->pub.names_from_docker)
            fail_msg("%s: took the name '%s'", refused[i], r->pub.name ? r->pub.name : "");
        container_record_release(&r->pub);
    }
    struct record *r = ask_docker(d, "missing");
    assert_null(r->pub.name);
    container_record_release(&r->pub);
    r = ask_docker(d, "error");
    assert_null(r->pub.name);
    container_record_release(&r->pub);
    struct docker_source_stats st;
    docker_source_get_stats(d, &st);
    assert_int_equal(st.lookups, 6);
    assert_int_equal(st.refused, 4);
    assert_int_equal(st.not_found, 1);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.found, 0);

    /* a record that already has names (CRI annotations), or was not found, is not asked about */
    r = record_new(ID_GOOD);
    record_set_state(r, CONTAINER_FOUND, NULL);
    r->pub.name = record_strdup(r, "from-cri");
    docker_source_fill(d, r);
    assert_string_equal(r->pub.name, "from-cri");
    container_record_release(&r->pub);
    r = record_new(ID_GOOD);
    record_set_state(r, CONTAINER_UNKNOWN, "no state file");
    docker_source_fill(d, r);
    assert_null(r->pub.name);
    container_record_release(&r->pub);
    docker_source_get_stats(d, &st);
    assert_int_equal(st.lookups, 6);
    docker_source_free(d);
}

static void test_label_bounds(void **state)
{
    (void)state;
    struct docker_source *d = source();
    struct record *r = ask_docker(d, "many");
    assert_int_equal(r->pub.nlabels, CONTAINER_LABELS_MAX);
    assert_int_equal(r->pub.labels_dropped, 300 - CONTAINER_LABELS_MAX);
    for (size_t i = 1; i < r->pub.nlabels; i++)
        assert_true(strcmp(r->pub.labels[i - 1].key, r->pub.labels[i].key) < 0);
    container_record_release(&r->pub);
    /* keys and values past 16 KiB in all: the rest not kept */
    r = ask_docker(d, "wide");
    assert_int_equal(r->pub.nlabels, CONTAINER_LABELS_BYTES_MAX / 350);
    assert_int_equal(r->pub.labels_dropped, 200 - CONTAINER_LABELS_BYTES_MAX / 350);
    container_record_release(&r->pub);
    /* none at all (Docker's usual {}): no label, an empty container.labels, the names all the same */
    r = ask_docker(d, "nolabels");
    assert_true(r->pub.names_from_docker);
    assert_string_equal(r->pub.name, "plain");
    assert_string_equal(r->pub.image_repository, "app");
    assert_null(r->pub.image_tag);
    assert_int_equal(r->pub.nlabels, 0);
    assert_string_equal(r->pub.labels_text, "");
    assert_null(container_label(&r->pub, "team"));
    container_record_release(&r->pub);
    docker_source_free(d);
}

/* An answer that never comes costs the 2 s bound, not more; a socket nobody listens on fails at once. */
static void test_time_bound(void **state)
{
    (void)state;
    struct docker_source *d = source();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct record *r = ask_docker(d, "slow");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_null(r->pub.name);
    container_record_release(&r->pub);
    if (took < 1.9 || took > 3.5)
        fail_msg("a silent Docker took %.2f s (the bound is 2 s)", took);
    docker_source_free(d);

    char err[256], path[160];
    snprintf(path, sizeof(path), "%s/nobody.sock", srv.dir);
    d = docker_source_new(path, err, sizeof(err));
    assert_non_null(d);
    r = ask_docker(d, ID_GOOD);
    assert_null(r->pub.name);
    container_record_release(&r->pub);
    struct docker_source_stats st;
    docker_source_get_stats(d, &st);
    assert_int_equal(st.failed, 1);
    docker_source_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_names_labels_image, start_server, stop_server),
        cmocka_unit_test_setup_teardown(test_refusals, start_server, stop_server),
        cmocka_unit_test_setup_teardown(test_label_bounds, start_server, stop_server),
        cmocka_unit_test_setup_teardown(test_time_bound, start_server, stop_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
