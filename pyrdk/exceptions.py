"""pykafka 2.8's exception hierarchy, with a registry from librdkafka error codes.

Every class carries ``code``, ``name``, ``retriable``, ``fatal`` and ``txn_requires_abort``
(librdkafka's flags of the error: a transactional producer must abort the transaction). Kafka protocol
codes (the broker's numbers, ``-1`` and up) map to :class:`ProtocolClientError`
subclasses, librdkafka's local codes (``-200`` .. ``-100``) to the pykafka class of the
same meaning, or to :class:`RdKafkaException`. :func:`for_code` never fails: an unknown
code still gets a class. :class:`CallState` carries an exception raised where its caller
cannot see it (a librdkafka callback, a background thread) back to the caller. Pure Python:
this module imports without the extension.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Optional, Union

if TYPE_CHECKING:
    from pyrdk.common import Message

_BY_CODE: dict[int, type[KafkaException]] = {}


class KafkaException(Exception):
    """Generic exception type. The base of all pyrdk exception types."""
    code: Optional[int] = None
    errno: Optional[int] = None  # aiokafka's name: ``code`` where it is Kafka's (>= -1), else None
    name: Optional[str] = None
    retriable: bool = False
    fatal: bool = False
    txn_requires_abort: bool = False
    produced: int  # produce calls' errors only: the messages the call queued before raising it

    def __init_subclass__(cls, codes: tuple[int, ...] = (), **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for code in codes:
            _BY_CODE[code] = cls
        if codes:
            cls.code = codes[0]
            cls.errno = codes[0] if codes[0] >= -1 else None  # -1: Kafka's UNKNOWN_SERVER_ERROR

    def __init__(self, *args: object, code: Optional[int] = None, name: Optional[str] = None,
                 retriable: Optional[bool] = None, fatal: Optional[bool] = None,
                 txn_requires_abort: Optional[bool] = None) -> None:
        super().__init__(*args)
        if code is not None:
            self.code = code
            self.errno = code if code >= -1 else None
        if name is not None:
            self.name = name
        if retriable is not None:
            self.retriable = retriable
        if fatal is not None:
            self.fatal = fatal
        if txn_requires_abort is not None:
            self.txn_requires_abort = txn_requires_abort


def for_code(code: int) -> type[KafkaException]:
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
    failed: list[tuple[Optional[Message], BaseException]]  # each message and its error, when many failed


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

    def __init__(self, partition: Any, *args: object, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.partition = partition


class UnicodeException(KafkaException):
    """A text value could not be encoded or decoded."""


class UnknownPartitionError(KafkaException, ValueError):
    """A partition the consumer does not hold was named (``commit_offsets``,
    ``reset_offsets``, ``highwater``...): a ``KafkaException``, as pykafka raised there, and a
    ``ValueError``."""


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


class ProduceTimeoutError(ProduceFailureError, KafkaTimeoutError):
    """A sync ``produce()`` got no delivery report within ``pending_timeout_ms``: pykafka
    raised ``ProduceFailureError`` there; it is a ``KafkaTimeoutError`` too."""


class AssignmentLost(RdKafkaException, codes=(-142,)):
    """The group took this member's partitions away (``_ASSIGNMENT_LOST``); it rejoins."""


class MaxPollExceeded(RdKafkaException, codes=(-147,)):
    """The member did not call ``consume()`` within ``max_poll_interval_ms`` and left the
    group (``_MAX_POLL_EXCEEDED``); it rejoins."""


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


class InternalTopicExcluded(UnknownTopicOrPartition, KeyError):
    """``client.topics[name]`` of an internal topic (a name starting with ``__``) while the
    client hides them (``exclude_internal_topics=True``). Also a ``KeyError``, which pykafka
    raised here."""
    __str__ = KafkaException.__str__  # the message as given, not KeyError's repr of it


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


class BrokerNotAvailable(ProtocolClientError, codes=(8,)):
    """The broker is not available."""


class ReplicaNotAvailable(ProtocolClientError, codes=(9,)):
    """A replica the request needs is not available."""


class StaleControllerEpoch(ProtocolClientError, codes=(11,)):
    """The controller moved."""


class RecordListTooLarge(ProtocolClientError, codes=(18,)):
    """A produce request's record batch is over the broker's segment size."""


class NotEnoughReplicas(ProtocolClientError, codes=(19,)):
    """Fewer in-sync replicas than ``min.insync.replicas``: the message was not written."""


class NotEnoughReplicasAfterAppend(ProtocolClientError, codes=(20,)):
    """Written, but fewer in-sync replicas than ``min.insync.replicas`` have it."""


