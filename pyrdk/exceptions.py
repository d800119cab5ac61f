"""pykafka 2.8's exception hierarchy, with a registry from librdkafka error codes.

Every class carries ``code``, ``name``, ``retriable`` and ``fatal``. Kafka protocol
codes (the broker's numbers, ``-1`` and up) map to :class:`ProtocolClientError`
subclasses, librdkafka's local codes (``-200`` .. ``-100``) to the pykafka class of the
same meaning, or to :class:`RdKafkaException`. :func:`for_code` never fails: an unknown
code still gets a class. Pure Python: this module imports without the extension.
"""

_BY_CODE = {}


class KafkaException(Exception):
    """Generic exception type. The base of all pyrdk exception types."""
    code = None
    name = None
    retriable = False
    fatal = False

    def __init_subclass__(cls, codes=(), **kwargs):
        super().__init_subclass__(**kwargs)
        for code in codes:
            _BY_CODE[code] = cls
        if codes:
            cls.code = codes[0]

    def __init__(self, *args, code=None, name=None, retriable=None, fatal=None):
        super().__init__(*args)
        if code is not None:
            self.code = code
        if name is not None:
            self.name = name
        if retriable is not None:
            self.retriable = retriable
        if fatal is not None:
            self.fatal = fatal


def for_code(code):
    """The exception class for a librdkafka / Kafka error code (never raises)."""
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls
    return RdKafkaException if code < -1 else UnknownError


# -- pykafka's client-side exceptions ---------------------------------------------------------

class NoBrokersAvailableError(KafkaException, codes=(-187,)):
    """No broker could be reached (librdkafka ``_ALL_BROKERS_DOWN``)."""


class SocketDisconnectedError(KafkaException, codes=(-195,)):
    """The connection to a broker failed or was lost (librdkafka ``_TRANSPORT``)."""
    retriable = True


class SslError(KafkaException, codes=(-181,)):
    """TLS failed (librdkafka ``_SSL``): the handshake, or the broker's certificate was refused.

    ``reason`` names why when OpenSSL said so (``"certificate has expired"``, ``"hostname
    mismatch"``, ``"unable to get local issuer certificate"``...), else None. Raised by the
    first call after the failure, not retried for ever: a wrong CA, name or date does not
    mend itself.
    """
    reason = None


class AuthenticationError(KafkaException, codes=(-169,)):
    """The broker refused this client's credentials, or none could be had (librdkafka
    ``_AUTHENTICATION``: SASL, or an ``oauth_cb`` that failed). Raised by the first call
    after the failure, not retried for ever."""


class LeaderNotFoundError(KafkaException):
    """A partition's leader could not be found in the cluster metadata."""


class ProduceFailureError(KafkaException):
    """A message could not be delivered."""


class ConsumerStoppedException(KafkaException):
    """The consumer was used after ``stop()``."""


class NoMessagesConsumedError(KafkaException):
    """No messages were returned from a fetch."""


class MessageSetDecodeFailure(KafkaException, codes=(-199,)):
    """A fetched message could not be decoded (librdkafka ``_BAD_MSG``)."""


class ProducerQueueFullError(KafkaException, codes=(-184,)):
    """The producer's queue holds ``max_queued_messages`` (librdkafka ``_QUEUE_FULL``)."""
    retriable = True


class ProducerStoppedException(KafkaException):
    """The producer was used after ``stop()``."""


class OffsetRequestFailedError(KafkaException):
    """An offset request (reset, list offsets) failed."""


