/* filter_parse.c - libsinsp's filter grammar (falcosecurity/libs
 * userspace/libsinsp/filter/parser.cpp), production by production, into
 * the tree of filter_ast.h; and Falco's string unescaping (escaping.cpp).
 *
 * Lexing follows libs exactly, quirks included, because a condition must
 * be accepted or refused as Falco accepts or refuses it: word operators
 * need a blank after them but `in`, `exists` and the symbols do not;
 * `not` needs a blank or '('; a quoted string ends at the first quote not
 * preceded by a backslash; bare strings stop at ( ) " ' = , and spaces;
 * recursion depth is counted where libs counts it, to Falco's limit
 * (AST_MAX_DEPTH).
 */
#include "filter_ast.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct parser {
    struct arena *a;
    const char *s;
    size_t len, pos;
    unsigned depth;
    bool failed;
    struct ast_error *err;
    /* the last token lexed (libs' m_last_token), its text unescaped */
    const char *tok;
    size_t tok_len;
    size_t tok_pos;
};

static void fail_at(struct parser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail_at(struct parser *p, size_t pos, const char *fmt, ...)
{
    if (p->failed)
        return;
    p->failed = true;
    p->err->pos = pos;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
    va_end(ap);
}

#define FAIL(p, ...) (fail_at((p), (p)->pos, __VA_ARGS__), (struct ast *)NULL)

/* libs' depth_guard: every production below that counts enters here. */
static bool enter(struct parser *p)
{
    if (++p->depth >= AST_MAX_DEPTH) {
        fail_at(p, p->pos, "nested too deeply (past Falco's parser depth of %d: about 198 levels of "
                "parentheses or transformers)", AST_MAX_DEPTH);
        return false;
    }
    return true;
}

static char cur(const struct parser *p) { return p->pos < p->len ? p->s[p->pos] : '\0'; }
static char at(const struct parser *p, size_t k) { return p->pos + k < p->len ? p->s[p->pos + k] : '\0'; }
/* lex_blank's set, and POSIX [[:space:]] (which the regular-expression tokens use) */
static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\b' || c == '\r' || c == '\n'; }
static bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_word(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
static bool is_hex(char c) { return is_digit(c) || ((c | 32) >= 'a' && (c | 32) <= 'f'); }

static bool lex_blank(struct parser *p)
{
    size_t start = p->pos;
    while (p->pos < p->len && is_blank(p->s[p->pos]))
        p->pos++;
    return p->pos > start;
}

static void set_tok(struct parser *p, size_t start)
{
    p->tok = p->s + start;
    p->tok_len = p->pos - start;
    p->tok_pos = start;
}

/* lex_helper_str: the exact text at the cursor. */
static bool lex_str(struct parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return false;
    size_t start = p->pos;
    p->pos += n;
    set_tok(p, start);
    return true;
}

/* lex_helper_operator_list's rule: a word operator needs a blank after it
 * (consumed); otherwise nothing is consumed. */
static bool lex_word_op(struct parser *p, const char *word)
{
    size_t save = p->pos;
    if (!lex_str(p, word))
        return false;
    if (lex_blank(p)) {
        p->tok = p->s + save;
        p->tok_len = strlen(word);
        p->tok_pos = save;
        return true;
    }
    p->pos = save;
    return false;
}

/* [a-zA-Z]+[a-zA-Z0-9_]* */
static size_t ident_at(const struct parser *p, size_t from)
{
    size_t i = from;
    if (i >= p->len || !is_alpha(p->s[i]))
        return 0;
    while (i < p->len && is_word(p->s[i]))
        i++;
    return i - from;
}

static bool lex_identifier(struct parser *p)
{
    size_t n = ident_at(p, p->pos);
    if (!n)
        return false;
    size_t start = p->pos;
    p->pos += n;
    set_tok(p, start);
    return true;
}

/* identifier ('.' identifier)+, longest */
static bool lex_field_name(struct parser *p)
{
    size_t n = ident_at(p, p->pos), parts = 1;
    if (!n)
        return false;
    while (p->pos + n < p->len && p->s[p->pos + n] == '.') {
        size_t k = ident_at(p, p->pos + n + 1);
        if (!k)
            break;
        n += 1 + k;
        parts++;
    }
    if (parts < 2)
        return false;
    size_t start = p->pos;
    p->pos += n;
    set_tok(p, start);
    return true;
}

/* [^][\"'[:space:]]+ */
static bool lex_field_arg_bare(struct parser *p)
{
    size_t i = p->pos;
    while (i < p->len && p->s[i] != '[' && p->s[i] != ']' && p->s[i] != '"' && p->s[i] != '\'' && !is_space(p->s[i]))
        i++;
    if (i == p->pos)
        return false;
    size_t start = p->pos;
    p->pos = i;
    set_tok(p, start);
    return true;
}

/* 0[xX][0-9a-fA-F]+ */
static bool lex_hex_num(struct parser *p)
{
    if (cur(p) != '0' || (at(p, 1) != 'x' && at(p, 1) != 'X') || !is_hex(at(p, 2)))
        return false;
    size_t start = p->pos;
    p->pos += 2;
    while (p->pos < p->len && is_hex(p->s[p->pos]))
        p->pos++;
    set_tok(p, start);
    return true;
}

/* [+\-]?[0-9]+[\.]?[0-9]*([eE][+\-][0-9]+)? */
static bool lex_num(struct parser *p)
{
    size_t i = p->pos;
    if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
        i++;
    size_t digits = i;
    while (i < p->len && is_digit(p->s[i]))
        i++;
    if (i == digits)
        return false;
    if (i < p->len && p->s[i] == '.') {
        i++;
        while (i < p->len && is_digit(p->s[i]))
            i++;
    }
    if (i + 2 < p->len && (p->s[i] == 'e' || p->s[i] == 'E') && (p->s[i + 1] == '+' || p->s[i + 1] == '-') &&
        is_digit(p->s[i + 2])) {
        i += 2;
        while (i < p->len && is_digit(p->s[i]))
            i++;
    }
    size_t start = p->pos;
    p->pos = i;
    set_tok(p, start);
    return true;
}

/* [^()\"'[:space:]=,]+ */
static bool lex_bare_str(struct parser *p)
{
    size_t i = p->pos;
    while (i < p->len) {
        char c = p->s[i];
        if (c == '(' || c == ')' || c == '"' || c == '\'' || is_space(c) || c == '=' || c == ',')
            break;
        i++;
    }
    if (i == p->pos)
        return false;
    size_t start = p->pos;
    p->pos = i;
    set_tok(p, start);
    return true;
}

/* A quoted string: it ends at the first quote not preceded by a backslash
 * (libs' rule, so "a\\" does not end where it seems to); the token is its
 * unescaped text. An unescaping error is a syntax error there. */
static bool lex_quoted_str(struct parser *p)
{
    char q = cur(p);
    if (q != '"' && q != '\'')
        return false;
    size_t start = p->pos;
    char prev = '\\';
    for (size_t i = start; i < p->len; i++) {
        if (p->s[i] == q && prev != '\\') {
            size_t n = i + 1 - start;
            char *buf = arena_alloc(p->a, n);
            if (!buf) {
                fail_at(p, start, "the condition is too large to parse");
                return false;
            }
            size_t outlen;
            char msg[sizeof(p->err->msg)];
            size_t bad;
            if (filter_unescape(p->s + start, n, buf, &outlen, &bad, msg, sizeof(msg)) != 0) {
                fail_at(p, start + bad, "%s", msg);
                return false;
            }
            buf[outlen] = '\0';
            p->pos = i + 1;
            p->tok = buf;
            p->tok_len = outlen;
            p->tok_pos = start;
            return true;
        }
        prev = p->s[i];
    }
    return false;
}

static int hexval(char c)
{
    if (is_digit(c))
        return c - '0';
    c = (char)(c | 32);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int filter_unescape(const char *tok, size_t n, char *out, size_t *outlen, size_t *bad, char *err, size_t errlen)
{
    char quote = tok[0];
    size_t k = 0, end = n - 1;   /* tok[end] is the closing quote */
    bool esc = false;
    for (size_t i = 1; i < end; i++) {
        char c = tok[i];
        if (!esc) {
            if (c == '\\')
                esc = true;
            else
                out[k++] = c;
            continue;
        }
        esc = false;
        switch (c) {
        case 'b': out[k++] = '\b'; break;
        case 'f': out[k++] = '\f'; break;
        case 'n': out[k++] = '\n'; break;
        case 'r': out[k++] = '\r'; break;
        case 't': out[k++] = '\t'; break;
        case ' ':   /* legacy, as libsinsp: "\ " gives a backslash */
        case '\\': out[k++] = '\\'; break;
        case '/': out[k++] = '/'; break;
        case '"':
        case '\'':
            if (c != quote) {
                *bad = i - 1;
                snprintf(err, errlen, "invalid \\%c escape in a %c-quoted string", c, quote);
                return -1;
            }
            out[k++] = c;
            break;
        case 'x': {
            if (i + 2 >= end) {
                *bad = i - 1;
                snprintf(err, errlen, "truncated \\x escape: it takes two hex digits (\\x41)");
                return -1;
            }
            int hi = hexval(tok[i + 1]), lo = hexval(tok[i + 2]);
            if (hi < 0 || lo < 0) {
                *bad = i - 1;
                snprintf(err, errlen, "invalid \\x escape '\\x%c%c': it takes two hex digits (\\x41)", tok[i + 1],
                         tok[i + 2]);
                return -1;
            }
            out[k++] = (char)(hi << 4 | lo);
            i += 2;
            break;
        }
        default:
            *bad = i - 1;
            snprintf(err, errlen, "unsupported escape sequence \\%c (use \\n \\t \\r \\b \\f \\\\ \\/ \\xHH or the quote)",
                     c);
            return -1;
        }
    }
    *outlen = k;
    return 0;
}

/* ---- tree nodes ---- */

static struct ast *node(struct parser *p, enum ast_kind kind, size_t pos)
{
    struct ast *n = arena_alloc(p->a, sizeof(*n));
    if (!n) {
        fail_at(p, pos, "the condition is too large to parse");
        return NULL;
    }
    memset(n, 0, sizeof(*n));
    n->kind = (uint8_t)kind;
    n->pos = (uint32_t)pos;
    return n;
}

/* The last token as a value node. */
static struct ast *value_node(struct parser *p, bool quoted)
{
    struct ast *n = node(p, AST_VALUE, p->tok_pos);
    if (n) {
        n->text = p->tok;
        n->len = (uint32_t)p->tok_len;
        n->quoted = quoted;
    }
    return n;
}

/* Children grow in the arena (doubling; the old arrays stay behind). */
struct kids {
    struct ast **v;
    uint32_t n, cap;
};

static bool push(struct parser *p, struct kids *k, struct ast *child)
{
    if (!child)
        return false;
    if (k->n == k->cap) {
        uint32_t cap = k->cap ? k->cap * 2 : 4;
        struct ast **v = arena_alloc(p->a, cap * sizeof(*v));
        if (!v) {
            fail_at(p, p->pos, "the condition is too large to parse");
            return false;
        }
        if (k->n)
            memcpy(v, k->v, k->n * sizeof(*v));
        k->v = v;
        k->cap = cap;
    }
    k->v[k->n++] = child;
    return true;
}

static struct ast *with_kids(struct parser *p, enum ast_kind kind, size_t pos, const struct kids *k)
{
    struct ast *n = node(p, kind, pos);
    if (n) {
        n->kids = k->v;
        n->n = k->n;
    }
    return n;
}

/* ---- the grammar ---- */

static const char *const transformers[] = {"tolower(", "toupper(", "b64(", "basename(", "len(", "join(", "concat(",
                                           "getopt("};

/* FieldTransformerType: the name without its '(' in the token. */
static bool lex_transformer_type(struct parser *p)
{
    for (size_t i = 0; i < sizeof(transformers) / sizeof(transformers[0]); i++)
        if (lex_str(p, transformers[i])) {
            p->tok_len--;
            return true;
        }
    return false;
}

static struct ast *parse_or(struct parser *p);
static struct ast *parse_transformer_remainder(struct parser *p, size_t pos);

/* The remainder of '(' Expr ')', after the '('. */
static struct ast *parse_embedded(struct parser *p)
{
    if (!enter(p))
        return NULL;
    lex_blank(p);
    struct ast *child = parse_or(p);
    if (!child)
        return NULL;
    lex_blank(p);
    if (!lex_str(p, ")"))
        return FAIL(p, "syntax error: expected ')'");
    p->depth--;
    return child;
}

/* ('[' (QuotedStr | FieldArgBareStr) ']')? right after a field or a
 * transformer's ')'. */
static bool parse_optional_arg(struct parser *p, struct ast *n)
{
    if (!lex_str(p, "["))
        return true;
    if (!lex_quoted_str(p) && !lex_field_arg_bare(p)) {
        fail_at(p, p->pos, "syntax error: expected a field argument: a quoted string or a bare string");
        return false;
    }
    n->arg = p->tok;
    n->arg_len = (uint32_t)p->tok_len;
    n->has_arg = true;
    if (!lex_str(p, "]")) {
        fail_at(p, p->pos, "syntax error: expected ']'");
        return false;
    }
    return true;
}

/* Field ::= FieldName ('[' FieldArg ']')?, the name just lexed. */
static struct ast *parse_field_remainder(struct parser *p, size_t pos)
{
    if (!enter(p))
        return NULL;
    struct ast *f = node(p, AST_FIELD, pos);
    if (!f)
        return NULL;
    f->text = p->tok;
    f->len = (uint32_t)p->tok_len;
    if (!parse_optional_arg(p, f))
        return NULL;
    p->depth--;
    return f;
}

/* TransformerListArg ::= Field | FieldTransformer | QuotedStr | NumValue */
static struct ast *parse_tlist_arg(struct parser *p)
{
    size_t at_pos = p->pos;
    if (lex_field_name(p))
        return parse_field_remainder(p, at_pos);
    if (lex_transformer_type(p)) {
        size_t tpos = p->tok_pos;
        lex_blank(p);
        return parse_transformer_remainder(p, tpos);
    }
    if (lex_quoted_str(p))
        return value_node(p, true);
    if (lex_hex_num(p) || lex_num(p))
        return value_node(p, false);
    return FAIL(p, "syntax error: expected a transformer list item: a field, a transformer, a quoted string or a number");
}

/* TransformerList ::= '(' (TransformerListArg (',' TransformerListArg)*)? ')', after the '('. */
static struct ast *parse_tlist(struct parser *p, size_t pos)
{
    struct kids k = {0};
    lex_blank(p);
    if (lex_str(p, ")"))
        return with_kids(p, AST_TLIST, pos, &k);
    if (!push(p, &k, parse_tlist_arg(p)))
        return NULL;
    lex_blank(p);
    while (lex_str(p, ",")) {
        lex_blank(p);
        if (!push(p, &k, parse_tlist_arg(p)))
            return NULL;
        lex_blank(p);
    }
    if (!lex_str(p, ")"))
        return FAIL(p, "syntax error: expected ')' closing the transformer list");
    return with_kids(p, AST_TLIST, pos, &k);
}

/* FieldTransformerArg ::= FieldTransformer | Field | QuotedStr | NumValue | TransformerList */
static struct ast *parse_transformer_arg(struct parser *p)
{
    if (!enter(p))
        return NULL;
    lex_blank(p);
    size_t pos = p->pos;
    struct ast *r;
    if (lex_hex_num(p) || lex_num(p))
        r = value_node(p, false);
    else if (lex_quoted_str(p))
        r = value_node(p, true);
    else if (lex_str(p, "("))
        r = parse_tlist(p, pos);
    else if (lex_transformer_type(p))
        r = parse_transformer_remainder(p, pos);
    else if (lex_field_name(p))
        r = parse_field_remainder(p, pos);
    else
        r = p->failed ? NULL
                      : FAIL(p, "syntax error: expected a transformer argument: a field, a transformer, a quoted "
                                "string, a number or a (list)");
    if (r)
        p->depth--;
    return r;
}

/* FieldTransformerTail ::= FieldTransformerArg (',' FieldTransformerArg)* ')' ('[' FieldArg ']')?,
 * the name (without '(') just lexed. */
static struct ast *parse_transformer_remainder(struct parser *p, size_t pos)
{
    const char *name = p->tok;
    size_t name_len = p->tok_len;
    if (!enter(p))
        return NULL;
    lex_blank(p);
    struct kids k = {0};
    do {
        if (!push(p, &k, parse_transformer_arg(p)))
            return NULL;
        lex_blank(p);
    } while (lex_str(p, ","));
    lex_blank(p);
    if (!lex_str(p, ")"))
        return FAIL(p, "syntax error: expected ')' closing the transformer");
    struct ast *t = with_kids(p, AST_TRANSFORM, pos, &k);
    if (!t)
        return NULL;
    t->text = name;
    t->len = (uint32_t)name_len;
    if (!parse_optional_arg(p, t))
        return NULL;
    p->depth--;
    return t;
}

/* 'val(' Field ')' ('[' FieldArg ']')? | FieldTransformer; NULL without
 * failing when neither follows. */
static struct ast *try_transformer_or_val(struct parser *p)
{
    if (!enter(p))
        return NULL;
    lex_blank(p);
    size_t pos = p->pos;
    struct ast *r = NULL;
    if (lex_str(p, "val(")) {
        lex_blank(p);
        size_t fpos = p->pos;
        if (!lex_field_name(p))
            return FAIL(p, "syntax error: expected a field within 'val' (val(proc.name))");
        struct kids k = {0};
        if (!push(p, &k, parse_field_remainder(p, fpos)))
            return NULL;
        lex_blank(p);
        if (!lex_str(p, ")"))
            return FAIL(p, "syntax error: expected ')' closing the transformer");
        r = with_kids(p, AST_TRANSFORM, pos, &k);
        if (!r)
            return NULL;
        r->text = "val";
        r->len = 3;
        if (!parse_optional_arg(p, r))
            return NULL;
    } else if (lex_transformer_type(p)) {
        lex_blank(p);
        r = parse_transformer_remainder(p, pos);
        if (!r)
            return NULL;
    }
    p->depth--;
    return r;
}

/* (v, v, ...) after list operators and modifiers: quoted or bare strings
 * only; NULL without failing when no '(' follows. */
static struct ast *try_list(struct parser *p, bool *found)
{
    size_t pos = p->pos;
    *found = false;
    if (!lex_str(p, "("))
        return NULL;
    *found = true;
    struct kids k = {0};
    lex_blank(p);
    /* Each item is libs' parse_str_value_or_transformer(true), a counted
     * production: at the depth limit the first one fails quietly (the list
     * is then empty, or refused when it is not), a later one loudly. */
    bool deep = p->depth + 1 >= AST_MAX_DEPTH;
    lex_blank(p);
    bool quoted = !deep && lex_quoted_str(p);
    if (p->failed)
        return NULL;
    if (quoted || (!deep && lex_bare_str(p))) {
        if (!push(p, &k, value_node(p, quoted)))
            return NULL;
        lex_blank(p);
        while (lex_str(p, ",")) {
            if (deep && !enter(p))
                return NULL;
            lex_blank(p);
            quoted = lex_quoted_str(p);
            if (p->failed)
                return NULL;
            if (!quoted && !lex_bare_str(p))
                return FAIL(p, "syntax error: expected a value after ','");
            if (!push(p, &k, value_node(p, quoted)))
                return NULL;
            lex_blank(p);
        }
    }
    if (!lex_str(p, ")"))
        return FAIL(p, "syntax error: expected ')' closing the list");
    return with_kids(p, AST_LIST, pos, &k);
}

/* ListValue ::= '(' ... ')' | Identifier (after a modifier) */
static struct ast *parse_list_value(struct parser *p)
{
    if (!enter(p))
        return NULL;
    lex_blank(p);
    bool found;
    struct ast *r = try_list(p, &found);
    if (!found && !p->failed) {
        if (lex_identifier(p))
            r = value_node(p, false);
        else
            r = FAIL(p, "syntax error: expected a list: '(' or a list name");
    }
    if (r)
        p->depth--;
    return r;
}

/* after in, intersects, pmatch: a list, a transformer, or a list name */
static struct ast *parse_list_value_or_transformer(struct parser *p)
{
    if (!enter(p))
        return NULL;
    lex_blank(p);
    bool found;
    struct ast *r = try_list(p, &found);
    if (!found && !p->failed) {
        r = try_transformer_or_val(p);
        if (!r && !p->failed) {
            if (lex_identifier(p))
                r = value_node(p, false);
            else
                r = FAIL(p, "syntax error: expected a list: '(' or a list name");
        }
    }
    if (r)
        p->depth--;
    return r;
}

static struct ast *parse_num_value_or_transformer(struct parser *p)
{
    if (!enter(p))
        return NULL;
    lex_blank(p);
    struct ast *r = try_transformer_or_val(p);
    if (!r && !p->failed) {
        if (lex_hex_num(p) || lex_num(p))
            r = value_node(p, false);
        else
            r = FAIL(p, "syntax error: expected a number after a numeric operator");
    }
    if (r)
        p->depth--;
    return r;
}

static struct ast *parse_str_value_or_transformer(struct parser *p)
{
    if (!enter(p))
        return NULL;
    lex_blank(p);
    struct ast *r = try_transformer_or_val(p);
    if (!r && !p->failed) {
        bool quoted = lex_quoted_str(p);
        if (quoted || (!p->failed && lex_bare_str(p)))
            r = value_node(p, quoted);
        else
            r = FAIL(p, "syntax error: expected a value");
    }
    if (r)
        p->depth--;
    return r;
}

/* bool_keyword_follows: and, or, not, as a whole word */
static bool bool_keyword_follows(const struct parser *p)
{
    static const char *const kw[] = {"and", "or", "not"};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(kw[i]);
        if (p->len - p->pos >= n && memcmp(p->s + p->pos, kw[i], n) == 0) {
            char after = at(p, n);
            if (!(is_alpha(after) || is_digit(after)))
                return true;
        }
    }
    return false;
}

static const struct {
    const char *text;
    enum filter_op op;
    bool word;   /* needs a blank after it */
} str_ops[] = {
    {"==", OP_EQ, false}, {"=", OP_EQ, false}, {"!=", OP_NE, false}, {"glob", OP_GLOB, true},
    {"iglob", OP_IGLOB, true}, {"contains", OP_CONTAINS, true}, {"icontains", OP_ICONTAINS, true},
    {"bcontains", OP_BCONTAINS, true}, {"startswith", OP_STARTSWITH, true}, {"bstartswith", OP_BSTARTSWITH, true},
    {"endswith", OP_ENDSWITH, true}, {"regex", OP_REGEX, true},
};

static struct ast *binary(struct parser *p, struct ast *left, enum filter_op op, enum filter_mod mod,
                          struct ast *right, size_t pos, size_t op_pos)
{
    if (!right)
        return NULL;
    struct kids k = {0};
    if (!push(p, &k, left) || !push(p, &k, right))
        return NULL;
    struct ast *n = with_kids(p, AST_BINARY, pos, &k);
    if (n) {
        n->op = (uint8_t)op;
        n->mod = (uint8_t)mod;
        n->op_pos = (uint32_t)op_pos;
    }
    return n;
}

/* Condition ::= UnaryOperator | NumOperator ... | StrOperator [modifier] ... | ListOperator ... */
static struct ast *parse_condition(struct parser *p, struct ast *left, size_t pos)
{
    if (!enter(p))
        return NULL;
    lex_blank(p);
    struct ast *r = NULL;
    size_t op_pos = p->pos;
    if (lex_str(p, "exists")) {
        struct kids k = {0};
        if (!push(p, &k, left))
            return NULL;
        r = with_kids(p, AST_UNARY, pos, &k);
        if (r) {
            r->op = OP_EXISTS;
            r->op_pos = (uint32_t)op_pos;
        }
        goto done;
    }
    lex_blank(p);
    op_pos = p->pos;
    static const struct {
        const char *text;
        enum filter_op op;
    } num_ops[] = {{"<=", OP_LE}, {"<", OP_LT}, {">=", OP_GE}, {">", OP_GT}};
    for (size_t i = 0; i < 4; i++)
        if (lex_str(p, num_ops[i].text)) {
            r = binary(p, left, num_ops[i].op, MOD_NONE, parse_num_value_or_transformer(p), pos, op_pos);
            goto done;
        }
    for (size_t i = 0; i < sizeof(str_ops) / sizeof(str_ops[0]); i++) {
        if (str_ops[i].word ? !lex_word_op(p, str_ops[i].text) : !lex_str(p, str_ops[i].text))
            continue;
        /* A modifier follows a blank (word operators consumed theirs), needs
         * its own blank, then a list or a list name that is not and/or/not. */
        bool had_blank = str_ops[i].word || lex_blank(p);
        size_t save = p->pos;
        static const struct {
            const char *text;
            enum filter_mod mod;
        } mods[] = {{"oneof", MOD_ONEOF}, {"anyof", MOD_ANYOF}, {"allof", MOD_ALLOF}};
        for (size_t m = 0; had_blank && m < 3; m++) {
            if (!lex_word_op(p, mods[m].text))
                continue;
            if ((cur(p) == '(' || ident_at(p, p->pos)) && !bool_keyword_follows(p)) {
                r = binary(p, left, str_ops[i].op, mods[m].mod, parse_list_value(p), pos, op_pos);
                goto done;
            }
            p->pos = save;
            break;
        }
        r = binary(p, left, str_ops[i].op, MOD_NONE, parse_str_value_or_transformer(p), pos, op_pos);
        goto done;
    }
    static const struct {
        const char *text;
        enum filter_op op;
    } list_ops[] = {{"intersects", OP_INTERSECTS}, {"in", OP_IN}, {"pmatch", OP_PMATCH}};
    for (size_t i = 0; i < 3; i++)
        if (lex_str(p, list_ops[i].text)) {
            r = binary(p, left, list_ops[i].op, MOD_NONE, parse_list_value_or_transformer(p), pos, op_pos);
            goto done;
        }
    return FAIL(p, "syntax error: expected an operator: =, ==, !=, <, <=, >, >=, contains, icontains, bcontains, "
                   "startswith, bstartswith, endswith, glob, iglob, regex, in, intersects, pmatch or exists");
done:
    if (r)
        p->depth--;
    return r;
}

/* Check ::= Field Condition | FieldTransformer Condition | Identifier | '(' Expr ')' */
static struct ast *parse_check(struct parser *p)
{
    if (!enter(p))
        return NULL;
    lex_blank(p);
    size_t pos = p->pos;
    struct ast *r;
    if (lex_str(p, "(")) {
        r = parse_embedded(p);
    } else if (lex_field_name(p)) {
        struct ast *left = parse_field_remainder(p, pos);
        r = left ? parse_condition(p, left, pos) : NULL;
    } else if (lex_transformer_type(p)) {
        lex_blank(p);
        struct ast *left = parse_transformer_remainder(p, pos);
        r = left ? parse_condition(p, left, pos) : NULL;
    } else if (lex_identifier(p)) {
        r = node(p, AST_IDENT, pos);
        if (r) {
            r->text = p->tok;
            r->len = (uint32_t)p->tok_len;
        }
    } else {
        r = FAIL(p, "syntax error: expected '(', a field check or a macro name");
    }
    if (r)
        p->depth--;
    return r;
}

/* NotExpr ::= ('not' [[:space:]]+)* ('not(' Expr ')' | Check) */
static struct ast *parse_not(struct parser *p)
{
    if (!enter(p))
        return NULL;
    lex_blank(p);
    size_t pos = p->pos;
    bool neg = false;
    while (cur(p) == 'n' && at(p, 1) == 'o' && at(p, 2) == 't' && is_space(at(p, 3))) {
        p->pos += 3;
        while (p->pos < p->len && is_space(p->s[p->pos]))
            p->pos++;
        neg = !neg;
    }
    struct ast *child;
    if (lex_str(p, "not(")) {
        neg = !neg;
        child = parse_embedded(p);
    } else {
        child = parse_check(p);
    }
    if (!child)
        return NULL;
    p->depth--;
    if (!neg)
        return child;
    struct kids k = {0};
    if (!push(p, &k, child))
        return NULL;
    return with_kids(p, AST_NOT, pos, &k);
}

/* One level of and/or: Next (word (' ' Next | '(' Expr ')'))* */
static struct ast *parse_level(struct parser *p, const char *word, enum ast_kind kind, struct ast *(*next)(struct parser *))
{
    if (!enter(p))
        return NULL;
    size_t pos = p->pos;
    struct kids k = {0};
    lex_blank(p);
    if (!push(p, &k, next(p)))
        return NULL;
    lex_blank(p);
    while (lex_str(p, word)) {
        struct ast *child;
        if (!lex_blank(p)) {
            if (!lex_str(p, "("))
                return FAIL(p, "syntax error: expected a blank or '(' after '%s'", word);
            child = parse_embedded(p);
        } else {
            child = next(p);
        }
        if (!push(p, &k, child))
            return NULL;
        lex_blank(p);
    }
    p->depth--;
    if (k.n == 1)
        return k.v[0];
    return with_kids(p, kind, pos, &k);
}

static struct ast *parse_and(struct parser *p) { return parse_level(p, "and", AST_AND, parse_not); }
static struct ast *parse_or(struct parser *p) { return parse_level(p, "or", AST_OR, parse_and); }

struct ast *ast_parse(struct arena *a, const char *text, size_t len, struct ast_error *err)
{
    struct parser p = {.a = a, .s = text, .len = len, .err = err};
    memset(err, 0, sizeof(*err));
    lex_blank(&p);
    if (p.pos == len) {
        fail_at(&p, 0, "the condition is empty");
        return NULL;
    }
    p.pos = 0;
    struct ast *root = parse_or(&p);
    if (!root)
        return NULL;
    if (p.pos != len) {
        fail_at(&p, p.pos, "syntax error: unexpected text: expected 'and', 'or' or the end of the condition");
        return NULL;
    }
    return root;
}

struct ast *ast_parse_operand(struct arena *a, const char *text, size_t len, struct ast_error *err)
{
    struct parser p = {.a = a, .s = text, .len = len, .err = err};
    memset(err, 0, sizeof(*err));
    struct ast *r = NULL;
    if (lex_field_name(&p)) {
        r = parse_field_remainder(&p, 0);
    } else if (lex_transformer_type(&p)) {
        lex_blank(&p);
        r = parse_transformer_remainder(&p, 0);
    } else {
        fail_at(&p, 0, "expected a field or a transformer");
        return NULL;
    }
    if (r && p.pos != len) {
        fail_at(&p, p.pos, "unexpected text after the field");
        return NULL;
    }
    return r;
}