class InvalidRequiredAcks(ProtocolClientError, codes=(21,)):
    """The producer's ``required_acks`` is not one the broker takes."""


class InvalidGroupId(ProtocolClientError, codes=(24,)):
    """The group id is empty or not valid."""


class InvalidCommitOffsetSize(ProtocolClientError, codes=(28,)):
    """The offset commit request was too large."""


class ClusterAuthorizationFailed(ProtocolClientError, codes=(31,)):
    """Not authorized for a cluster operation."""


class InvalidTimestamp(ProtocolClientError, codes=(32,)):
    """A message's timestamp is out of the broker's accepted range."""


class UnsupportedSaslMechanism(ProtocolClientError, codes=(33,)):
    """The broker does not offer the SASL mechanism asked for."""


class IllegalSaslState(ProtocolClientError, codes=(34,)):
    """A SASL request out of turn."""


class InvalidPartitions(ProtocolClientError, codes=(37,)):
    """The number of partitions is not valid."""


class InvalidReplicationFactor(ProtocolClientError, codes=(38,)):
    """The replication factor is not valid."""


class InvalidReplicaAssignment(ProtocolClientError, codes=(39,)):
    """The replica assignment is not valid."""


class InvalidConfig(ProtocolClientError, codes=(40,)):
    """A configuration given to the broker is not valid."""


class NotController(ProtocolClientError, codes=(41,)):
    """The request went to a broker that is not the controller."""


class InvalidRequest(ProtocolClientError, codes=(42,)):
    """The broker found the request malformed."""


class UnsupportedForMessageFormat(ProtocolClientError, codes=(43,)):
    """The topic's message format does not support the request."""


class PolicyViolation(ProtocolClientError, codes=(44,)):
    """The request breaks a broker policy."""


class NonEmptyGroupError(ProtocolClientError, codes=(68,)):
    """The group has active members (kafka-python's name): stop them first."""


class GroupIdNotFoundError(ProtocolClientError, codes=(69,)):
    """No group of that id exists (kafka-python's name)."""


# Kafka's names (aiokafka's too) for the broker errors pykafka had no class for.

class OutOfOrderSequenceNumber(ProtocolClientError, codes=(45,)):
    """The broker got an idempotent producer's batch out of sequence (``OUT_OF_ORDER_SEQUENCE_NUMBER``)."""


class DuplicateSequenceNumber(ProtocolClientError, codes=(46,)):
    """The broker already has a batch of that sequence number (``DUPLICATE_SEQUENCE_NUMBER``)."""


class SecurityDisabled(ProtocolClientError, codes=(54,)):
    """The broker's security features are disabled (``SECURITY_DISABLED``)."""


class OperationNotAttempted(ProtocolClientError, codes=(55,)):
    """The broker did not attempt the operation (``OPERATION_NOT_ATTEMPTED``)."""


class KafkaStorageError(ProtocolClientError, codes=(56,)):
    """The broker failed to read or write its log on disk (``KAFKA_STORAGE_ERROR``)."""
    retriable = True


class LogDirNotFound(ProtocolClientError, codes=(57,)):
    """The log directory is not in the broker's config (``LOG_DIR_NOT_FOUND``)."""


class UnknownProducerId(ProtocolClientError, codes=(59,)):
    """The broker has no state for the producer id (``UNKNOWN_PRODUCER_ID``)."""


class ReassignmentInProgress(ProtocolClientError, codes=(60,)):
    """A partition reassignment is in progress (``REASSIGNMENT_IN_PROGRESS``)."""


class DelegationTokenAuthDisabled(ProtocolClientError, codes=(61,)):
    """Delegation tokens are not enabled (``DELEGATION_TOKEN_AUTH_DISABLED``)."""


class DelegationTokenNotFound(ProtocolClientError, codes=(62,)):
    """No such delegation token (``DELEGATION_TOKEN_NOT_FOUND``)."""


class DelegationTokenOwnerMismatch(ProtocolClientError, codes=(63,)):
    """The principal is not the token's owner or renewer (``DELEGATION_TOKEN_OWNER_MISMATCH``)."""


class DelegationTokenRequestNotAllowed(ProtocolClientError, codes=(64,)):
    """Delegation token requests are not allowed on this connection
    (``DELEGATION_TOKEN_REQUEST_NOT_ALLOWED``)."""


class DelegationTokenAuthorizationFailed(ProtocolClientError, codes=(65,)):
    """Not authorized for the delegation token (``DELEGATION_TOKEN_AUTHORIZATION_FAILED``)."""