class PartitionOwnedError(KafkaException):
    """A partition is still owned by another consumer in ZooKeeper."""

    def __init__(self, partition, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.partition = partition


class UnicodeException(KafkaException):
    """A text value could not be encoded or decoded."""


class ConfigurationError(KafkaException, ValueError):
    """A configuration key or value was refused (librdkafka ``rd_kafka_conf_set``)."""


class NotSupportedError(KafkaException):
    """The running librdkafka or the broker does not support the operation."""


class InternalError(KafkaException):
    """An invariant of pyrdk itself was broken: please report it."""


# -- librdkafka-local errors without a pykafka equivalent --------------------------------------

class RdKafkaException(KafkaException):
    """A librdkafka error with no pykafka equivalent (``code`` tells which)."""


class RdKafkaStoppedException(RdKafkaException, codes=(-197,)):
    """The librdkafka handle was destroyed (``_DESTROY``)."""


class KafkaTimeoutError(RdKafkaException, codes=(-185, -192)):
    """A local timeout (``_TIMED_OUT``, ``_MSG_TIMED_OUT``)."""
    retriable = True


# -- Kafka protocol errors (pykafka's ERROR_CODE classes) -------------------------------------

class ProtocolClientError(KafkaException):
    """Base class for errors the broker returns."""
    ERROR_CODE = None

    def __init_subclass__(cls, codes=(), **kwargs):
        super().__init_subclass__(codes=codes, **kwargs)
        if codes:
            cls.ERROR_CODE = codes[0]


class UnknownError(ProtocolClientError, codes=(-1,)):
    """An unexpected server error."""


class OffsetOutOfRangeError(ProtocolClientError, codes=(1, -140)):
    """The requested offset is outside the partition's range."""


class InvalidMessageError(ProtocolClientError, codes=(2,)):
    """A message's contents do not match its CRC."""
    retriable = True


class UnknownTopicOrPartition(ProtocolClientError, codes=(3, -188, -190)):
    """The topic or partition does not exist."""


class InvalidMessageSize(ProtocolClientError, codes=(4,)):
    """The message has a negative size."""


class LeaderNotAvailable(ProtocolClientError, codes=(5,)):
    """A leader election is in progress for the partition."""
    retriable = True


class NotLeaderForPartition(ProtocolClientError, codes=(6,)):
    """The broker is not the partition's leader; metadata is out of date."""
    retriable = True


class RequestTimedOut(ProtocolClientError, codes=(7,)):
    """The request exceeded its time limit on the broker."""
    retriable = True


class MessageSizeTooLarge(ProtocolClientError, codes=(10,)):
    """The message is larger than the producer's or the broker's maximum."""


class OffsetMetadataTooLarge(ProtocolClientError, codes=(12,)):
    """The offset metadata string is larger than the broker's maximum."""


class GroupLoadInProgress(ProtocolClientError, codes=(14,)):
    """The group coordinator is still loading the group."""
    retriable = True


class GroupCoordinatorNotAvailable(ProtocolClientError, codes=(15,)):
    """The group coordinator is not available."""
    retriable = True


class NotCoordinatorForGroup(ProtocolClientError, codes=(16,)):
    """The broker is not the coordinator of this group."""
    retriable = True


class InvalidTopic(ProtocolClientError, codes=(17,)):
    """The topic name is invalid, or an internal topic was written to."""


class IllegalGeneration(ProtocolClientError, codes=(22,)):
    """The group generation id is not the current one."""


class InconsistentGroupProtocol(ProtocolClientError, codes=(23,)):
    """The member's protocols are incompatible with the group's."""


class UnknownMemberId(ProtocolClientError, codes=(25,)):
    """The member id is not in the current generation."""


class InvalidSessionTimeout(ProtocolClientError, codes=(26,)):
    """The session timeout is outside the broker's allowed range."""


class RebalanceInProgress(ProtocolClientError, codes=(27,)):
    """The group is rebalancing; the member should rejoin."""


class TopicAuthorizationFailed(ProtocolClientError, codes=(29,)):
    """Not authorized to access the topic."""


class GroupAuthorizationFailed(ProtocolClientError, codes=(30,)):
    """Not authorized to access the group."""


class SaslAuthenticationFailed(ProtocolClientError, AuthenticationError, codes=(58,)):
    """The broker refused the SASL credentials (``SASL_AUTHENTICATION_FAILED``)."""


class TopicAlreadyExists(ProtocolClientError, codes=(36,)):
    """A topic of that name exists already."""


ERROR_CODES = {code: cls for code, cls in _BY_CODE.items() if code >= -1}
