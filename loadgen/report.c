#include "report.h"

#include <ctype.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

/* Derived figures, zero rather than inf/nan for an empty or instant run. */
struct rates {
    double msgs_per_s, mb_per_s, ns_per_op, drop_pct;
};

static struct rates rates_of(const struct loadgen_result *r)
{
    struct rates x = {0};
    if (r->seconds > 0) {
        x.msgs_per_s = (double)r->sent / r->seconds;
        x.mb_per_s = (double)r->bytes / 1e6 / r->seconds;   /* MB as Go's testing package: 10^6 */
    }
    if (r->sent > 0)
        x.ns_per_op = r->seconds * 1e9 / (double)r->sent;
    if (r->sent + r->dropped > 0)
        x.drop_pct = 100.0 * (double)r->dropped / (double)(r->sent + r->dropped);
    return x;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Trace names for the benchmark name: base names without ".trace", joined
 * by '+'; whitespace becomes '_' since benchstat splits fields on it. */
static void append_trace_names(char *buf, size_t size, const struct loadgen_options *o)
{
    size_t len = strlen(buf);
    for (size_t i = 0; i < o->ntraces && len + 1 < size; i++) {
        const char *name = base_name(o->traces[i]);
        size_t n = strlen(name);
        if (n > 6 && strcmp(name + n - 6, ".trace") == 0)
            n -= 6;
        if (i > 0)
            buf[len++] = '+';
        for (size_t k = 0; k < n && len + 1 < size; k++)
            buf[len++] = isspace((unsigned char)name[k]) ? '_' : name[k];
        buf[len] = '\0';
    }
}

/* Go's format wants "Benchmark" then an upper-case letter (or nothing):
 * "myRun" becomes "BenchmarkMyRun", "BenchmarkX" stays. */
static void custom_bench_name(char *buf, size_t size, const char *name)
{
    if (strncmp(name, "Benchmark", 9) == 0 && !islower((unsigned char)name[9])) {
        snprintf(buf, size, "%s", name);
        return;
    }
    snprintf(buf, size, "Benchmark%c%s", toupper((unsigned char)name[0]), name + 1);
}

static void bench_name(char *buf, size_t size, const struct loadgen_options *o)
{
    if (o->bench_name) {
        custom_bench_name(buf, size, o->bench_name);
        return;
    }
    snprintf(buf, size, "BenchmarkLoadgen/mode=%s/conns=%u/trace=", loadgen_mode_name(o->mode), o->connections);
    append_trace_names(buf, size, o);
    if (o->rate > 0) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, "/rate=%g", o->rate);
    }
}

/* Go appends "-GOMAXPROCS" to a benchmark's name unless it is 1; GOMAXPROCS
 * defaults to the CPUs this process may run on. */
static long procs(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

void report_bench_line(FILE *out, const struct loadgen_options *o, const struct loadgen_result *r)
{
    char name[1024];
    bench_name(name, sizeof(name), o);
    long p = procs();
    struct rates x = rates_of(r);
    if (p != 1)
        fprintf(out, "%s-%ld", name, p);
    else
        fputs(name, out);
    fprintf(out, "\t%llu\t%.1f ns/op\t%.0f msgs/s\t%.2f MB/s\t%.3f drop%%\n", (unsigned long long)r->sent,
            x.ns_per_op, x.msgs_per_s, x.mb_per_s, x.drop_pct);
}

/* Every line starts with a capital letter: benchstat reads "key: value"
 * lines with a lower-case key as configuration, and a per-run value there
 * (say, the messages sent) would split runs it should compare. */
void report_summary(FILE *out, const struct loadgen_options *o, const struct loadgen_result *r)
{
    struct rates x = rates_of(r);
    fprintf(out, "Connections %u, mode %s, trace%s", r->connections, loadgen_mode_name(o->mode),
            o->ntraces > 1 ? "s" : "");
    for (size_t i = 0; i < o->ntraces; i++)
        fprintf(out, "%s%s", i ? ", " : " ", base_name(o->traces[i]));
    fputc('\n', out);
    if (o->rate > 0)
        fprintf(out, "Rate        %g msgs/s per connection (target)\n", o->rate);
    fprintf(out, "Sent        %llu messages, %llu bytes\n", (unsigned long long)r->sent, (unsigned long long)r->bytes);
    fprintf(out, "Dropped     %llu (%.3f%%)\n", (unsigned long long)r->dropped, x.drop_pct);
    fprintf(out, "Seconds     %.3f%s\n", r->seconds, r->interrupted ? " (interrupted)" : "");
    fprintf(out, "Throughput  %.0f msgs/s, %.2f MB/s\n", x.msgs_per_s, x.mb_per_s);
    if (r->errors)
        fprintf(out, "Errors      %u connection%s ended early (see stderr)\n", r->errors, r->errors == 1 ? "" : "s");
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

void report_json(FILE *out, const struct loadgen_options *o, const struct loadgen_result *r)
{
    struct rates x = rates_of(r);
    char name[1024];
    bench_name(name, sizeof(name), o);
    fprintf(out, "{\"connections\":%u,\"mode\":\"%s\",\"traces\":[", r->connections, loadgen_mode_name(o->mode));
    for (size_t i = 0; i < o->ntraces; i++) {
        if (i)
            fputc(',', out);
        json_string(out, o->traces[i]);
    }
    fprintf(out, "],\"sent\":%llu,\"dropped\":%llu,\"dropped_reported\":%llu,\"bytes\":%llu,\"seconds\":%.6f,\"msgs_per_s\":%.1f,"
                 "\"mb_per_s\":%.3f,\"drop_pct\":%.4f,\"ns_per_op\":%.2f,\"errors\":%u,\"interrupted\":%s,"
                 "\"bench_name\":",
            (unsigned long long)r->sent, (unsigned long long)r->dropped, (unsigned long long)r->dropped_reported,
            (unsigned long long)r->bytes, r->seconds,
            x.msgs_per_s, x.mb_per_s, x.drop_pct, x.ns_per_op, r->errors, r->interrupted ? "true" : "false");
    json_string(out, name);
    fputs("}\n", out);
}

void report_progress(FILE *out, double seconds, uint64_t sent, uint64_t dropped, double msgs_per_s)
{
    /* \033[K erases what a longer previous line left behind. */
    fprintf(out, "\r%7.1f s  sent %llu  dropped %llu  %.0f msgs/s\033[K", seconds, (unsigned long long)sent,
            (unsigned long long)dropped, msgs_per_s);
    fflush(out);
}

void report_progress_clear(FILE *out)
{
    fputs("\r\033[K", out);
    fflush(out);
}
