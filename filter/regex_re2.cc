// regex_re2.cc - regex_re2.h over RE2: the only C++ in seccheckd, a shim so
// the C code never sees a C++ type or an exception.
#include "regex_re2.h"

#include <re2/re2.h>

#include <cstdio>

struct regex {
    re2::RE2 re;
    regex(const re2::StringPiece &pattern, const re2::RE2::Options &opt) : re(pattern, opt) {}
};

extern "C" struct regex *regex_compile(const char *pattern, size_t len, char *err, size_t errlen)
{
    if (len > REGEX_MAX_PATTERN) {
        snprintf(err, errlen, "regular expression longer than %d bytes", REGEX_MAX_PATTERN);
        return nullptr;
    }
    // libsinsp's options (RE2::POSIX), a bounded memory budget, and no
    // logging to stderr: errors go back to the rules file's diagnostics.
    re2::RE2::Options opt(re2::RE2::POSIX);
    opt.set_max_mem(REGEX_MAX_MEM);
    opt.set_log_errors(false);
    regex *r = nullptr;
    try {
        r = new regex(re2::StringPiece(pattern, len), opt);
    } catch (...) {   // std::bad_alloc: nothing may unwind into C
        r = nullptr;
    }
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return nullptr;
    }
    if (!r->re.ok()) {
        snprintf(err, errlen, "%s", r->re.error().c_str());
        delete r;
        return nullptr;
    }
    return r;
}

extern "C" bool regex_full_match(const struct regex *r, const char *s, size_t len)
{
    re2::StringPiece text(s, len);
    return r->re.Match(text, 0, len, re2::RE2::ANCHOR_BOTH, nullptr, 0);
}

extern "C" void regex_free(struct regex *r) { delete r; }
