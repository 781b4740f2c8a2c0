/* fields_container.c - container.*: the container an event comes from. */
#include "fields_class.h"
#include "gvisor/container.pb-c.h"

enum {
    F_CONTAINER_ID = FIELD_BASE_CONTAINER,
};

static bool is_hex64(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return false;
    return n == 64;
}

static void container_extract(struct evctx *x, const struct fieldref *f, struct fval *v, struct strbuf *buf)
{
    (void)buf;
    const Gvisor__Common__ContextData *ctx = x->ev->context;
    switch (f->id) {
    case F_CONTAINER_ID: {
        const char *id = x->ev->header.message_type == 1 ? ((const Gvisor__Container__Start *)x->ev->msg)->id : NULL;
        if (!id || !id[0])
            id = ctx ? ctx->container_id : NULL;
        if (!id || !id[0])
            return;
        fv_str(v, id, is_hex64(id) ? 12 : strlen(id));   /* Falco's short form of a 64-hex id */
        return;
    }
    default:
        return;
    }
}

static const struct field_def container_defs[] = {
    {"container.id", FT_STR, FA_NONE, F_CONTAINER_ID, RULES_CTX_CONTAINER_ID, 0, 0, FIELD_REPORTED},
};

const struct field_class fields_container_class = {
    "container", container_defs, sizeof(container_defs) / sizeof(container_defs[0]), container_extract,
};
