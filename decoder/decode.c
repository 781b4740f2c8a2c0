#include "decode.h"

#include <string.h>

#include "gvisor/common.pb-c.h"
#include "gvisor/container.pb-c.h"
#include "gvisor/sentry.pb-c.h"
#include "gvisor/syscall.pb-c.h"

/* message_type -> payload message, from the wire-format table. */
static const ProtobufCMessageDescriptor *const type_descriptors[DECODE_TYPE_MAX + 1] = {
    [1] = &gvisor__container__start__descriptor,
    [2] = &gvisor__sentry__clone_info__descriptor,
    [3] = &gvisor__sentry__execve_info__descriptor,
    [4] = &gvisor__sentry__exit_notify_parent_info__descriptor,
    [5] = &gvisor__sentry__task_exit__descriptor,
    [6] = &gvisor__syscall__syscall__descriptor,
    [7] = &gvisor__syscall__open__descriptor,
    [8] = &gvisor__syscall__close__descriptor,
    [9] = &gvisor__syscall__read__descriptor,
    [10] = &gvisor__syscall__connect__descriptor,
    [11] = &gvisor__syscall__execve__descriptor,
    [12] = &gvisor__syscall__socket__descriptor,
    [13] = &gvisor__syscall__chdir__descriptor,
    [14] = &gvisor__syscall__setid__descriptor,
    [15] = &gvisor__syscall__setresid__descriptor,
    [16] = &gvisor__syscall__prlimit__descriptor,
    [17] = &gvisor__syscall__pipe__descriptor,
    [18] = &gvisor__syscall__fcntl__descriptor,
    [19] = &gvisor__syscall__dup__descriptor,
    [20] = &gvisor__syscall__signalfd__descriptor,
    [21] = &gvisor__syscall__chroot__descriptor,
    [22] = &gvisor__syscall__eventfd__descriptor,
    [23] = &gvisor__syscall__clone__descriptor,
    [24] = &gvisor__syscall__bind__descriptor,
    [25] = &gvisor__syscall__accept__descriptor,
    [26] = &gvisor__syscall__timerfd_create__descriptor,
    [27] = &gvisor__syscall__timerfd_set_time__descriptor,
    [28] = &gvisor__syscall__timerfd_get_time__descriptor,
    [29] = &gvisor__syscall__fork__descriptor,
    [30] = &gvisor__syscall__inotify_init__descriptor,
    [31] = &gvisor__syscall__inotify_add_watch__descriptor,
    [32] = &gvisor__syscall__inotify_rm_watch__descriptor,
    [33] = &gvisor__syscall__socket_pair__descriptor,
    [34] = &gvisor__syscall__write__descriptor,
    [35] = &gvisor__sentry__mmap_info__descriptor,
    [36] = &gvisor__syscall__mmap__descriptor,
    [37] = &gvisor__syscall__listen__descriptor,
    [38] = &gvisor__syscall__ptrace__descriptor,
};

void decoder_init(struct decoder *d)
{
    memset(d, 0, sizeof(*d));
    for (int t = 1; t <= DECODE_TYPE_MAX; t++) {
        const ProtobufCMessageDescriptor *desc = type_descriptors[t];
        struct decode_layout *l = &d->types[t];
        l->desc = desc;
        l->context = protobuf_c_message_descriptor_get_field_by_name(desc, "context_data");
        l->exit = protobuf_c_message_descriptor_get_field_by_name(desc, "exit");
        l->sysno = protobuf_c_message_descriptor_get_field_by_name(desc, "sysno");
    }
}

const char *decode_type_name(uint16_t message_type)
{
    if (message_type == 0 || message_type > DECODE_TYPE_MAX)
        return NULL;
    const ProtobufCEnumValue *v =
        protobuf_c_enum_descriptor_get_value(&gvisor__common__message_type__descriptor, message_type);
    if (!v)
        return NULL;
    static const char prefix[] = "MESSAGE_";
    return strncmp(v->name, prefix, sizeof(prefix) - 1) == 0 ? v->name + sizeof(prefix) - 1 : v->name;
}

static const void *field_ptr(const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f)
{
    return (const char *)msg + f->offset;
}

static void extract_common(const struct decode_layout *l, struct event *ev)
{
    if (l->context)
        ev->context = *(Gvisor__Common__ContextData *const *)field_ptr(ev->msg, l->context);
    if (l->sysno) {
        ev->has_sysno = true;
        ev->sysno = *(const uint64_t *)field_ptr(ev->msg, l->sysno);
    }
    if (l->exit) {
        const Gvisor__Syscall__Exit *exit = *(Gvisor__Syscall__Exit *const *)field_ptr(ev->msg, l->exit);
        if (exit) {
            ev->is_exit = true;
            ev->result = exit->result;
            ev->errorno = exit->errorno;
        }
    }
}

void decode_event(const struct decoder *d, struct arena *arena, const struct wire_header *header,
                  const uint8_t *raw, size_t len, struct event *ev)
{
    ev->raw = raw;
    ev->raw_len = (uint32_t)len;
    ev->header = *header;
    ev->msg = NULL;
    ev->layout = NULL;
    ev->context = NULL;
    ev->has_sysno = ev->is_exit = false;
    ev->sysno = 0;
    ev->result = ev->errorno = 0;

    uint16_t type = header->message_type;
    if (type == 0 || type > DECODE_TYPE_MAX) {
        ev->status = DECODE_UNKNOWN_TYPE;
        return;
    }
    const struct decode_layout *l = &d->types[type];
    size_t payload_len = len - header->header_size;

    /* Cap this unpack's memory so a crafted payload fails here instead of
     * eating the batch: what it may use is proportional to its size. */
    size_t saved_limit = arena->limit;
    size_t budget = payload_len * DECODE_INFLATION + DECODE_OVERHEAD;
    if (budget < arena_remaining(arena))
        arena->limit = arena->used + budget;
    ev->msg = protobuf_c_message_unpack(l->desc, &arena->pb, payload_len, raw + header->header_size);
    arena->limit = saved_limit;

    if (!ev->msg) {
        ev->status = DECODE_BAD_PAYLOAD;
        return;
    }
    ev->status = DECODE_OK;
    ev->layout = l;
    extract_common(l, ev);
}

size_t decode_value_size(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 4;
    }
}