class DelegationTokenExpired(ProtocolClientError, codes=(66,)):
    """The delegation token has expired (``DELEGATION_TOKEN_EXPIRED``)."""


class InvalidPrincipalType(ProtocolClientError, codes=(67,)):
    """The principal type is not supported (``INVALID_PRINCIPAL_TYPE``)."""


class FetchSessionIdNotFound(ProtocolClientError, codes=(70,)):
    """The broker does not know the fetch session (``FETCH_SESSION_ID_NOT_FOUND``)."""


class InvalidFetchSessionEpoch(ProtocolClientError, codes=(71,)):
    """The fetch session epoch is invalid (``INVALID_FETCH_SESSION_EPOCH``)."""


class ListenerNotFound(ProtocolClientError, codes=(72,)):
    """The broker has no listener matching the request's (``LISTENER_NOT_FOUND``)."""


class MemberIdRequired(ProtocolClientError, codes=(79,)):
    """The group member must join again with the member id the broker gave
    (``MEMBER_ID_REQUIRED``)."""


# -- transactions ------------------------------------------------------------------------------

class TransactionError(KafkaException):
    """A transactional producer's call failed. Its flags say what to do: ``retriable``
    (call it again), ``txn_requires_abort`` (abort the transaction, then begin a new one),
    ``fatal`` (the producer can do nothing more: stop it)."""


class TransactionStateError(TransactionError, codes=(-172,)):
    """The call is not valid in the producer's transactional state (``_STATE``): for
    instance ``produce()`` outside a transaction, or ``begin_transaction()`` twice."""


class ProducerFenced(ProtocolClientError, TransactionError, codes=(90, -144)):
    """Another producer with the same ``transactional_id`` started (``_FENCED``,
    ``PRODUCER_FENCED``): this one is a zombie and can do nothing more (fatal)."""
    fatal = True


class InvalidProducerEpoch(ProtocolClientError, TransactionError, codes=(47,)):
    """The producer's epoch is older than the coordinator's (``INVALID_PRODUCER_EPOCH``)."""


class InvalidTxnState(ProtocolClientError, TransactionError, codes=(48,)):
    """The coordinator refused a request in the transaction's state (``INVALID_TXN_STATE``)."""


class ConcurrentTransactions(ProtocolClientError, TransactionError, codes=(51,)):
    """The coordinator is still completing the previous transaction of this
    ``transactional_id`` (``CONCURRENT_TRANSACTIONS``)."""
    retriable = True


class TransactionCoordinatorFenced(ProtocolClientError, TransactionError, codes=(52,)):
    """A newer transaction coordinator took over (``TRANSACTION_COORDINATOR_FENCED``)."""


class TransactionalIdAuthorizationFailed(ProtocolClientError, TransactionError, codes=(53,)):
    """Not authorized to use the ``transactional_id`` (``TRANSACTIONAL_ID_AUTHORIZATION_FAILED``)."""


class InvalidProducerIdMapping(ProtocolClientError, TransactionError, codes=(49,)):
    """The producer id is not the one of its ``transactional_id`` (``INVALID_PRODUCER_ID_MAPPING``)."""


class InvalidTransactionTimeout(ProtocolClientError, TransactionError, codes=(50,)):
    """The transaction timeout is over the broker's ``max.transaction.timeout.ms``
    (``INVALID_TRANSACTION_TIMEOUT``)."""


ERROR_CODES = {code: cls for code, cls in _BY_CODE.items() if code >= -1}


# -- the way back for exceptions raised out of the caller's sight -----------------------------

