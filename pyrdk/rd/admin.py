"""The Admin API on a ``Handle``: ``rd_kafka_CreateTopics``, ``rd_kafka_DeleteTopics``,
``rd_kafka_DescribeConsumerGroups`` (for the group coordinator) and ``rd_kafka_list_groups``.

Each call posts its request with a private result queue and waits for the one event.
"""
import collections

from pyrdk._ffi import ffi, lib, string
from pyrdk.exceptions import KafkaTimeoutError
from pyrdk.rd import errors
from pyrdk.rd.handle import BrokerMetadata
from pyrdk.rd.queue import Queue

GroupMember = collections.namedtuple("GroupMember", "member_id client_id client_host metadata assignment")
GroupInfo = collections.namedtuple("GroupInfo", "group_id broker error state protocol_type protocol members")


def _options(rk, api, timeout_ms):
    opts = ffi.gc(lib.rd_kafka_AdminOptions_new(rk, api), lib.rd_kafka_AdminOptions_destroy)
    buf = errors.errstr()
    errors.check(lib.rd_kafka_AdminOptions_set_request_timeout(opts, timeout_ms, buf, errors.ERRSTR_SIZE))
    if api != lib.RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS:
        errors.check(lib.rd_kafka_AdminOptions_set_operation_timeout(opts, timeout_ms, buf,
                                                                     errors.ERRSTR_SIZE))
    return opts


def _wait(queue, timeout_ms, what):
    event = queue.poll_event(timeout_ms + 1000)
    if event == ffi.NULL:
        raise KafkaTimeoutError("%s: no answer within %d ms" % (what, timeout_ms))
    err = lib.rd_kafka_event_error(event)
    if err:
        reason = string(lib.rd_kafka_event_error_string(event))
        lib.rd_kafka_event_destroy(event)
        raise errors.exception(err, what, reason=reason)
    return event


def _request(rk, api, timeout_ms, what, post, read):
    """Post one request with a private result queue (``post(options, queue)``), wait for its
    event and return ``read(event)``; the event, queue and options are freed here."""
    queue = Queue(rk)
    try:
        post(_options(rk, api, timeout_ms), queue._ptr)
        event = _wait(queue, timeout_ms, what)
        try:
            return read(event)
        finally:
            lib.rd_kafka_event_destroy(event)
    finally:
        queue.destroy()


def _topic_results(result_topics, result):
    """``{name: None or exception}`` from a CreateTopics or DeleteTopics result."""
    count = ffi.new("size_t *")
    results = result_topics(result, count)
    out = {}
    for i in range(count[0]):
        name = string(lib.rd_kafka_topic_result_name(results[i]))
        err = lib.rd_kafka_topic_result_error(results[i])
        out[name] = errors.exception(err, name, reason=string(lib.rd_kafka_topic_result_error_string(
            results[i]))) if err else None
    return out


def create_topics(handle, topics, timeout_ms=10000):
    """Create ``(name, num_partitions, replication_factor, config)`` topics
    (``rd_kafka_CreateTopics``). Returns ``{name: None or exception}``."""
    with handle.use() as rk:
        new_topics = []
        try:
            for name, num_partitions, replication_factor, config in topics:
                buf = errors.errstr()
                nt = lib.rd_kafka_NewTopic_new(name.encode(), num_partitions, replication_factor,
                                               buf, errors.ERRSTR_SIZE)
                if nt == ffi.NULL:
                    raise ValueError("cannot create topic %r: %s" % (name, string(buf)))
                new_topics.append(nt)
                for key, value in (config or {}).items():
                    errors.check(lib.rd_kafka_NewTopic_set_config(nt, key.encode(), str(value).encode()),
                                 "topic config %s=%s" % (key, value))
            array = ffi.new("rd_kafka_NewTopic_t *[]", new_topics)
            return _request(
                rk, lib.RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout_ms, "create topics",
                lambda options, queue: lib.rd_kafka_CreateTopics(rk, array, len(new_topics), options, queue),
                lambda event: _topic_results(lib.rd_kafka_CreateTopics_result_topics,
                                             lib.rd_kafka_event_CreateTopics_result(event)))
        finally:
            for nt in new_topics:
                lib.rd_kafka_NewTopic_destroy(nt)


