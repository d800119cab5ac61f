"""The Admin API on a ``Handle``: topics (``rd_kafka_CreateTopics``, ``rd_kafka_DeleteTopics``,
``rd_kafka_CreatePartitions``, ``rd_kafka_DeleteRecords``), configs (``rd_kafka_DescribeConfigs``,
``rd_kafka_IncrementalAlterConfigs``), consumer groups (``rd_kafka_ListConsumerGroups``,
``rd_kafka_DescribeConsumerGroups``, ``rd_kafka_DeleteGroups``, ``rd_kafka_ListConsumerGroupOffsets``,
``rd_kafka_AlterConsumerGroupOffsets``) and ``rd_kafka_list_groups``.

Each call posts its request with a private result queue and waits for the one event.
"""
import collections
import time

from pyrdk._ffi import ffi, lib, string
from pyrdk.exceptions import KafkaException, KafkaTimeoutError
from pyrdk.rd import errors, partitions
from pyrdk.rd.handle import SLICE_MS, BrokerMetadata
from pyrdk.rd.queue import Queue

GroupMember = collections.namedtuple("GroupMember", "member_id client_id client_host metadata assignment")
GroupInfo = collections.namedtuple("GroupInfo", "group_id broker error state protocol_type protocol members")
GroupListing = collections.namedtuple("GroupListing", "group_id is_simple state")
MemberDescription = collections.namedtuple("MemberDescription",
                                           "member_id client_id host group_instance_id assignment")
GroupDescription = collections.namedtuple("GroupDescription",
                                          "group_id is_simple state partition_assignor coordinator members")
ConfigEntry = collections.namedtuple("ConfigEntry", "name value source is_default is_read_only is_sensitive")

RESOURCE_TYPES = {"topic": lib.RD_KAFKA_RESOURCE_TOPIC, "broker": lib.RD_KAFKA_RESOURCE_BROKER}
ALTER_OPS = {"set": 0, "delete": 1, "append": 2, "subtract": 3}  # rd_kafka_AlterConfigOpType_t

# The requests that take an operation timeout (the time the broker may take to finish).
_OPERATIONS = (lib.RD_KAFKA_ADMIN_OP_CREATETOPICS, lib.RD_KAFKA_ADMIN_OP_DELETETOPICS,
               lib.RD_KAFKA_ADMIN_OP_CREATEPARTITIONS, lib.RD_KAFKA_ADMIN_OP_DELETERECORDS)


def _options(rk, api, timeout_ms):
    opts = ffi.gc(lib.rd_kafka_AdminOptions_new(rk, api), lib.rd_kafka_AdminOptions_destroy)
    buf = errors.errstr()
    errors.check(lib.rd_kafka_AdminOptions_set_request_timeout(opts, timeout_ms, buf, errors.ERRSTR_SIZE))
    if api in _OPERATIONS:
        errors.check(lib.rd_kafka_AdminOptions_set_operation_timeout(opts, timeout_ms, buf,
                                                                     errors.ERRSTR_SIZE))
    return opts


def _wait(handle, queue, timeout_ms, what):
    """The result event, waited for in slices (``SLICE_MS``) so that Ctrl-C and ``close()``
    from another thread get through (the ``close()`` ends the wait with the handle's
    exception); ``KafkaTimeoutError`` after ``timeout_ms`` and a second."""
    deadline = time.monotonic() + (timeout_ms + 1000) / 1000.0
    event = ffi.NULL
    while event == ffi.NULL:
        if handle.closing:
            raise handle.closed_while(what)
        remaining_ms = (deadline - time.monotonic()) * 1000
        if remaining_ms <= 0:
            raise KafkaTimeoutError("%s: no answer within %d ms" % (what, timeout_ms))
        event = queue.poll_event(int(min(SLICE_MS, remaining_ms)))
    err = lib.rd_kafka_event_error(event)
    if err:
        reason = string(lib.rd_kafka_event_error_string(event))
        lib.rd_kafka_event_destroy(event)
        raise errors.exception(err, what, reason=reason)
    return event


