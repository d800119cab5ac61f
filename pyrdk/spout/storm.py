"""StormKafkaSpout: :class:`pyrdk.spout.KafkaSpout` as a ``pystorm.Spout``, for Apache Storm's
multi-lang protocol (``pip install 'pyrdk[storm]'``).

Storm runs the spout as a ShellSpout: it sends ``next``, ``ack`` and ``fail`` as JSON on the
process's stdin and reads ``emit`` and ``sync`` on its stdout (pystorm does the protocol).
``next_tuple`` emits one tuple (never waiting), reliably: its id is the message's ``[topic,
partition, offset]``, which Storm hands back to ``ack`` or ``fail``. A streamparse project
uses it as its spout::

    from pyrdk.spout.storm import StormKafkaSpout

    class EventSpout(StormKafkaSpout):
        outputs = ["key", "value"]
        hosts = "broker1:9092"
        topic = "events"
        consumer = "managed"
        spout_options = {"max_spout_pending": 1000, "dead_letter_topic": "events-dead"}

Each setting is a class attribute; the topology configuration may override it under
``pyrdk.<name>`` (``pyrdk.hosts``, ``pyrdk.topic``, ``pyrdk.consumer_group``...). The
consumer group defaults to the component's name.
"""
from __future__ import annotations

from typing import Any

try:
    import pystorm
except ImportError as exc:
    raise ImportError("pyrdk.spout.storm needs pystorm: pip install 'pyrdk[storm]' (%s)" % exc) from exc

from pyrdk.client import KafkaClient
from pyrdk.exceptions import NoBrokersAvailableError
from pyrdk.spout.spout import KafkaSpout

SETTINGS = ("hosts", "topic", "consumer_group", "consumer", "spout_options", "consumer_options",
            "client_options")


class StormKafkaSpout(pystorm.Spout):
    """A pystorm (and so streamparse) spout reading a Kafka topic at least once.

    :cvar hosts: bootstrap servers
    :cvar topic: the topic to read (str)
    :cvar consumer_group: the group offsets are committed under (default: the component name)
    :cvar consumer: ``"managed"``, ``"zookeeper"`` or ``"simple"`` (see :class:`KafkaSpout`)
    :cvar spout_options: :class:`KafkaSpout` arguments (``max_spout_pending``,
        ``max_retries``...); ``dead_letter_topic`` and ``output_topic`` are topic names here
    :cvar consumer_options: the consumer's arguments (``zookeeper_hosts``...)
    :cvar client_options: :class:`pyrdk.KafkaClient` arguments
    :cvar outputs: the tuple's fields, as streamparse declares them: by default ``key``
        and ``value``, the message's decoded as UTF-8 (override :meth:`tuple_values`)

    With ``output_topic`` and ``transactional_id`` in ``spout_options`` the spout writes, for
    each acked tuple, what :meth:`tuple_outputs` returns, exactly once, in the transaction
    that commits its offset (Storm's acks carry no data, so the outputs come from the message).
    """
    outputs = ["key", "value"]
    hosts = "127.0.0.1:9092"
    topic = None
    consumer_group = None
    consumer = "managed"
    spout_options: dict[str, Any] = {}
    consumer_options: dict[str, Any] = {}
    client_options: dict[str, Any] = {}

    def initialize(self, storm_conf, context):
        """Connect and start the :class:`KafkaSpout` (after Storm's handshake)."""
        settings = {name: storm_conf.get("pyrdk." + name, getattr(self, name)) for name in SETTINGS}
        if not settings["topic"]:
            raise ValueError("%s: set topic (a class attribute, or pyrdk.topic in the topology config)"
                             % type(self).__name__)
        self.client = KafkaClient(hosts=settings["hosts"], **settings["client_options"])
        options = dict(settings["spout_options"])
        for name in ("dead_letter_topic", "output_topic"):
            if isinstance(options.get(name), (str, bytes)):
                options[name] = self.client.topics[options[name]]
        if "output_topic" in options and "outputs" not in options:
            options["outputs"] = self.tuple_outputs
        if options.get("transactional_id") and context.get("taskid") is not None:
            # One transactional id per spout task: tasks of one component sharing it would
            # fence each other. A task keeps its id across restarts, and fences its old self.
            options["transactional_id"] = "%s-%s" % (options["transactional_id"], context["taskid"])
        group = settings["consumer_group"] or self.component_name or type(self).__name__
        self.kafka = KafkaSpout(self.client.topics[settings["topic"]], group, consumer=settings["consumer"],
                                **dict(options, **settings["consumer_options"]))

    def tuple_values(self, message):
        """The tuple emitted for a message (a list matching ``outputs``)."""
        key = message.partition_key
        return [key.decode("utf-8") if key is not None else None,
                message.value.decode("utf-8") if message.value is not None else None]

    def tuple_outputs(self, message):
        """What an exactly-once spout writes to ``output_topic`` for an acked tuple: by
        default the message itself (value and key)."""
        return [(message.value, message.partition_key)]

    _outage = False  # the brokers are out of reach: said once, until next_tuple() works again

    def next_tuple(self):
        """Emit the next tuple, if there is one (never waits). A message :meth:`tuple_values`
        cannot make a tuple of (say, a value that is not UTF-8) fails as a tuple would: it
        is tried again, then goes to the dead-letter topic or is reported and skipped. While
        no broker is reachable (``NoBrokersAvailableError``) it emits nothing, as Storm's own
        Kafka spout retries its polls: raised, it would end the task (pystorm exits), and
        every task of the fleet with it."""
        try:
            emitted = self.kafka.next_tuple()
        except NoBrokersAvailableError as exc:
            if not self._outage:
                self._outage = True
                self.logger.warning("%s; emitting nothing until a broker answers", exc)
            return
        if self._outage:
            self._outage = False
            self.logger.info("a broker answers again")
        if emitted is None:
            return
        try:
            values = self.tuple_values(emitted.message)
        except Exception:
            self.logger.exception("no tuple made of %s [%d] offset %d: failed", emitted.message.topic,
                                  emitted.message.partition_id, emitted.message.offset)
            self.kafka.fail(emitted.id)
            return
        self.emit(values, tup_id=list(emitted.id))

    def ack(self, tup_id):
        if self._known_shape(tup_id, "ack") and not self.kafka.ack(tup_id):
            self._unknown(tup_id, "ack")

    def fail(self, tup_id):
        if self._known_shape(tup_id, "fail") and not self.kafka.fail(tup_id):
            self._unknown(tup_id, "fail")

    def _unknown(self, tup_id, command):
        """An id shaped as this spout's that it does not track, logged as pystorm's
        ReliableSpout logs an unknown id; the task goes on."""
        self.logger.warning("Received %s for an unknown tuple ID %r: never emitted by this spout, answered "
                            "already, or of a partition revoked since; ignored", command, tup_id)

    def _known_shape(self, tup_id, command):
        """Whether ``tup_id`` is shaped as this spout's ids are (``[topic, partition,
        offset]``). One that is not is logged, as pystorm's own spouts log an unknown id:
        the task goes on, keeping what it has acked."""
        try:
            self.kafka._locate(tup_id)
        except TypeError as exc:
            self.logger.error("Received %s for a tuple ID this spout did not emit: %s", command, exc)
            return False
        return True

    def deactivate(self):
        """Storm deactivated the topology: commit what is acked."""
        self.kafka.commit()