class CallState:
    """Exceptions raised where the caller cannot see them -- in a librdkafka callback, on a
    background thread, in a message held back -- kept until the caller's next call raises
    them (what confluent-kafka's ``CallState_crash`` / ``CallState_end`` do in C).

    ``crash(exc, item)`` keeps an exception (``item``: what it concerns, for instance the
    message whose delivery failed); ``check()`` raises the oldest one kept, or, with
    ``combine``, ``combine([(item, exc), ...])`` for all of them at once. Safe to use from any
    thread; nothing kept is dropped.
    """
    __slots__ = ("_pending", "_lock", "_kept")

    def __init__(self) -> None:
        self._pending: list[tuple[Any, BaseException, int]] = []  # (item, exc, its number)
        self._lock = threading.Lock()
        self._kept = 0  # how many were ever kept: the next one's number

    def crash(self, exc: BaseException, item: Any = None) -> None:
        """Keep ``exc`` (about ``item``) for the caller's next :meth:`check`."""
        with self._lock:
            self._pending.append((item, exc, self._kept))
            self._kept += 1

    def mark(self) -> int:
        """A mark for ``check(before=...)``: what is kept after it waits for a later check."""
        return self._kept

    def __bool__(self) -> bool:
        return bool(self._pending)

    def __len__(self) -> int:
        return len(self._pending)

    def check(self, combine: Optional[Callable[[list[tuple[Any, BaseException]]], BaseException]] = None,
              before: Optional[int] = None) -> None:
        """Raise what was kept: the oldest exception (the others wait for the next call), or
        ``combine(pairs)`` for all the ``(item, exception)`` pairs kept. ``before``: a
        :meth:`mark`; only what was kept before it is raised."""
        if not self._pending:
            return
        with self._lock:
            ready = [kept for kept in self._pending if before is None or kept[2] < before]
            if not ready:
                return
            if combine is None:
                ready = ready[:1]
            raised = {number for _, _, number in ready}
            self._pending = [kept for kept in self._pending if kept[2] not in raised]
            exc = ready[0][1] if combine is None else combine([(item, exc) for item, exc, _ in ready])
        raise exc

    def pop(self, cls: Union[type[BaseException], tuple[type[BaseException], ...]]) -> Optional[BaseException]:
        """The oldest kept exception of class ``cls``, no longer kept; None if there is none."""
        with self._lock:
            for i, (_, exc, _) in enumerate(self._pending):
                if isinstance(exc, cls):
                    del self._pending[i]
                    return exc
        return None

    def holds(self, cls: Union[type[BaseException], tuple[type[BaseException], ...]]) -> bool:
        """Whether an exception of class ``cls`` is kept."""
        return any(isinstance(exc, cls) for _, exc, _ in self._pending)

    def discard(self, cls: Union[type[BaseException], tuple[type[BaseException], ...]]) -> None:
        """Forget the kept exceptions of class ``cls``: what they said no longer holds."""
        with self._lock:
            self._pending = [kept for kept in self._pending if not isinstance(kept[1], cls)]

    def discard_about(self, item: Any) -> None:
        """Forget the kept exceptions about ``item``: what they said no longer holds."""
        if self._pending:
            with self._lock:
                self._pending = [kept for kept in self._pending if kept[0] is not item]

    def take(self) -> list[tuple[Any, BaseException]]:
        """Every ``(item, exception)`` pair kept, no longer kept."""
        with self._lock:
            pending, self._pending = self._pending, []
        return [(item, exc) for item, exc, _ in pending]


# Hints added to errors; the command line rewords them for its options (pyrdk/cli/common.py).

# librdkafka logs a connection that fails after it was made (a TLS listener resetting a
# plaintext client, a broker closing it) at LOG_INFO, with no error event.
PLAINTEXT_TO_TLS_HINT = ("; a TLS listener does this to a plaintext client: if the listener "
                          "speaks TLS, set security_protocol SSL or SASL_SSL (with ssl_config, "
                          "or ssl_context in pyrdk.aio)")
# A SASL listener answers ApiVersions, then closes the connection at the first other request
# of a client that did not authenticate: within a second of it coming UP.
NO_SASL_HINT = ("; a SASL listener does this to a client that does not authenticate: if the "
                 "listener wants SASL, set security_protocol SASL_PLAINTEXT or SASL_SSL with "
                 "sasl_mechanism, sasl_plain_username and sasl_plain_password")
# librdkafka reads the first four bytes of an answer as its size: an HTTP server's "HTTP/1.1
# 400 ..." is 1213486160 ("HTTP"), reported as "Invalid response size ...: increase
# receive.message.max.bytes", which would not help.
NOT_KAFKA_HTTP_HINT = ("; that size is the bytes \"HTTP\": a web server or proxy answered there, not a "
                       "Kafka listener: check the host and port")
# A TLS client whose connections never got a broker certificate, and heard of no failure:
# the listener waits for a plaintext request (a Kafka broker would close the connection).
NO_TLS_ANSWER_HINT = ("no broker answered the TLS handshake: if the listener is plaintext, set "
                      "security_protocol PLAINTEXT or SASL_PLAINTEXT (without ssl_config, or ssl_context "
                      "in pyrdk.aio)")
# OAUTHBEARER chosen with nothing to make a token.
NO_OAUTH_TOKEN = ("sasl.mechanism OAUTHBEARER has no token to send: pass oauth_cb (a callable returning "
                  "(token, expiry); in pyrdk.aio, sasl_oauth_token_provider), or set "
                  "sasl.oauthbearer.method=oidc with its client id, secret and token endpoint, or "
                  "enable.sasl.oauthbearer.unsecure.jwt=true (unsigned tokens, for tests)")