def _request(handle, rk, api, timeout_ms, what, post, read):
    """Post one request with a private result queue (``post(options, queue)``), wait for its
    event and return ``read(event)``; the event, queue and options are freed here."""
    queue = Queue(rk)
    try:
        post(_options(rk, api, timeout_ms), queue._ptr)
        event = _wait(handle, queue, timeout_ms, what)
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
                handle, rk, lib.RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout_ms, "create topics",
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
                handle, rk, lib.RD_KAFKA_ADMIN_OP_DELETETOPICS, timeout_ms, "delete topics",
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
            handle, rk, lib.RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS, timeout_ms, "describe group %r" % group,
            lambda options, queue: lib.rd_kafka_DescribeConsumerGroups(rk, groups, 1, options, queue),
            lambda event: _coordinator(event, group))


def list_groups(handle, group=None, timeout_ms=10000):
    """``rd_kafka_list_groups`` (see :meth:`pyrdk.rd.handle.Handle.blocking`): every group
    (or one, described) as ``GroupInfo``."""
    err, result = handle.blocking(lambda rk: _list_groups(rk, group, timeout_ms), timeout_ms)
    if err:
        raise handle._with_reason(errors.exception(err, "list groups"))
    return result


def _list_groups(rk, group, timeout_ms):
    """``rd_kafka_list_groups``: its error code, and its list read and freed."""
    out = ffi.new("const struct rd_kafka_group_list **")
    err = lib.rd_kafka_list_groups(rk, ffi.NULL if group is None else group.encode(), out, timeout_ms)
    if err:
        if err == errors.PARTIAL:  # some brokers did not answer: the list of the others is ours to free
            lib.rd_kafka_group_list_destroy(out[0])
        return err, None
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
        return 0, result
    finally:
        lib.rd_kafka_group_list_destroy(lst)


def _cstrings(names):
    """``const char *[]`` of ``names``, with the buffers that must outlive the call."""
    keep = [ffi.new("char[]", n.encode()) for n in names]
    return ffi.new("const char *[]", keep), keep


def _group_partitions(results, count, what):
    """``{group: [TopicPartition]}`` of a group result array; a group's error is raised."""
    out = {}
    for i in range(count):
        name = string(lib.rd_kafka_group_result_name(results[i]))
        errors.raise_for_error(lib.rd_kafka_group_result_error(results[i]), "%s %r" % (what, name),
                               destroy=False)
        c_list = lib.rd_kafka_group_result_partitions(results[i])
        out[name] = partitions.from_c(c_list) if c_list != ffi.NULL else []
    return out


def list_consumer_groups(handle, timeout_ms=10000):
    """Every group the brokers know, as ``GroupListing(group_id, is_simple, state)``
    (``rd_kafka_ListConsumerGroups``); a broker that could not answer raises."""
    def read(event):
        result = lib.rd_kafka_event_ListConsumerGroups_result(event)
        count = ffi.new("size_t *")
        errs = lib.rd_kafka_ListConsumerGroups_result_errors(result, count)
        if count[0]:
            errors.raise_for_error(errs[0], "list groups", destroy=False)
        valid = lib.rd_kafka_ListConsumerGroups_result_valid(result, count)
        return [GroupListing(string(lib.rd_kafka_ConsumerGroupListing_group_id(g)),
                             bool(lib.rd_kafka_ConsumerGroupListing_is_simple_consumer_group(g)),
                             _state(lib.rd_kafka_ConsumerGroupListing_state(g)))
                for g in (valid[i] for i in range(count[0]))]

    with handle.use() as rk:
        return _request(handle, rk, lib.RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS, timeout_ms, "list groups",
                        lambda options, queue: lib.rd_kafka_ListConsumerGroups(rk, options, queue), read)


def _state(code):
    """A group state as Kafka names it (``Stable``, ``Empty``...)."""
    return string(lib.rd_kafka_consumer_group_state_name(code), "Unknown")


def _member(m):
    assignment = lib.rd_kafka_MemberDescription_assignment(m)
    c_list = lib.rd_kafka_MemberAssignment_partitions(assignment) if assignment != ffi.NULL else ffi.NULL
    return MemberDescription(string(lib.rd_kafka_MemberDescription_consumer_id(m), ""),
                             string(lib.rd_kafka_MemberDescription_client_id(m), ""),
                             string(lib.rd_kafka_MemberDescription_host(m), ""),
                             string(lib.rd_kafka_MemberDescription_group_instance_id(m)),
                             [(tp.topic, tp.partition) for tp in
                              (partitions.from_c(c_list) if c_list != ffi.NULL else [])])