def delete_topics(handle, names, timeout_ms=10000):
    """Delete topics by name (``rd_kafka_DeleteTopics``). Returns ``{name: None or exception}``."""
    with handle.use() as rk:
        dts = [lib.rd_kafka_DeleteTopic_new(name.encode()) for name in names]
        try:
            array = ffi.new("rd_kafka_DeleteTopic_t *[]", dts)
            return _request(
                rk, lib.RD_KAFKA_ADMIN_OP_DELETETOPICS, timeout_ms, "delete topics",
                lambda options, queue: lib.rd_kafka_DeleteTopics(rk, array, len(dts), options, queue),
                lambda event: _topic_results(lib.rd_kafka_DeleteTopics_result_topics,
                                             lib.rd_kafka_event_DeleteTopics_result(event)))
        finally:
            for dt in dts:
                lib.rd_kafka_DeleteTopic_destroy(dt)


def _coordinator(event, group):
    count = ffi.new("size_t *")
    descs = lib.rd_kafka_DescribeConsumerGroups_result_groups(
        lib.rd_kafka_event_DescribeConsumerGroups_result(event), count)
    for i in range(count[0]):
        err = lib.rd_kafka_ConsumerGroupDescription_error(descs[i])
        if err != ffi.NULL:
            errors.raise_for_error(err, "describe group %r" % group, destroy=False)
        node = lib.rd_kafka_ConsumerGroupDescription_coordinator(descs[i])
        if node != ffi.NULL:
            return BrokerMetadata(lib.rd_kafka_Node_id(node), string(lib.rd_kafka_Node_host(node)),
                                  lib.rd_kafka_Node_port(node))
    return None


def group_coordinator(handle, group, timeout_ms=10000):
    """The coordinator of ``group`` as a ``BrokerMetadata`` (``rd_kafka_DescribeConsumerGroups``)."""
    with handle.use() as rk:
        name = ffi.new("char[]", group.encode())  # must outlive the call, as must the array
        groups = ffi.new("const char *[]", [name])
        return _request(
            rk, lib.RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS, timeout_ms, "describe group %r" % group,
            lambda options, queue: lib.rd_kafka_DescribeConsumerGroups(rk, groups, 1, options, queue),
            lambda event: _coordinator(event, group))


def list_groups(handle, group=None, timeout_ms=10000):
    """``rd_kafka_list_groups``: every group (or one, described) as ``GroupInfo``."""
    out = ffi.new("const struct rd_kafka_group_list **")
    with handle.use() as rk:
        err = lib.rd_kafka_list_groups(rk, ffi.NULL if group is None else group.encode(), out,
                                       timeout_ms)
        if err:
            raise handle._with_reason(errors.exception(err, "list groups"))
        lst = out[0]
        try:
            result = []
            for i in range(lst.group_cnt):
                g = lst.groups[i]
                members = [GroupMember(string(m.member_id), string(m.client_id), string(m.client_host),
                                       ffi.unpack(ffi.cast("char *", m.member_metadata),
                                                  m.member_metadata_size)
                                       if m.member_metadata != ffi.NULL else b"",
                                       ffi.unpack(ffi.cast("char *", m.member_assignment),
                                                  m.member_assignment_size)
                                       if m.member_assignment != ffi.NULL else b"")
                           for m in (g.members[j] for j in range(g.member_cnt))]
                result.append(GroupInfo(string(g.group), BrokerMetadata(g.broker.id, string(g.broker.host),
                                                                        g.broker.port),
                                        g.err, string(g.state), string(g.protocol_type),
                                        string(g.protocol), members))
            return result
        finally:
            lib.rd_kafka_group_list_destroy(lst)