def describe_consumer_groups(handle, groups, timeout_ms=10000):
    """``{group_id: GroupDescription}`` with state, assignor, coordinator and members with
    their assignments (``rd_kafka_DescribeConsumerGroups``); a group's error is raised."""
    def read(event):
        count = ffi.new("size_t *")
        descs = lib.rd_kafka_DescribeConsumerGroups_result_groups(
            lib.rd_kafka_event_DescribeConsumerGroups_result(event), count)
        out = {}
        for d in (descs[i] for i in range(count[0])):
            group = string(lib.rd_kafka_ConsumerGroupDescription_group_id(d))
            errors.raise_for_error(lib.rd_kafka_ConsumerGroupDescription_error(d), "describe group %r" % group,
                                   destroy=False)
            node = lib.rd_kafka_ConsumerGroupDescription_coordinator(d)
            coordinator = None if node == ffi.NULL else BrokerMetadata(
                lib.rd_kafka_Node_id(node), string(lib.rd_kafka_Node_host(node)), lib.rd_kafka_Node_port(node))
            members = [_member(lib.rd_kafka_ConsumerGroupDescription_member(d, j))
                       for j in range(lib.rd_kafka_ConsumerGroupDescription_member_count(d))]
            out[group] = GroupDescription(
                group, bool(lib.rd_kafka_ConsumerGroupDescription_is_simple_consumer_group(d)),
                _state(lib.rd_kafka_ConsumerGroupDescription_state(d)),
                string(lib.rd_kafka_ConsumerGroupDescription_partition_assignor(d), ""), coordinator, members)
        return out

    names, keep = _cstrings(groups)
    with handle.use() as rk:
        return _request(handle, rk, lib.RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS, timeout_ms, "describe groups",
                        lambda options, queue: lib.rd_kafka_DescribeConsumerGroups(rk, names, len(keep), options,
                                                                                   queue), read)


def delete_groups(handle, groups, timeout_ms=10000):
    """Delete consumer groups (``rd_kafka_DeleteGroups``). Returns ``{group: None or exception}``."""
    def read(event):
        count = ffi.new("size_t *")
        results = lib.rd_kafka_DeleteGroups_result_groups(lib.rd_kafka_event_DeleteGroups_result(event), count)
        out = {}
        for r in (results[i] for i in range(count[0])):
            name = string(lib.rd_kafka_group_result_name(r))
            try:
                errors.raise_for_error(lib.rd_kafka_group_result_error(r), "delete group %r" % name, destroy=False)
                out[name] = None
            except KafkaException as exc:
                out[name] = exc
        return out

    with handle.use() as rk:
        dgs = [lib.rd_kafka_DeleteGroup_new(g.encode()) for g in groups]
        try:
            array = ffi.new("rd_kafka_DeleteGroup_t *[]", dgs)
            return _request(handle, rk, lib.RD_KAFKA_ADMIN_OP_DELETEGROUPS, timeout_ms, "delete groups",
                            lambda options, queue: lib.rd_kafka_DeleteGroups(rk, array, len(dgs), options, queue),
                            read)
        finally:
            for dg in dgs:
                lib.rd_kafka_DeleteGroup_destroy(dg)


def list_group_offsets(handle, group, tps=None, timeout_ms=10000):
    """The offsets ``group`` committed, as ``TopicPartition`` (offset ``OFFSET_INVALID`` where
    none), for ``(topic, partition)`` pairs or, with None, for every partition it committed
    (``rd_kafka_ListConsumerGroupOffsets``)."""
    c_list = ffi.NULL if tps is None else partitions.to_c(tps)
    with handle.use() as rk:
        request = lib.rd_kafka_ListConsumerGroupOffsets_new(group.encode(), c_list)
        try:
            array = ffi.new("rd_kafka_ListConsumerGroupOffsets_t *[]", [request])
            return _request(
                handle, rk, lib.RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS, timeout_ms, "offsets of group %r" % group,
                lambda options, queue: lib.rd_kafka_ListConsumerGroupOffsets(rk, array, 1, options, queue),
                lambda event: _read_group_partitions(
                    lib.rd_kafka_ListConsumerGroupOffsets_result_groups,
                    lib.rd_kafka_event_ListConsumerGroupOffsets_result(event), "offsets of group")).get(group, [])
        finally:
            lib.rd_kafka_ListConsumerGroupOffsets_destroy(request)


def _read_group_partitions(result_groups, result, what):
    count = ffi.new("size_t *")
    return _group_partitions(result_groups(result, count), count[0], what)


def alter_group_offsets(handle, group, tps, timeout_ms=10000):
    """Commit ``(topic, partition, offset)`` for ``group``, which must have no active member
    (``rd_kafka_AlterConsumerGroupOffsets``); a partition's error is raised."""
    c_list = partitions.to_c(tps)
    with handle.use() as rk:
        request = lib.rd_kafka_AlterConsumerGroupOffsets_new(group.encode(), c_list)
        try:
            array = ffi.new("rd_kafka_AlterConsumerGroupOffsets_t *[]", [request])
            result = _request(
                handle, rk, lib.RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS, timeout_ms,
                "alter offsets of group %r" % group,
                lambda options, queue: lib.rd_kafka_AlterConsumerGroupOffsets(rk, array, 1, options, queue),
                lambda event: _read_group_partitions(
                    lib.rd_kafka_AlterConsumerGroupOffsets_result_groups,
                    lib.rd_kafka_event_AlterConsumerGroupOffsets_result(event), "alter offsets of group"))
        finally:
            lib.rd_kafka_AlterConsumerGroupOffsets_destroy(request)
    done = result.get(group, [])
    for tp in done:
        errors.check(tp.error, "alter offset of group %r for %s [%d]" % (group, tp.topic, tp.partition))
    return done


def delete_records(handle, tps, timeout_ms=10000):
    """Delete the records before ``offset`` in each ``(topic, partition, offset)``
    (``rd_kafka_DeleteRecords``); the new low watermarks as ``TopicPartition``, a
    partition's error raised."""
    c_list = partitions.to_c(tps)
    with handle.use() as rk:
        request = lib.rd_kafka_DeleteRecords_new(c_list)
        try:
            array = ffi.new("rd_kafka_DeleteRecords_t *[]", [request])
            done = _request(
                handle, rk, lib.RD_KAFKA_ADMIN_OP_DELETERECORDS, timeout_ms, "delete records",
                lambda options, queue: lib.rd_kafka_DeleteRecords(rk, array, 1, options, queue),
                lambda event: partitions.from_c(lib.rd_kafka_DeleteRecords_result_offsets(
                    lib.rd_kafka_event_DeleteRecords_result(event))))
        finally:
            lib.rd_kafka_DeleteRecords_destroy(request)
    for tp in done:
        errors.check(tp.error, "delete records of %s [%d]" % (tp.topic, tp.partition))
    return done


def create_partitions(handle, totals, timeout_ms=10000):
    """Raise topics to ``(name, total partition count)`` (``rd_kafka_CreatePartitions``).
    Returns ``{name: None or exception}``."""
    with handle.use() as rk:
        new_parts = []
        try:
            for name, total in totals:
                buf = errors.errstr()
                np = lib.rd_kafka_NewPartitions_new(name.encode(), total, buf, errors.ERRSTR_SIZE)
                if np == ffi.NULL:
                    raise ValueError("cannot add partitions to %r: %s" % (name, string(buf)))
                new_parts.append(np)
            array = ffi.new("rd_kafka_NewPartitions_t *[]", new_parts)
            return _request(
                handle, rk, lib.RD_KAFKA_ADMIN_OP_CREATEPARTITIONS, timeout_ms, "create partitions",
                lambda options, queue: lib.rd_kafka_CreatePartitions(rk, array, len(new_parts), options, queue),
                lambda event: _topic_results(lib.rd_kafka_CreatePartitions_result_topics,
                                             lib.rd_kafka_event_CreatePartitions_result(event)))
        finally:
            for np in new_parts:
                lib.rd_kafka_NewPartitions_destroy(np)


def _resources(specs):
    """New ``rd_kafka_ConfigResource_t`` for ``(type, name)`` specs; the caller destroys them."""
    specs = list(specs)
    for restype, _ in specs:
        if restype not in RESOURCE_TYPES:
            raise ValueError("a config resource is a %s, not %r" % (" or a ".join(RESOURCE_TYPES), restype))
    return [lib.rd_kafka_ConfigResource_new(RESOURCE_TYPES[restype], str(name).encode()) for restype, name in specs]


def _entries(resource):
    count = ffi.new("size_t *")
    entries = lib.rd_kafka_ConfigResource_configs(resource, count)
    return [ConfigEntry(string(lib.rd_kafka_ConfigEntry_name(e)), string(lib.rd_kafka_ConfigEntry_value(e)),
                        string(lib.rd_kafka_ConfigSource_name(lib.rd_kafka_ConfigEntry_source(e)), ""),
                        bool(lib.rd_kafka_ConfigEntry_is_default(e)),
                        bool(lib.rd_kafka_ConfigEntry_is_read_only(e)),
                        bool(lib.rd_kafka_ConfigEntry_is_sensitive(e)))
            for e in (entries[i] for i in range(count[0]))]


def _resource_results(resources, count, read):
    """``{(type name, resource name): read(resource)}``; a resource's error is raised."""
    names = {v: k for k, v in RESOURCE_TYPES.items()}
    out = {}
    for r in (resources[i] for i in range(count)):
        name = string(lib.rd_kafka_ConfigResource_name(r))
        err = lib.rd_kafka_ConfigResource_error(r)
        if err:
            raise errors.exception(err, "configs of %s" % name,
                                   reason=string(lib.rd_kafka_ConfigResource_error_string(r)))
        out[(names.get(lib.rd_kafka_ConfigResource_type(r), "unknown"), name)] = read(r)
    return out


def describe_configs(handle, specs, timeout_ms=10000):
    """``{(type, name): [ConfigEntry]}`` for ``("topic" or "broker", name)`` resources
    (``rd_kafka_DescribeConfigs``); a resource's error is raised."""
    with handle.use() as rk:
        made = _resources(specs)
        try:
            array = ffi.new("rd_kafka_ConfigResource_t *[]", made)

            def read(event):
                count = ffi.new("size_t *")
                resources = lib.rd_kafka_DescribeConfigs_result_resources(
                    lib.rd_kafka_event_DescribeConfigs_result(event), count)
                return _resource_results(resources, count[0], _entries)

            return _request(handle, rk, lib.RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout_ms, "describe configs",
                            lambda options, queue: lib.rd_kafka_DescribeConfigs(rk, array, len(made), options,
                                                                                queue), read)
        finally:
            for r in made:
                lib.rd_kafka_ConfigResource_destroy(r)


def incremental_alter_configs(handle, changes, timeout_ms=10000):
    """Apply ``(type, name, [(key, op, value)])`` changes, op one of ``ALTER_OPS``, leaving the
    other settings of each resource as they are (``rd_kafka_IncrementalAlterConfigs``,
    librdkafka 2.2.0 and later); a resource's error is raised."""
    if not lib.pyrdk_incremental_alter_available():
        raise KafkaException("altering configs needs librdkafka 2.2.0 or later at run time (IncrementalAlterConfigs); "
                             "set PYRDK_LIBRDKAFKA to a newer one")
    with handle.use() as rk:
        made = _resources((restype, name) for restype, name, _ in changes)
        try:
            for resource, (_, name, entries) in zip(made, changes):
                for key, op, value in entries:
                    if op not in ALTER_OPS:
                        raise ValueError("a config change is one of %s, not %r" % (", ".join(ALTER_OPS), op))
                    errors.raise_for_error(lib.pyrdk_add_incremental_config(
                        resource, key.encode(), ALTER_OPS[op], ffi.NULL if value is None else str(value).encode()),
                        "config %s of %s" % (key, name))
            array = ffi.new("rd_kafka_ConfigResource_t *[]", made)

            def read(event):
                count = ffi.new("size_t *")
                resources = lib.pyrdk_incremental_alter_result(event, count)
                return _resource_results(resources, count[0], lambda r: None)

            return _request(handle, rk, lib.RD_KAFKA_ADMIN_OP_ANY, timeout_ms, "alter configs",
                            lambda options, queue: lib.pyrdk_incremental_alter_configs(rk, array, len(made), options,
                                                                                       queue), read)
        finally:
            for r in made:
                lib.rd_kafka_ConfigResource_destroy(r)
